import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.js';
import { filterRollouts, parseFilterMetric, selectGroups, type SelectConfig } from './filter.js';

// RAGEN's base.yaml filter settings; each case overrides what it tests (the defaults live in the config schema).
const SEL: SelectConfig = {
  strategy: 'top_p',
  value: 1,
  type: 'largest',
  includeZero: true,
  topPMode: 'linear',
  selectionEps: 0.01,
};
const FIL = { ...SEL, metric: 'reward_std' } as const;

// RAGEN's batch helper: G groups of `size` trajectories with token scores arange(total·len) reshaped;
// a trajectory's score is its row sum. Group g holds trajectories g·size .. g·size+size−1.
function ragenBatch(G: number, size: number, len: number): { rewards: number[]; groupIds: number[] } {
  const rewards: number[] = [];
  const groupIds: number[] = [];
  for (let i = 0; i < G * size; i++) {
    let s = 0;
    for (let t = 0; t < len; t++) s += i * len + t;
    rewards.push(s);
    groupIds.push(Math.floor(i / size));
  }
  return { rewards, groupIds };
}

describe("RAGEN's tests/test_rollout_filter.py cases", () => {
  it('top_k 0.5 on reward std keeps group_size · int(0.5 · G) trajectories', () => {
    const b = ragenBatch(4, 2, 3);
    const r = filterRollouts(b, {
      ...FIL,
      metric: parseFilterMetric('reward_variance'),
      strategy: 'top_k',
      value: 0.5,
    });
    expect(r.keptIndices.length).toBe(2 * Math.max(Math.trunc(0.5 * 4), 1));
    expect(r.stats.inGroup.std).toBeGreaterThan(0);
  });

  it('top_k 0.5 on entropy keeps half the groups (per-trajectory mean entropy from linspace(0.1, 1, 24))', () => {
    // 2 groups of 3 trajectories of 4 tokens; trajectory i's mean entropy is the mean of its 4 linspace values.
    const lin = Array.from({ length: 24 }, (_, k) => 0.1 + (0.9 * k) / 23);
    const entropy = [0, 1, 2, 3, 4, 5].map(
      (i) => (lin[4 * i]! + lin[4 * i + 1]! + lin[4 * i + 2]! + lin[4 * i + 3]!) / 4,
    );
    const b = ragenBatch(2, 3, 4);
    const r = filterRollouts({ ...b, entropy }, { ...FIL, metric: 'entropy', strategy: 'top_k', value: 0.5 });
    expect(r.keptIndices.length).toBe(3 * Math.max(Math.trunc(0.5 * 2), 1));
    expect(r.keptIndices).toEqual([3, 4, 5]); // the later group has the higher entropies
    expect(r.stats.inGroup.std).toBeGreaterThan(0);
  });

  it('metric `reward` (the group mean) selects the high-mean group, not the high-variance one', () => {
    const r = filterRollouts(
      { rewards: [10, 11, 0, 5], groupIds: [0, 0, 1, 1] },
      { ...FIL, metric: parseFilterMetric('reward'), strategy: 'top_k', value: 0.5 },
    );
    expect(r.keptIndices.map((i) => [10, 11, 0, 5][i])).toEqual([10, 11]);
  });

  it('metric reward_sum keeps the top half with group-sum means 6.0 overall and 8.5 chosen', () => {
    // Trajectory scores (row sums): [5, 5 | 3, 3 | 4, 3 | 1, 0]; group sums 10, 6, 7, 1 -> mean 6; top 2 = 10, 7 ->
    // 8.5.
    const rows = [
      [3, 2],
      [1, 4],
      [2, 1],
      [1, 2],
      [2, 2],
      [1, 2],
      [0, 1],
      [0, 0],
    ];
    const r = filterRollouts(
      { rewards: rows.map((x) => x[0]! + x[1]!), groupIds: [0, 0, 1, 1, 2, 2, 3, 3] },
      { ...FIL, metric: 'reward_sum', strategy: 'top_k', value: 0.5 },
    );
    expect(r.keptIndices.map((i) => rows[i])).toEqual([
      [3, 2],
      [1, 4],
      [2, 2],
      [1, 2],
    ]);
    expect(parseFilterMetric('reward_sum')).toBe('reward_sum'); // build_rollout_filter accepts reward_sum
    expect(r.stats.reward.sum).toBeCloseTo(6.0, 12);
    expect(r.stats.chosenReward.sum).toBeCloseTo(8.5, 12);
  });

  it('softmax top_p over tied scores [1, 1, 1] at p = 0.6 keeps [0, 1]', () => {
    expect(selectGroups([1, 1, 1], { ...SEL, strategy: 'top_p', value: 0.6, topPMode: 'softmax' })).toEqual([0, 1]);
  });

  it('linear top_p on [4, 3, 2, 1] at p = 0.6 (threshold 5.99) keeps [0, 1]', () => {
    expect(selectGroups([4, 3, 2, 1], { ...SEL, strategy: 'top_p', value: 0.6, topPMode: 'linear' })).toEqual([0, 1]);
  });

  it('linear top_p with no positive mass keeps nothing', () => {
    expect(selectGroups([0, 0, 0], { ...SEL, strategy: 'top_p', value: 0.9, topPMode: 'linear' })).toEqual([]);
  });

  const nofilter: SelectConfig = { ...SEL, strategy: 'top_p', value: 1, topPMode: 'linear', includeZero: true };
  for (const [scores, want] of [
    [
      [4, 2, 0, 0],
      [0, 1, 2, 3],
    ],
    [
      [0, 0, 0],
      [0, 1, 2],
    ],
    [
      [1, 3, 2],
      [0, 1, 2],
    ],
  ]) {
    it(`nofilter (top_p 1, includeZero) keeps everything: ${JSON.stringify(scores)}`, () => {
      expect(selectGroups(scores!, nofilter)).toEqual(want);
      expect(
        filterRollouts({ rewards: scores!, groupIds: scores!.map((_, i) => i) }, { ...nofilter, metric: 'reward_mean' })
          .noFilter,
      ).toBe(true);
    });
  }

  for (const [scores, p, want] of [
    [[10, 1, 0, 0], 0.9, [0]],
    [[4, 2, 0, 0], 0.9, [0, 1]],
    [[1, 1, 1, 0], 0.6, [0, 1]],
  ] as const) {
    it(`softmax top_p excluding zeros: ${JSON.stringify(scores)} at ${p} -> ${JSON.stringify(want)}`, () => {
      expect(
        selectGroups(scores, { ...SEL, strategy: 'top_p', value: p, topPMode: 'softmax', includeZero: false }),
      ).toEqual(want);
    });
  }

  for (const [scores, p, want] of [
    [[10, 1, 0, 0], 0.9, [0]],
    [[4, 2, 0, 0], 0.9, [0, 1]],
    [[3, 1, 1, 0], 0.9, [0, 1, 2]],
  ] as const) {
    it(`linear top_p excluding zeros (eps 0.01): ${JSON.stringify(scores)} at ${p} -> ${JSON.stringify(want)}`, () => {
      expect(
        selectGroups(scores, {
          ...SEL,
          strategy: 'top_p',
          value: p,
          topPMode: 'linear',
          includeZero: false,
          selectionEps: 0.01,
        }),
      ).toEqual(want);
    });
  }
});

