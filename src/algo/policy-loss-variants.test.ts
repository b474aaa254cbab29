import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.js';
import { aggNorm, aggWeights, LOSS_AGG_MODES, type LossAggMode } from './aggregate.js';
import { actorLoss, parsePolicyLoss } from './policy-loss.js';
import { cispoPolicyLoss, gspoPolicyLoss } from './policy-loss-variants.js';
import { maxGradError, randMask, randn } from './testing.js';

const GSPO = { clipRatioLow: 3e-4, clipRatioHigh: 4e-4 };
const CISPO = { clipRatioLow: 1, clipRatioHigh: 0.28 };

describe('gspoPolicyLoss on hand-worked sequences', () => {
  // Row 0: A = +1, Δ = [0.2, 0.4] -> s = e^0.3 = 1.3499 > 1.0004: clipped high, L_t = −1.0004, gradient 0.
  // Row 1: A = −2, Δ = [0.0001, 0.0001] -> s = e^0.0001 inside [0.9997, 1.0004]: L_t = 2s, dL_t/dlogπ_t = 2s.
  // seq-mean-token-mean over 2 rows of 2 tokens: w = 1/4 per token.
  // Loss = ¼(−1.0004·2) + ¼(2s·2) = −0.5002 + s; gradient row 1 = ¼·2s = s/2.
  const s = Math.exp(0.0001);
  const r = gspoPolicyLoss({
    logprobs: [-0.8, -0.6, -1 + 1e-4, -2 + 1e-4],
    oldLogprobs: [-1, -1, -1, -2],
    advantages: [1, 1, -2, -2],
    mask: [1, 1, 1, 1],
    B: 2,
    T: 2,
    lossAgg: 'seq-mean-token-mean',
    ...GSPO,
  });
  it('takes one length-normalised ratio per sequence and clips it with its own range', () => {
    expect(r.loss).toBeCloseTo(-0.5002 + s, 12);
    [0, 0, s / 2, s / 2].forEach((g, i) => expect(r.grad.logprobs[i]).toBeCloseTo(g, 12));
    expect(r.stats.clipfracHigh).toBe(0.5);
    expect(r.stats.clipfracLow).toBe(0);
  });
  it('differs from the token ratio: Δ = [+0.3, −0.3] has s = 1 (unclipped) where PPO would clip both tokens', () => {
    const g = gspoPolicyLoss({
      logprobs: [0.3, -0.3],
      oldLogprobs: [0, 0],
      advantages: [1, 1],
      mask: [1, 1],
      B: 1,
      T: 2,
      lossAgg: 'token-mean',
      ...GSPO,
    });
    expect(g.loss).toBeCloseTo(-1, 12);
    expect(g.stats.clipfrac).toBe(0);
    [-0.5, -0.5].forEach((x, i) => expect(g.grad.logprobs[i]).toBeCloseTo(x, 12));
  });
});

describe('cispoPolicyLoss on hand-worked tokens', () => {
  it('weights every token’s log-prob gradient by the clipped ratio, never dropping one', () => {
    // ε_high 0.28, no lower bound (ε_low 1). Token 0: A = 1, Δ = 0.5: r = 1.6487 -> weight 1.28, gradient −1.28·1.
    // Token 1: A = −1, Δ = −0.5: r = 0.6065 (no lower clip) -> gradient +0.6065. Token 2 masked.
    // token-mean over 2: loss = ½(−1.28·1·logπ_0 + 0.6065·logπ_1) with logπ = [−0.5, −1.5].
    const r = cispoPolicyLoss({
      logprobs: [-0.5, -1.5, -3],
      oldLogprobs: [-1, -1, -1],
      advantages: [1, -1, 5],
      mask: [1, 1, 0],
      B: 1,
      T: 3,
      lossAgg: 'token-mean',
      ...CISPO,
    });
    const r1 = Math.exp(-0.5);
    expect(r.loss).toBeCloseTo(0.5 * (-1.28 * -0.5 + r1 * -1.5), 12);
    [-0.64, r1 / 2, 0].forEach((g, i) => expect(r.grad.logprobs[i]).toBeCloseTo(g, 12));
    expect(r.stats.clipfracHigh).toBe(0.5);
    expect(r.stats.clipfracLow).toBe(0);
  });
});

function inputs(seed: number, B: number, T: number, perSeqAdv: boolean) {
  const rng = new Rng(seed);
  const mask = randMask(rng, B * T, 0.8);
  const old = randn(rng, B * T, 0.5);
  const lp = old.map((x) => x + rng.normal() * 0.2);
  const adv = randn(rng, B * T);
  if (perSeqAdv) for (let b = 0; b < B; b++) adv.fill(adv[b * T]!, b * T, (b + 1) * T);
  return { mask, old, lp, adv };
}

