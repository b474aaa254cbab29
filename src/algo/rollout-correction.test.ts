import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.js';
import { aggNorm } from './aggregate.js';
import { ppoPolicyLoss } from './policy-loss.js';
import { rolloutCorrection, type RolloutCorrectionConfig } from './rollout-correction.js';
import { maxGradError, randMask, randn } from './testing.js';

// Two rows, T = 3; row 0 has loss tokens t0, t1 (t2 is padding), row 1 all three.
// Ratios π_old/μ: row 0 [3, 0.5], row 1 [1.5, 0.4, 1.8].
const ratios = [3, 0.5, 7, 1.5, 0.4, 1.8];
const mu = [-1, -2, -0.5, -1.5, -0.7, -2.2];
const prox = mu.map((m, i) => m + Math.log(ratios[i]!));
const mask = [1, 1, 0, 1, 1, 1];
const run = (cfg: Partial<RolloutCorrectionConfig>) =>
  rolloutCorrection(
    { behaviorLogprobs: mu, proxLogprobs: prox, mask, B: 2, T: 3 },
    { level: 'token', mode: 'tis', threshold: 2, lowerThreshold: 0, rejectBound: null, ...cfg },
  );
const close = (got: ArrayLike<number>, want: number[]): void =>
  want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, 12));

describe('rolloutCorrection on hand-worked ratios', () => {
  it('token TIS truncates each ratio at C = 2', () => {
    const r = run({});
    close(r.weights, [2, 0.5, 0, 1.5, 0.4, 1.8]);
    expect(r.stats.weightMean).toBeCloseTo((2 + 0.5 + 1.5 + 0.4 + 1.8) / 5, 12);
    expect(r.stats.tokenFrac).toBe(1 / 5);
    expect(r.stats.seqFrac).toBe(1 / 2);
  });
  it('token MIS zeroes ratios outside [0.45, 2]', () => {
    const r = run({ mode: 'mis', lowerThreshold: 0.45 });
    close(r.weights, [0, 0.5, 0, 1.5, 0, 1.8]);
    expect(r.stats.tokenFrac).toBe(2 / 5);
    expect(r.stats.seqFrac).toBe(1);
  });
  it('IcePop is token MIS with [α, β] = [0.5, 5]: ratios 0.3 and 6 are masked, 0.6 and 4 kept', () => {
    const m = [-1, -1, -1, -1];
    const p = [0.3, 0.6, 4, 6].map((x) => -1 + Math.log(x));
    const r = rolloutCorrection(
      { behaviorLogprobs: m, proxLogprobs: p, mask: [1, 1, 1, 1], B: 1, T: 4 },
      { level: 'token', mode: 'mis', threshold: 5, lowerThreshold: 0.5, rejectBound: null },
    );
    close(r.weights, [0, 0.6, 4, 0]);
  });
  it('sequence level uses the product of ratios: row 0 → 1.5, row 1 → 1.08; TIS at 1.2 cuts row 0 only', () => {
    close(run({ level: 'sequence' }).weights, [1.5, 1.5, 0, 1.08, 1.08, 1.08]);
    const r = run({ level: 'sequence', threshold: 1.2 });
    close(r.weights, [1.2, 1.2, 0, 1.08, 1.08, 1.08]);
    expect(r.stats.tokenFrac).toBe(2 / 5);
    expect(r.stats.seqFrac).toBe(1 / 2);
  });
  it('geometric level uses the per-token geometric mean: √1.5 = 1.2247 is masked by MIS at 1.2, ∛1.08 kept', () => {
    const g = Math.cbrt(1.08);
    close(run({ level: 'geometric', mode: 'mis', threshold: 1.2 }).weights, [0, 0, 0, g, g, g]);
  });
  it('rejectBound 1.2 drops row 0 (geometric mean 1.2247 > 1.2) whatever its token weights', () => {
    const r = run({ rejectBound: 1.2 });
    close(r.weights, [0, 0, 0, 1.5, 0.4, 1.8]);
    expect(r.stats.rejectedSeqFrac).toBe(1 / 2);
    // With mode off, the rows rejection leaves keep weight 1.
    const off = run({ mode: 'off', rejectBound: 1.2 });
    close(off.weights, [0, 0, 0, 1, 1, 1]);
    expect(off.stats.weightMean).toBeCloseTo(3 / 5, 12);
    expect(off.stats.tokenFrac).toBe(2 / 5);
    // A low geometric mean is rejected too: bound 1.01 leaves row 1 (∛1.08 = 1.026) out as well.
    expect(run({ rejectBound: 1.01 }).stats.rejectedSeqFrac).toBe(1);
  });
  it('is exactly 1 everywhere when μ = π_old, and refuses bad thresholds', () => {
    const r = rolloutCorrection(
      { behaviorLogprobs: mu, proxLogprobs: mu, mask, B: 2, T: 3 },
      { level: 'sequence', mode: 'mis', threshold: 2, lowerThreshold: 0.5, rejectBound: 1.5 },
    );
    close(r.weights, [1, 1, 0, 1, 1, 1]);
    expect(r.stats.tokenFrac).toBe(0);
    expect(() => run({ threshold: 0 })).toThrow(/threshold must be > 0/);
    expect(() => run({ lowerThreshold: 3 })).toThrow(/lowerThreshold/);
    expect(() => run({ rejectBound: 1 })).toThrow(/rejectBound/);
  });
});

describe('rolloutCorrection enters the loss as a constant factor', () => {
  it('PPO on w·A has the gradient w_t × (gradient on A), and it matches finite differences', () => {
    const rng = new Rng(7);
    const B = 3;
    const T = 5;
    const m = randMask(rng, B * T, 0.8);
    const behavior = randn(rng, B * T, 0.5);
    const proxy = behavior.map((x) => x + rng.normal() * 0.4);
    const old = randn(rng, B * T, 0.5);
    const lp = old.map((x) => x + rng.normal() * 0.15);
    const adv = randn(rng, B * T);
    for (const level of ['token', 'sequence', 'geometric'] as const) {
      const w = rolloutCorrection(
        { behaviorLogprobs: behavior, proxLogprobs: proxy, mask: m, B, T },
        { level, mode: 'mis', threshold: 1.5, lowerThreshold: 0.5, rejectBound: null },
      ).weights;
      const wAdv = adv.map((x, i) => x * w[i]!);
      const norm = aggNorm(m, B, T);
      const loss = (x: Float64Array, A: ArrayLike<number>) =>
        ppoPolicyLoss({
          logprobs: x,
          oldLogprobs: old,
          advantages: A,
          mask: m,
          B,
          T,
          norm,
          lossAgg: 'token-mean',
          clipRatioLow: 0.2,
          clipRatioHigh: 0.28,
          clipRatioC: 3,
        });
      const weighted = loss(lp, wAdv);
      const plain = loss(lp, adv);
      for (let i = 0; i < B * T; i++)
        expect(weighted.grad.logprobs[i]).toBeCloseTo(w[i]! * plain.grad.logprobs[i]!, 12);
      expect(maxGradError((x) => loss(x, wAdv).loss, Float64Array.from(lp), weighted.grad.logprobs)).toBeLessThan(1e-7);
    }
  });
});
