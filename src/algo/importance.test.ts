import { describe, expect, it } from 'vitest';
import { truncatedImportanceWeights } from './importance.js';

describe('truncatedImportanceWeights', () => {
  it('gives min(π_old/μ, C) per loss token on a hand-worked case', () => {
    // Four loss tokens and one masked token, C = 2:
    //   t0: μ = 0.5, π_old = 0.5  -> ratio 1            -> w = 1
    //   t1: μ = 0.2, π_old = 0.6  -> ratio 3 > C         -> w = 2 (truncated)
    //   t2: μ = 0.8, π_old = 0.4  -> ratio 0.5           -> w = 0.5
    //   t3: masked (prompt token)                        -> w = 0
    //   t4: μ = 0.1, π_old = 0.15 -> ratio 1.5           -> w = 1.5
    const mu = [0.5, 0.2, 0.8, 0.9, 0.1].map(Math.log);
    const prox = [0.5, 0.6, 0.4, 0.1, 0.15].map(Math.log);
    const r = truncatedImportanceWeights({ behaviorLogprobs: mu, proxLogprobs: prox, mask: [1, 1, 1, 0, 1], cap: 2 });
    const expected = [1, 2, 0.5, 0, 1.5];
    expected.forEach((w, i) => expect(r.weights[i]).toBeCloseTo(w, 12));
    expect(r.mean).toBeCloseTo((1 + 2 + 0.5 + 1.5) / 4, 12);
    expect(r.truncatedFrac).toBe(1 / 4);
    // KL(μ ‖ π_old) k1 estimate: mean of log μ − log π_old = mean(log 1, log 1/3, log 2, log 2/3)
    expect(r.behaviorKl).toBeCloseTo((Math.log(1) + Math.log(1 / 3) + Math.log(2) + Math.log(2 / 3)) / 4, 12);
  });

  it('is exactly 1 on tokens the current policy sampled, and refuses a non-positive cap or misaligned arrays', () => {
    const lp = [-0.3, -2.5, -0.01];
    const r = truncatedImportanceWeights({ behaviorLogprobs: lp, proxLogprobs: lp, mask: [1, 1, 1], cap: 1 });
    expect([...r.weights]).toEqual([1, 1, 1]);
    expect(r.truncatedFrac).toBe(0);
    expect(r.behaviorKl).toBe(0);
    expect(() =>
      truncatedImportanceWeights({ behaviorLogprobs: lp, proxLogprobs: lp, mask: [1, 1, 1], cap: 0 }),
    ).toThrow(/cap must be > 0/);
    expect(() =>
      truncatedImportanceWeights({ behaviorLogprobs: lp, proxLogprobs: [0], mask: [1, 1, 1], cap: 2 }),
    ).toThrow(/one entry per token/);
  });
});