describe('closed-form gradients match central differences', () => {
  const B = 4;
  const T = 6;
  for (const lossAgg of LOSS_AGG_MODES) {
    it(`GSPO with one advantage per sequence is the exact gradient of its loss (${lossAgg})`, () => {
      // A clip range of ±0.05 so some rows clip and some do not.
      const { mask, old, lp, adv } = inputs(3, B, T, true);
      const f = (x: Float64Array) =>
        gspoPolicyLoss({
          logprobs: x,
          oldLogprobs: old,
          advantages: adv,
          mask,
          B,
          T,
          lossAgg,
          clipRatioLow: 0.05,
          clipRatioHigh: 0.05,
        });
      const r = f(Float64Array.from(lp));
      expect(r.stats.clipfrac).toBeGreaterThan(0);
      expect(r.stats.clipfrac).toBeLessThan(1);
      expect(maxGradError((x) => f(x).loss, Float64Array.from(lp), r.grad.logprobs)).toBeLessThan(1e-7);
    });
    it(`CISPO's gradient is that of its surrogate with the weight held (stop-gradient) (${lossAgg})`, () => {
      const { mask, old, lp, adv } = inputs(4, B, T, false);
      const cfg = { oldLogprobs: old, advantages: adv, mask, B, T, lossAgg, clipRatioLow: 0.2, clipRatioHigh: 0.1 };
      const r = cispoPolicyLoss({ logprobs: lp, ...cfg });
      // The surrogate −Σ w_t·sg(clip(r_t))·A_t·x_t, with the weights of the base point, written out here.
      const w = aggWeights(mask, B, T, lossAgg);
      const weight = Array.from(lp, (x, i) => Math.min(1.1, Math.max(0.8, Math.exp(x - old[i]!))));
      const surrogate = (x: Float64Array) => x.reduce((s, xi, i) => s - w[i]! * weight[i]! * adv[i]! * xi, 0);
      expect(maxGradError(surrogate, Float64Array.from(lp), r.grad.logprobs)).toBeLessThan(1e-7);
      expect(r.stats.clipfrac).toBeGreaterThan(0);
    });
  }
  it('GSPO with per-token advantages has GSPO-token’s gradient: sg[s_b]·π_t/sg[π_t]', () => {
    const { mask, old, lp, adv } = inputs(5, B, T, false);
    const lossAgg: LossAggMode = 'seq-mean-token-mean';
    const r = gspoPolicyLoss({
      logprobs: lp,
      oldLogprobs: old,
      advantages: adv,
      mask,
      B,
      T,
      lossAgg,
      clipRatioLow: 0.05,
      clipRatioHigh: 0.05,
    });
    const w = aggWeights(mask, B, T, lossAgg);
    const sBase = Array.from({ length: B }, (_, b) => {
      let n = 0;
      let s = 0;
      for (let t = 0; t < T; t++) if (mask[b * T + t]) (n++, (s += lp[b * T + t]! - old[b * T + t]!));
      return Math.exp(n > 0 ? s / n : 0);
    });
    const surrogate = (x: Float64Array) =>
      x.reduce((acc, xi, i) => {
        if (!mask[i]) return acc;
        const st = sBase[Math.floor(i / T)]! * Math.exp(xi - lp[i]!);
        return acc + w[i]! * Math.max(-adv[i]! * st, -adv[i]! * Math.min(1.05, Math.max(0.95, st)));
      }, 0);
    expect(maxGradError(surrogate, Float64Array.from(lp), r.grad.logprobs)).toBeLessThan(1e-7);
  });
});

describe('actorLoss with GSPO and CISPO', () => {
  const B = 6;
  const T = 5;
  const { mask, old, lp, adv } = inputs(9, B, T, true);
  const base = {
    clipRatioLow: 0.2,
    clipRatioHigh: 0.28,
    clipRatioC: 3,
    entropyCoeff: 0,
    klCoef: 0,
    klEstimator: 'k1' as const,
  };
  for (const policyLoss of ['gspo', 'cispo'] as const) {
    for (const lossAgg of LOSS_AGG_MODES) {
      it(`${policyLoss}, ${lossAgg}: micro-batches of 1, 2 and 3 rows add up to the mini-batch`, () => {
        const cfg = { ...base, lossAgg, policyLoss, gspo: { clipRatioLow: 0.05, clipRatioHigh: 0.05 }, cispo: CISPO };
        const whole = actorLoss({ logprobs: lp, oldLogprobs: old, advantages: adv, mask, B, T }, cfg);
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
            { logprobs: sl(lp), oldLogprobs: sl(old), advantages: sl(adv), mask: sl(mask), B: b - a, T, norm },
            cfg,
          );
          loss += r.loss;
          grad.set(r.grad.logprobs, a * T);
        }
        expect(loss).toBeCloseTo(whole.loss, 12);
        for (let i = 0; i < B * T; i++) expect(grad[i]).toBeCloseTo(whole.grad.logprobs[i]!, 12);
      });
    }
  }
  it('dispatches on policyLoss and names a missing clip range or an unknown loss', () => {
    const a = { logprobs: lp, oldLogprobs: old, advantages: adv, mask, B, T };
    const g = actorLoss(a, { ...base, lossAgg: 'token-mean', policyLoss: 'gspo', gspo: GSPO });
    expect(g.loss).toBeCloseTo(gspoPolicyLoss({ ...a, lossAgg: 'token-mean', ...GSPO }).loss, 14);
    expect(() => actorLoss(a, { ...base, lossAgg: 'token-mean', policyLoss: 'cispo' })).toThrow(/needs its clip range/);
    expect(() => parsePolicyLoss('gspoo')).toThrow(/Unknown policy loss `gspoo`.*Did you mean.*`gspo`/);
  });
});
