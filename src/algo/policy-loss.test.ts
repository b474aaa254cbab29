import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.js';
import { aggNorm, LOSS_AGG_MODES } from './aggregate.js';
import { actorLoss, entropyBonus, ppoPolicyLoss } from './policy-loss.js';
import { maxGradError, randMask, randn } from './testing.js';

// The clip settings the hand-worked examples use (RAGEN's values; the defaults live in the config schema).
const CLIP = { clipRatioLow: 0.2, clipRatioHigh: 0.28, clipRatioC: 3 };

describe('ppoPolicyLoss on hand-worked tokens', () => {
  // ε_low 0.2, ε_high 0.28, c 3, token-mean over 4 tokens:
  // 1. A = +1, Δ = 0.5: r = 1.648721 > 1.28 -> clipped high: L = −1.28, grad 0.
  // 2. A = +1, Δ = 0.1: r = 1.105171 inside -> L = −1.105171, dL/dlogπ = −A·r = −1.105171.
  // 3. A = −1, Δ = −0.5: r = 0.606531 < 0.8 -> L1 = 0.606531 < L2 = 0.8 -> clipped low: L = 0.8, grad 0.
  // 4. A = −1, Δ = 1.5: r = 4.481689; Lc = max(4.481689, 1.28) = 4.481689 > −A·c = 3 -> dual clip: L = 3, grad 0.
  // Loss = (−1.28 − 1.105171 + 0.8 + 3)/4 = 0.353707; grad = [0, −1.105171/4, 0, 0].
  const oldLogprobs = [-1, -1, -1, -1];
  const deltas = [0.5, 0.1, -0.5, 1.5];
  const logprobs = deltas.map((d, i) => oldLogprobs[i]! + d);
  const advantages = [1, 1, -1, -1];
  const r = ppoPolicyLoss({
    logprobs,
    oldLogprobs,
    advantages,
    mask: [1, 1, 1, 1],
    B: 1,
    T: 4,
    lossAgg: 'token-mean',
    ...CLIP,
  });

  it('takes the pessimistic clipped loss and the dual clip', () => {
    expect(r.loss).toBeCloseTo((-1.28 - Math.exp(0.1) + 0.8 + 3) / 4, 12);
  });
  it('passes gradient only through unclipped tokens', () => {
    [0, -Math.exp(0.1) / 4, 0, 0].forEach((g, i) => expect(r.grad.logprobs[i]).toBeCloseTo(g, 12));
  });
  it('counts clip fractions high / low / dual and the k1 KL', () => {
    expect(r.stats.clipfracHigh).toBe(0.25);
    expect(r.stats.clipfracLow).toBe(0.25);
    expect(r.stats.clipfrac).toBe(0.5);
    expect(r.stats.clipfracDual).toBe(0.25);
    expect(r.stats.ppoKl).toBeCloseTo(-(0.5 + 0.1 - 0.5 + 1.5) / 4, 12);
    // k3 = (r − 1) − log r, mean over tokens.
    const k3 = deltas.reduce((a, d) => a + Math.exp(d) - 1 - d, 0) / 4;
    expect(r.stats.approxKl).toBeCloseTo(k3, 12);
  });
  it('without dual clip (c = ∞) the 4th token keeps L = −A·r', () => {
    const nd = ppoPolicyLoss({
      logprobs,
      oldLogprobs,
      advantages,
      mask: [1, 1, 1, 1],
      B: 1,
      T: 4,
      lossAgg: 'token-mean',
      ...CLIP,
      clipRatioC: Infinity,
    });
    expect(nd.loss).toBeCloseTo((-1.28 - Math.exp(0.1) + 0.8 + Math.exp(1.5)) / 4, 12);
    expect(nd.grad.logprobs[3]).toBeCloseTo(Math.exp(1.5) / 4, 12);
    expect(nd.stats.clipfracDual).toBe(0);
  });
  it('clamps the log-ratio: beyond the clamp the gradient is 0', () => {
    const c = ppoPolicyLoss({
      logprobs: [5],
      oldLogprobs: [0],
      advantages: [-0.1],
      mask: [1],
      B: 1,
      T: 1,
      lossAgg: 'token-mean',
      ...CLIP,
      logRatioClamp: 2,
      clipRatioC: Infinity,
    });
    expect(c.loss).toBeCloseTo(0.1 * Math.exp(2), 12);
    expect(c.grad.logprobs[0]).toBe(0);
  });
  it('takes ppo_kl and the k3 statistic from the clamped log-ratio, as veRL', () => {
    // Δ = 30 clamps to 20: ppo_kl = −20 (not −30); k3 = e^20 − 1 − 20.
    const c = ppoPolicyLoss({
      logprobs: [30],
      oldLogprobs: [0],
      advantages: [1],
      mask: [1],
      B: 1,
      T: 1,
      lossAgg: 'token-mean',
      ...CLIP,
    });
    expect(c.stats.ppoKl).toBe(-20);
    expect(c.stats.approxKl).toBeCloseTo(Math.exp(20) - 21, 0);
  });
});

