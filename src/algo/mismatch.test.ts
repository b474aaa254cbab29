import { describe, expect, it } from 'vitest';
import { mismatchStats } from './mismatch.js';

describe('mismatchStats', () => {
  it('summarises δ = log π − log μ over loss tokens on a hand-worked batch', () => {
    // B = 2, T = 3; loss tokens (b, t) = (0, 0), (0, 1), (1, 1), (1, 2); (0, 2) and (1, 0) are masked and carry a
    // large δ that must not count. δ = [0.1, −1, 0.8 (masked)] and [5 (masked), 0, 0.75]. C = 2 (log 2 = 0.693):
    // mean δ = (0.1 − 1 + 0 + 0.75)/4 = −0.0375; mean |δ| = 1.85/4 = 0.4625; max |δ| = 1;
    // k3 = mean(e^δ − 1 − δ) = (e^0.1 − 1.1 + e^−1 + 0 + e^0.75 − 1.75)/4; above log 2: 0.75 -> 1/4; below −log 2: −1 -> 1/4.
    const mu = [-1, -2, -3, -1, -1, -2];
    const delta = [0.1, -1, 0.8, 5, 0, 0.75];
    const pi = mu.map((m, i) => m + delta[i]!);
    const s = mismatchStats({
      behaviorLogprobs: mu,
      trainerLogprobs: pi,
      mask: [1, 1, 0, 0, 1, 1],
      B: 2,
      T: 3,
      threshold: 2,
    });
    expect(s.logRatioMean).toBeCloseTo(-0.0375, 12);
    expect(s.logRatioAbsMean).toBeCloseTo(0.4625, 12);
    expect(s.logRatioAbsMax).toBeCloseTo(1, 12);
    expect(s.k3Kl).toBeCloseTo((Math.exp(0.1) - 1.1 + Math.exp(-1) + Math.exp(0.75) - 1.75) / 4, 12);
    expect(s.fracHigh).toBe(0.25);
    expect(s.fracLow).toBe(0.25);
    expect(s.tokens).toBe(4);
  });

  it('is exactly 0 when the trainer has the sampler’s numbers, and refuses a threshold ≤ 1', () => {
    const lp = [-0.5, -3, -0.01];
    const s = mismatchStats({ behaviorLogprobs: lp, trainerLogprobs: lp, mask: [1, 1, 1], B: 1, T: 3, threshold: 2 });
    expect([s.logRatioMean, s.logRatioAbsMean, s.logRatioAbsMax, s.k3Kl, s.fracHigh, s.fracLow]).toEqual([
      0, 0, 0, 0, 0, 0,
    ]);
    expect(() =>
      mismatchStats({ behaviorLogprobs: lp, trainerLogprobs: lp, mask: [1, 1, 1], B: 1, T: 3, threshold: 1 }),
    ).toThrow(/threshold must be > 1/);
  });
});
