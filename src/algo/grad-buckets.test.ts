import { describe, expect, it } from 'vitest';
import { bucketName, rewardStdBuckets } from './grad-buckets.js';

describe('rewardStdBuckets', () => {
  it('ranks groups by std into equal-count buckets, the remainder in the last', () => {
    // sorted: g1 (0), g3 (0), g4 (0.3), g0 (0.5), g6 (0.9), g2 (1.2), g5 (2.0); 7 groups / 3 buckets = 2 each + 1
    expect(rewardStdBuckets([0.5, 0, 1.2, 0, 0.3, 2.0, 0.9], 3)).toEqual([
      [1, 3],
      [4, 0],
      [6, 2, 5],
    ]);
    expect(rewardStdBuckets([0.4, 0.1, 0.2, 0.3], 2)).toEqual([
      [1, 2],
      [3, 0],
    ]);
    expect(rewardStdBuckets([0.1, 0.2], 3)).toEqual([[], [], [0, 1]]);
    expect(rewardStdBuckets([], 2)).toEqual([[], []]);
  });
  it('names buckets from 1, lowest std first', () => {
    expect([0, 1, 5].map(bucketName)).toEqual(['bucket_1', 'bucket_2', 'bucket_6']);
  });
  it('rejects a bad bucket count or a non-finite std', () => {
    expect(() => rewardStdBuckets([1], 0)).toThrow(/bucket count must be an integer >= 1, got 0/);
    expect(() => rewardStdBuckets([1, Number.NaN], 2)).toThrow(/group 1 has a non-finite reward std/);
  });
});