describe('entropyBonus and actorLoss on hand-worked tokens', () => {
  it('entropy bonus is −coef · agg(H): H = [1, 3, (5 masked)], coef 0.01', () => {
    // token-mean: −0.01·(1 + 3)/2 = −0.02, dL/dH = −0.01/2 on each loss token; seq-mean-token-sum: −0.01·4.
    const e = entropyBonus({
      entropy: [1, 3, 5],
      mask: [1, 1, 0],
      B: 1,
      T: 3,
      coef: 0.01,
      lossAgg: 'token-mean',
      ...CLIP,
    });
    expect(e.loss).toBeCloseTo(-0.02, 14);
    expect(Array.from(e.grad.entropy)).toEqual([-0.005, -0.005, 0]);
    expect(e.stats.entropy).toBe(2);
    expect(
      entropyBonus({ entropy: [1, 3, 5], mask: [1, 1, 0], B: 1, T: 3, coef: 0.01, lossAgg: 'seq-mean-token-sum' }).loss,
    ).toBeCloseTo(-0.04, 14);
  });
  it('actor loss = PPO − c_H·H + c_KL·k1 on one unclipped token', () => {
    // Δ_old = 0.1, A = 1: pg = −e^0.1, dpg/dlogπ = −e^0.1. H = 2, c_H = 0.01: −0.02, dL/dH = −0.01.
    // logπ − logπ_ref = 0.3, c_KL = 0.1, k1: +0.03, dKL/dlogπ = 0.1.
    const r = actorLoss(
      {
        logprobs: [-0.9],
        oldLogprobs: [-1],
        advantages: [1],
        mask: [1],
        B: 1,
        T: 1,
        entropy: [2],
        refLogprobs: [-1.2],
      },
      { lossAgg: 'token-mean', ...CLIP, entropyCoeff: 0.01, klCoef: 0.1, klEstimator: 'k1' },
    );
    expect(r.loss).toBeCloseTo(-Math.exp(0.1) - 0.02 + 0.03, 12);
    expect(r.grad.logprobs[0]).toBeCloseTo(-Math.exp(0.1) + 0.1, 12);
    expect(r.grad.entropy![0]).toBeCloseTo(-0.01, 14);
    expect(r.stats.kl).toBeCloseTo(0.3, 12);
  });
});

/** Random PPO inputs whose ratios stay away from the kinks (1 − ε_low, 1 + ε_high, c), so FD is valid. */
function ppoInputs(seed: number, B: number, T: number) {
  const rng = new Rng(seed);
  const old = randn(rng, B * T, 1);
  const lp = new Float64Array(B * T);
  for (let i = 0; i < B * T; i++) {
    let d: number;
    do d = rng.normal() * 0.6;
    while ([0.8, 1.28, 3].some((k) => Math.abs(Math.exp(d) - k) < 1e-3));
    lp[i] = old[i]! + d;
  }
  const adv = randn(rng, B * T);
  const mask = randMask(rng, B * T);
  // Plant one token of each clipped kind: dual (A < 0, r = e^1.5 > c), high (A > 0, r = e^0.6), low (A < 0, r =
  // e^−0.6).
  [
    [-1, 1.5],
    [1, 0.6],
    [-1, -0.6],
  ].forEach(([a, d], i) => {
    adv[i] = a!;
    lp[i] = old[i]! + d!;
    mask[i] = 1;
  });
  return { old, lp, adv, mask, ent: randn(rng, B * T).map(Math.abs), ref: randn(rng, B * T) };
}

