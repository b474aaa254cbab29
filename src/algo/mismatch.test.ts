import { describe, expect, it } from 'vitest';
import { mismatchStats, mismatchStatsByTag } from './mismatch.js';

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

describe('mismatchStatsByTag', () => {
  // B = 3, T = 2: rows 0 and 2 come from tag A, row 1 from tag B. Loss tokens: (0, 0), (0, 1), (1, 1), (2, 0); (1, 0)
  // and (2, 1) are masked and carry a δ that must not count for either tag. C = 2.
  const mu = [-1, -2, -0.5, -3, -1.5, -1];
  const delta = [0.2, -0.9, 4, 0, 1, -6];
  const pi = mu.map((m, i) => m + delta[i]!);
  const byTag = () =>
    mismatchStatsByTag({
      behaviorLogprobs: mu,
      trainerLogprobs: pi,
      mask: [1, 1, 0, 1, 1, 0],
      tags: ['A', 'B', 'A'],
      B: 3,
      T: 2,
      threshold: 2,
    });

  it("gives each tag the statistics of its own rows' loss tokens, worked by hand", () => {
    const s = byTag();
    expect([...s.keys()]).toEqual(['A', 'B']);
    // A: δ = 0.2, −0.9 (row 0) and 1 (row 2). |δ| mean = 2.1/3 = 0.7, max 1; k3 = mean(e^δ − 1 − δ);
    // above log 2 = 0.693: δ = 1 -> 1/3; below −log 2: −0.9 -> 1/3.
    const a = s.get('A')!;
    expect(a.tokens).toBe(3);
    expect(a.logRatioMean).toBeCloseTo(0.3 / 3, 12);
    expect(a.logRatioAbsMean).toBeCloseTo(0.7, 12);
    expect(a.logRatioAbsMax).toBeCloseTo(1, 12);
    expect(a.k3Kl).toBeCloseTo((Math.exp(0.2) - 1.2 + Math.exp(-0.9) - 0.1 + Math.exp(1) - 2) / 3, 12);
    expect(a.fracHigh).toBeCloseTo(1 / 3, 12);
    expect(a.fracLow).toBeCloseTo(1 / 3, 12);
  });

  it('reads exactly 0 for a tag whose tokens all match, while the other tag does not', () => {
    // B's one loss token has δ = 0; its masked token (δ = 4) and A's tokens must not leak into it.
    const b = byTag().get('B')!;
    expect(b.tokens).toBe(1);
    expect([b.logRatioMean, b.logRatioAbsMean, b.logRatioAbsMax, b.k3Kl, b.fracHigh, b.fracLow]).toEqual([
      0, 0, 0, 0, 0, 0,
    ]);
    expect(byTag().get('A')!.logRatioAbsMax).toBeGreaterThan(0);
  });

  it('leaves out a tag with no loss token, and refuses a tags array of the wrong length', () => {
    const lp = [-1, -2, -3, -4];
    const args = { behaviorLogprobs: lp, trainerLogprobs: lp, mask: [1, 1, 0, 0], B: 2, T: 2, threshold: 2 };
    expect([...mismatchStatsByTag({ ...args, tags: ['A', 'B'] }).keys()]).toEqual(['A']);
    expect(() => mismatchStatsByTag({ ...args, tags: ['A'] })).toThrow(/`tags` has length 1, expected 2/);
  });
});