describe('selectGroups, other strategies', () => {
  it('top_k_abs keeps the k best (at least 1); smallest keeps the lowest', () => {
    expect(selectGroups([0.5, 2, 1, 3], { ...SEL, strategy: 'top_k_abs', value: 2 })).toEqual([1, 3]);
    expect(selectGroups([0.5, 2, 1, 3], { ...SEL, strategy: 'top_k_abs', value: 2, type: 'smallest' })).toEqual([0, 2]);
    expect(selectGroups([0.5, 2, 1, 3], { ...SEL, strategy: 'top_k', value: 0.1 })).toEqual([3]);
  });
  it('min_p keeps scores ≥ p·max (largest) or ≤ min/p (smallest)', () => {
    // max 4, p 0.5 -> keep ≥ 2: [4, 2, 3]. min 1, p 0.4 -> keep ≤ 2.5: [1, 2].
    expect(selectGroups([4, 1, 2, 3], { ...SEL, strategy: 'min_p', value: 0.5 })).toEqual([0, 2, 3]);
    expect(selectGroups([4, 1, 2, 3], { ...SEL, strategy: 'min_p', value: 0.4, type: 'smallest' })).toEqual([1, 2]);
  });
  it('top_p with type smallest accumulates the lowest scores (linear) or softmaxes −s (softmax)', () => {
    // Linear: ascending [1, 2, 3, 4], threshold 0.3·10 − 0.01 = 2.99: 1 (< 2.99), then 1 + 2 = 3 ≥ 2.99 -> groups of 1
    // and 2.
    expect(
      selectGroups([4, 3, 2, 1], { ...SEL, strategy: 'top_p', value: 0.3, topPMode: 'linear', type: 'smallest' }),
    ).toEqual([2, 3]);
    // Softmax of −[0, 0, 5]: 1/(2 + e^−5) ≈ 0.4983 twice, then 0.0034; cumsum 0.4983, 0.9966 ≥ 0.9 -> k = 2.
    expect(
      selectGroups([0, 0, 5], { ...SEL, strategy: 'top_p', value: 0.9, topPMode: 'softmax', type: 'smallest' }),
    ).toEqual([0, 1]);
  });
  it('excluding zeros drops all-tie groups before ranking', () => {
    expect(selectGroups([0, 0.2, 0, 0.1], { ...SEL, strategy: 'top_k_abs', value: 3, includeZero: false })).toEqual([
      1, 3,
    ]);
    expect(selectGroups([0, 0], { ...SEL, strategy: 'top_k_abs', value: 3, includeZero: false })).toEqual([]);
  });
});