describe('closed-form gradients match central differences', () => {
  const B = 4;
  const T = 6;
  const { old, lp, adv, mask, ent, ref } = ppoInputs(21, B, T);
  for (const lossAgg of LOSS_AGG_MODES) {
    it(`ppoPolicyLoss, ${lossAgg}`, () => {
      const f = (x: Float64Array): number =>
        ppoPolicyLoss({ logprobs: x, oldLogprobs: old, advantages: adv, mask, B, T, lossAgg, ...CLIP }).loss;
      const g = ppoPolicyLoss({ logprobs: lp, oldLogprobs: old, advantages: adv, mask, B, T, lossAgg, ...CLIP }).grad
        .logprobs;
      expect(maxGradError(f, lp, g)).toBeLessThan(1e-7);
    });
  }
  it('the inputs exercise every branch (so the check covers clipped and dual-clipped tokens)', () => {
    const s = ppoPolicyLoss({
      logprobs: lp,
      oldLogprobs: old,
      advantages: adv,
      mask,
      B,
      T,
      lossAgg: 'token-mean',
      ...CLIP,
    }).stats;
    expect(s.clipfracHigh).toBeGreaterThan(0);
    expect(s.clipfracLow).toBeGreaterThan(0);
    expect(s.clipfracDual).toBeGreaterThan(0);
    expect(s.clipfrac).toBeLessThan(1);
  });
  it('entropyBonus w.r.t. entropies', () => {
    const f = (x: Float64Array): number =>
      entropyBonus({ entropy: x, mask, B, T, coef: 0.01, lossAgg: 'seq-mean-token-mean' }).loss;
    const g = entropyBonus({ entropy: ent, mask, B, T, coef: 0.01, lossAgg: 'seq-mean-token-mean' }).grad.entropy;
    expect(maxGradError(f, ent, g)).toBeLessThan(1e-9);
  });
  it('actorLoss (PPO + entropy + k3 KL) w.r.t. logprobs and entropies', () => {
    const cfg = {
      lossAgg: 'token-mean' as const,
      ...CLIP,
      entropyCoeff: 0.01,
      klCoef: 0.1,
      klEstimator: 'k3' as const,
    };
    const run = (x: Float64Array, e: Float64Array) =>
      actorLoss({ logprobs: x, oldLogprobs: old, advantages: adv, mask, B, T, entropy: e, refLogprobs: ref }, cfg);
    const r = run(lp, ent);
    expect(maxGradError((x) => run(x, ent).loss, lp, r.grad.logprobs)).toBeLessThan(1e-7);
    expect(maxGradError((e) => run(lp, e).loss, ent, r.grad.entropy!)).toBeLessThan(1e-9);
    expect(r.loss).toBeCloseTo(r.stats.pgLoss + r.stats.entropyLoss + r.stats.klLoss, 12);
  });
});

describe('gradient accumulation', () => {
  const B = 6;
  const T = 5;
  const { old, lp, adv, mask, ent, ref } = ppoInputs(8, B, T);
  const cfg = { ...CLIP, entropyCoeff: 0.01, klCoef: 0.05, klEstimator: 'k1' as const };
  for (const lossAgg of LOSS_AGG_MODES) {
    it(`${lossAgg}: micro-batches of 1, 2 and 3 rows add up to the mini-batch loss and gradient`, () => {
      const whole = actorLoss(
        { logprobs: lp, oldLogprobs: old, advantages: adv, mask, B, T, entropy: ent, refLogprobs: ref },
        { ...cfg, lossAgg },
      );
      const norm = aggNorm(mask, B, T);
      let loss = 0;
      const grad = new Float64Array(B * T);
      for (const [a, b] of [
        [0, 1],
        [1, 3],
        [3, 6],
      ] as const) {
        const sl = (x: Float64Array) => x.subarray(a * T, b * T);
        const r = actorLoss(
          {
            logprobs: sl(lp),
            oldLogprobs: sl(old),
            advantages: sl(adv),
            mask: sl(mask),
            B: b - a,
            T,
            entropy: sl(ent),
            refLogprobs: sl(ref),
            norm,
          },
          { ...cfg, lossAgg },
        );
        loss += r.loss;
        grad.set(r.grad.logprobs, a * T);
      }
      expect(loss).toBeCloseTo(whole.loss, 12);
      for (let i = 0; i < B * T; i++) expect(grad[i]).toBeCloseTo(whole.grad.logprobs[i]!, 12);
    });
  }
});

describe('actorLoss inputs', () => {
  it('requires entropies when the entropy coefficient is non-zero, and ref logprobs for a KL term', () => {
    const base = { logprobs: [-1], oldLogprobs: [-1], advantages: [1], mask: [1], B: 1, T: 1 };
    const cfg = { lossAgg: 'token-mean' as const, ...CLIP, entropyCoeff: 0.001, klCoef: 0, klEstimator: 'k1' as const };
    expect(() => actorLoss(base, cfg)).toThrow(/entropy/);
    expect(() => actorLoss({ ...base, entropy: [1] }, { ...cfg, klCoef: 0.1 })).toThrow(/refLogprobs/);
    expect(actorLoss(base, { ...cfg, entropyCoeff: 0 }).loss).toBeCloseTo(-1, 12); // r = 1, A = 1: no entropy needed
  });
});
