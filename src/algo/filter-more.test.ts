import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.js';
import { filterRollouts, maxVarianceSubset, roundHalfEven, selectGroups, type SelectConfig } from './filter.js';

const SEL: SelectConfig = {
  strategy: 'percentile_range',
  value: 1,
  type: 'largest',
  includeZero: true,
  topPMode: 'linear',
  selectionEps: 0.01,
  percentileLow: 0,
  percentileHigh: 1,
};

/** Unbiased variance (0 for fewer than 2 values), as torch's `var()`. */
function variance(v: number[]): number {
  if (v.length < 2) return 0;
  const m = v.reduce((a, x) => a + x, 0) / v.length;
  return v.reduce((a, x) => a + (x - m) ** 2, 0) / (v.length - 1);
}

/** Every k-subset of 0..n-1. */
function subsets(n: number, k: number): number[][] {
  if (k === 0) return [[]];
  if (n < k) return [];
  return [...subsets(n - 1, k), ...subsets(n - 1, k - 1).map((s) => [...s, n - 1])];
}

describe('percentile_range: keep the groups ranked in [low, high)', () => {
  // Scores [5, 1, 4, 2, 3, 0, 6, 7] ranked largest first: 7 (i7), 6 (i6), 5 (i0), 4 (i2), 3 (i4), 2 (i3), 1 (i1), 0 (i5).
  const scores = [5, 1, 4, 2, 3, 0, 6, 7];
  it('Q2 of 8 groups (0.25, 0.5) keeps ranks 2..3: groups 0 and 2', () => {
    expect(selectGroups(scores, { ...SEL, percentileLow: 0.25, percentileHigh: 0.5 })).toEqual([0, 2]);
  });
  it('smallest ranks from the lowest score: Q1 keeps groups 5 and 1', () => {
    expect(selectGroups(scores, { ...SEL, type: 'smallest', percentileLow: 0, percentileHigh: 0.25 })).toEqual([1, 5]);
  });
  it('keeps at least one group when the band rounds to nothing', () => {
    // 0.5·8 = 4 for both ends: the band is widened to [4, 5), rank 4 = score 3 = group 4.
    expect(selectGroups(scores, { ...SEL, percentileLow: 0.5, percentileHigh: 0.5 })).toEqual([4]);
  });
  it("rounds the band's ends half to even as Python's round (RAGEN): 0.3·5 = 1.5 -> 2, 0.5·5 = 2.5 -> 2", () => {
    expect(roundHalfEven(1.5)).toBe(2);
    expect(roundHalfEven(2.5)).toBe(2);
    expect(roundHalfEven(-0.5) === 0).toBe(true);
    expect(roundHalfEven(2.6)).toBe(3);
    // 5 groups [10, 20, 30, 40, 50], largest first; lo = round(1.5) = 2, hi = round(4.5) = 4: ranks 2, 3 = 30, 20.
    expect(selectGroups([10, 20, 30, 40, 50], { ...SEL, percentileLow: 0.3, percentileHigh: 0.9 })).toEqual([1, 2]);
  });
  it('refuses a band outside [0, 1] or reversed', () => {
    expect(() => selectGroups(scores, { ...SEL, percentileLow: 0.6, percentileHigh: 0.5 })).toThrow(/percentileLow/);
    expect(() => selectGroups(scores, { ...SEL, percentileLow: -0.1 })).toThrow(/percentileLow/);
  });
});

describe('maxVarianceSubset: the k values of largest variance (bottom j + top k − j)', () => {
  it('picks the two extremes of [3, 1, 4, 1, 5] for k = 2', () => {
    // Sorted ascending: 1 (i1), 1 (i3), 3 (i0), 4 (i2), 5 (i4). k = 2: j = 0 {4, 5} var 0.5; j = 1 {1, 5} var 8;
    // j = 2 {1, 1} var 0. Best j = 1: indices 1 and 4.
    expect(maxVarianceSubset([3, 1, 4, 1, 5], 2)).toEqual([1, 4]);
  });
  it('keeps everything when k ≥ n, and the highest value when k = 1 (every split has variance 0; j = 0 wins)', () => {
    expect(maxVarianceSubset([2, 0, 1], 3)).toEqual([0, 1, 2]);
    expect(maxVarianceSubset([2, 0, 1], 1)).toEqual([0]);
  });
  it('equals brute force over every k-subset on 300 random groups', () => {
    const rng = new Rng(37);
    for (let trial = 0; trial < 300; trial++) {
      const n = 2 + Math.floor(rng.random() * 8);
      const k = 1 + Math.floor(rng.random() * n);
      // Rewards from a small set, so ties are common (binary success, shaped rewards).
      const v = Array.from({ length: n }, () => (trial % 2 === 0 ? Math.round(rng.random() * 4) / 2 : rng.normal()));
      const best = Math.max(...subsets(n, k).map((s) => variance(s.map((i) => v[i]!))));
      const got = maxVarianceSubset(v, k);
      expect(got.length).toBe(k);
      expect(new Set(got).size).toBe(k);
      expect(variance(got.map((i) => v[i]!))).toBeCloseTo(best, 10);
    }
  });
});

describe('within_group: every group kept, k = round(value · size) trajectories each', () => {
  it('keeps the max-variance half of each group and reports the kept trajectory ratio', () => {
    // Group a: [0, 1, 1, 0] -> k = 2: one 0 and one 1 (variance 0.5): the first 0 (i0) and the last 1 (i2).
    // Group b: [5, 5, 9, 1] -> k = 2: {1, 9} (variance 32): i7 and i6.
    const r = filterRollouts(
      { rewards: [0, 1, 1, 0, 5, 5, 9, 1], groupIds: ['a', 'a', 'a', 'a', 'b', 'b', 'b', 'b'] },
      { ...SEL, metric: 'reward_std', strategy: 'within_group', value: 0.5 },
    );
    expect(r.keptGroups).toEqual([0, 1]);
    expect(r.keptIndices).toEqual([0, 2, 6, 7]);
    expect(r.stats.keptRatio).toBe(0.5);
    expect(r.noFilter).toBe(false);
  });
  it('keeps at least one trajectory per group', () => {
    const r = filterRollouts(
      { rewards: [3, 2, 1], groupIds: [0, 0, 0] },
      { ...SEL, metric: 'reward_std', strategy: 'within_group', value: 0.01 },
    );
    expect(r.keptIndices).toEqual([0]);
  });
});