describe('filterRollouts statistics', () => {
  it('reports kept ratio, kept count, zero count and chosen vs overall reward stats', () => {
    // Groups (by id, any order): a = [1, 0] std 0.7071, b = [1, 1] std 0, c = [0, 1, 1] std 0.5774.
    const r = filterRollouts(
      { rewards: [1, 1, 0, 0, 1, 1, 1], groupIds: ['a', 'b', 'c', 'a', 'b', 'c', 'c'] },
      { ...FIL, strategy: 'top_k_abs', value: 1 },
    );
    expect(r.groupKeys).toEqual(['a', 'b', 'c']);
    expect(r.keptGroups).toEqual([0]);
    expect(r.keptIndices).toEqual([0, 3]);
    expect(Array.from(r.keep)).toEqual([1, 0, 0, 1, 0, 0, 0]);
    expect(r.stats.keptCount).toBe(1);
    expect(r.stats.keptRatio).toBeCloseTo(1 / 3, 12);
    expect(r.stats.zeroCount).toBe(1);
    expect(r.stats.chosenReward.std).toBeCloseTo(Math.SQRT1_2, 12);
    expect(r.stats.reward.std).toBeCloseTo((Math.SQRT1_2 + 0 + Math.sqrt(1 / 3)) / 3, 12);
    expect(r.stats.reward.max).toBeCloseTo(1, 12);
    expect(r.stats.chosenReward.mean).toBeCloseTo(0.5, 12);
    expect(r.groupRewardStd[2]).toBeCloseTo(Math.sqrt(1 / 3), 12);
  });
  it('scores groups by entropy std and by mean length', () => {
    // Entropy [0.1, 0.3 | 0.5, 0.5]: stds 0.2/√2 and 0 -> keep group 0; one zero score; mean std 0.1/√2.
    const e = filterRollouts(
      { rewards: [0, 0, 0, 0], groupIds: [0, 0, 1, 1], entropy: [0.1, 0.3, 0.5, 0.5] },
      { ...FIL, metric: 'entropy_std', strategy: 'top_k_abs', value: 1 },
    );
    expect(e.scores[0]).toBeCloseTo(0.2 / Math.SQRT2, 12);
    expect(e.keptIndices).toEqual([0, 1]);
    expect(e.stats.zeroCount).toBe(1);
    expect(e.stats.inGroup.std).toBeCloseTo(0.1 / Math.SQRT2, 12);
    // Lengths [10, 20 | 5, 5]: means 15 and 5; smallest keeps group 1; overall mean length 10, chosen 5.
    const l = filterRollouts(
      { rewards: [0, 0, 0, 0], groupIds: [0, 0, 1, 1], lengths: [10, 20, 5, 5] },
      { ...FIL, metric: 'length', strategy: 'top_k_abs', value: 1, type: 'smallest' },
    );
    expect(Array.from(l.scores)).toEqual([15, 5]);
    expect(l.keptIndices).toEqual([2, 3]);
    expect(l.stats.inGroup.mean).toBe(10);
    expect(l.stats.chosenInGroup.mean).toBe(5);
  });
  it('names RAGEN aliases and rejects unknown metrics', () => {
    expect(parseFilterMetric('reward_variance')).toBe('reward_std');
    expect(parseFilterMetric('entropy_variance')).toBe('entropy_std');
    expect(() => parseFilterMetric('reward_stdev')).toThrow(ConfigError);
    expect(() => filterRollouts({ rewards: [1], groupIds: [0] }, { ...FIL, metric: 'length' })).toThrow(/lengths/);
  });
});
