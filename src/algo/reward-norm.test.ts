import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.js';
import { normalizeRewards, parseRewardGrouping, parseRewardNormMethod } from './reward-norm.js';

const close = (got: ArrayLike<number>, want: number[], digits = 6): void => {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, digits));
};

// Scores [1, 3 | 5, 5 | 7] in groups a, a, b, b, c; tags x, x, x, y, y.
const scores = [1, 3, 5, 5, 7];
const groupIds = ['a', 'a', 'b', 'b', 'c'];
const tags = ['x', 'x', 'x', 'y', 'y'];

describe('normalizeRewards', () => {
  it('identity (ARPO) returns the scores', () => {
    close(normalizeRewards({ scores, groupIds, grouping: 'state', method: 'identity' }), scores);
  });

  it('state x mean_std (GRPO): per group z-scores; a tie and a singleton give 0', () => {
    // Group a: mean 2, unbiased std √2 -> ∓1/(√2 + 1e-6) = ∓0.707106...
    const s = 1 / (Math.SQRT2 + 1e-6);
    close(normalizeRewards({ scores, groupIds, grouping: 'state', method: 'mean_std' }), [-s, s, 0, 0, 0]);
  });

  it('batch x mean_std (BRPO): one z-score over the batch', () => {
    // mean 4.2; squared deviations 10.24, 1.44, 0.64, 0.64, 7.84 sum 20.8; unbiased var 5.2, std 2.280351.
    const sd = Math.sqrt(5.2) + 1e-6;
    close(
      normalizeRewards({ scores, grouping: 'batch', method: 'mean_std' }),
      scores.map((x) => (x - 4.2) / sd),
    );
  });

  it('batch x asym_clip clamps the z-score to [−1, 3]', () => {
    // z = [−1.4033, −0.5262, 0.3508, 0.3508, 1.2279] -> first clamps to −1.
    const got = normalizeRewards({ scores, grouping: 'batch', method: 'asym_clip' });
    expect(got[0]).toBe(-1);
    expect(got[4]).toBeCloseTo(2.8 / (Math.sqrt(5.2) + 1e-6), 6);
  });

  it('batch x asym_clip clamps the top at 3: ten 0s and one 1', () => {
    // mean 1/11; squared deviations 10·(1/11)² + (10/11)² = 10/11; unbiased var 1/11, std 1/√11.
    // z(1) = (10/11)·√11 = 10/√11 ≈ 3.015 -> 3; z(0) = −(1/11)/(1/√11 + 1e-6) ≈ −0.3015 (unclipped).
    const got = normalizeRewards({
      scores: [...new Array<number>(10).fill(0), 1],
      grouping: 'batch',
      method: 'asym_clip',
    });
    expect(got[10]).toBe(3);
    expect(got[0]).toBeCloseTo(-(1 / 11) / (1 / Math.sqrt(11) + 1e-6), 12);
  });

  it('inductive x mean groups by env tag', () => {
    // Tag x: [1, 3, 5] mean 3 -> [−2, 0, 2]; tag y: [5, 7] mean 6 -> [−1, 1].
    close(normalizeRewards({ scores, tags, grouping: 'inductive', method: 'mean' }), [-2, 0, 2, -1, 1]);
  });

  it('leaves scores unchanged when every set has one episode', () => {
    close(normalizeRewards({ scores: [2, 4], groupIds: [0, 1], grouping: 'state', method: 'mean_std' }), [2, 4]);
  });

  it('parses names, with `tag` for inductive', () => {
    expect(parseRewardGrouping('tag')).toBe('inductive');
    expect(parseRewardNormMethod('mean_std')).toBe('mean_std');
    expect(() => parseRewardNormMethod('meanstd')).toThrow(ConfigError);
  });
});
