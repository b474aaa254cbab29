// Rollout filtering over groups (RAGEN `rollout_filter.py`: v1's StarPO-S variance filter, RAGEN-2's
// SNR-aware filter): score each group, keep whole groups by top_p / top_k / top_k_abs / min_p.
import { assertNever } from '../util/index.js';
import { groupIndices, type GroupKeys } from './outcome-advantage.js';
import { checkLength, parseName, type Nums } from './shape.js';

/** The group score the filter ranks by. */
export type FilterMetric = 'reward_std' | 'reward_mean' | 'reward_sum' | 'entropy' | 'entropy_std' | 'length';
export type FilterStrategy = 'top_p' | 'top_k' | 'top_k_abs' | 'min_p';
export type FilterType = 'largest' | 'smallest';
export type TopPMode = 'linear' | 'softmax';

export const FILTER_METRICS: readonly FilterMetric[] = [
  'reward_std',
  'reward_mean',
  'reward_sum',
  'entropy',
  'entropy_std',
  'length',
];
export const FILTER_STRATEGIES: readonly FilterStrategy[] = ['top_p', 'top_k', 'top_k_abs', 'min_p'];

/**
 * Parses a filter metric. RAGEN's names are accepted as aliases: `reward_variance` (which RAGEN computes
 * as a standard deviation, so it is `reward_std` here), `reward` (the group mean), `entropy_variance`
 * (likewise a std).
 */
export function parseFilterMetric(name: string): FilterMetric {
  return parseName('rollout filter metric', name, FILTER_METRICS, {
    reward_variance: 'reward_std',
    reward: 'reward_mean',
    entropy_variance: 'entropy_std',
  });
}

/** Parses a filter strategy. */
export function parseFilterStrategy(name: string): FilterStrategy {
  return parseName('rollout filter strategy', name, FILTER_STRATEGIES);
}

/**
 * How groups are selected from their scores, named as the config's `algo.filter.*` keys, which hold their defaults
 * (src/config).
 */
export interface SelectConfig {
  strategy: FilterStrategy;
  /**
   * top_p: probability mass (≥ 1 keeps all); top_k: fraction of groups; top_k_abs: count; min_p: fraction of the best
   * score.
   */
  value: number;
  /** Keep the largest or the smallest scores. */
  type: FilterType;
  /** Whether groups with |score| ≤ 1e-10 are candidates at all. */
  includeZero: boolean;
  /** top_p's probability: scores as linear mass, or softmax of scores. */
  topPMode: TopPMode;
  /** Slack subtracted from linear top_p's threshold. */
  selectionEps: number;
}

/** Candidate indices sorted by score (descending for largest, ascending for smallest), ties by index. */
function sortedBy(cands: number[], key: (i: number) => number, desc: boolean): number[] {
  return cands.slice().sort((x, y) => (desc ? key(y) - key(x) : key(x) - key(y)) || x - y);
}

/**
 * The groups to keep, as ascending indices into `scores` (RAGEN `_select_top_groups`):
 * - includeZero=false first drops groups with |s| ≤ 1e-10 (returns [] if none remain);
 * - top_p with value ≥ 1 keeps every candidate;
 * - top_p linear: sort, threshold = p·Σs − eps, accumulate while below it (stopping at s ≤ 0); keep the
 *   accumulated groups if the threshold was reached, else none (an empty step);
 * - top_p softmax: P = softmax(s) (of −s for smallest), sorted; k = (first i with cumsum(P)_i ≥ p) + 1;
 * - top_k: k = max(1, min(⌊value·G⌋, #candidates)) best; top_k_abs: k = max(1, min(⌊value⌋, #candidates));
 * - min_p: largest keeps s ≥ value·max(s) − 1e-10; smallest keeps s ≤ min(s)/(value + 1e-10) + 1e-10.
 * Ties are broken by the lower index (torch leaves them unspecified).
 */
export function selectGroups(scores: Nums, cfg: SelectConfig): number[] {
  const { strategy, value, type, includeZero } = cfg;
  const G = scores.length;
  const s = (i: number): number => scores[i]!;
  let cands = Array.from({ length: G }, (_, i) => i);
  if (!includeZero) cands = cands.filter((i) => Math.abs(s(i)) > 1e-10);
  if (cands.length === 0) return [];
  const largest = type === 'largest';
  const asc = (xs: number[]): number[] => xs.slice().sort((x, y) => x - y);
  switch (strategy) {
    case 'top_p': {
      if (value >= 1) return cands;
      const mode = cfg.topPMode;
      switch (mode) {
        case 'softmax': {
          const logits = cands.map((i) => (largest ? s(i) : -s(i)));
          const m = Math.max(...logits);
          const ex = logits.map((l) => Math.exp(l - m));
          const z = ex.reduce((x, y) => x + y, 0);
          const order = sortedBy(
            cands.map((_, j) => j),
            (j) => ex[j]!,
            true,
          );
          let cum = 0;
          let k = order.length;
          for (let j = 0; j < order.length; j++) {
            cum += ex[order[j]!]! / z;
            if (cum >= value) {
              k = j + 1;
              break;
            }
          }
          return asc(order.slice(0, k).map((j) => cands[j]!));
        }
        case 'linear': {
          const order = sortedBy(cands, s, largest);
          const threshold = value * cands.reduce((acc, i) => acc + s(i), 0) - cfg.selectionEps;
          let cum = 0;
          let count = 0;
          for (const i of order) {
            if (cum >= threshold || s(i) <= 0) break;
            cum += s(i);
            count++;
          }
          return cum >= threshold ? asc(order.slice(0, count)) : [];
        }
        default:
          return assertNever(mode, 'top_p mode');
      }
    }
    case 'top_k':
    case 'top_k_abs': {
      const want = strategy === 'top_k' ? Math.trunc(value * G) : Math.trunc(value);
      const k = Math.max(1, Math.min(want, cands.length));
      return asc(sortedBy(cands, s, largest).slice(0, k));
    }
    case 'min_p': {
      if (largest) {
        const max = Math.max(...cands.map(s));
        return cands.filter((i) => s(i) >= value * max - 1e-10);
      }
      const min = Math.min(...cands.map(s));
      return cands.filter((i) => s(i) <= min / (value + 1e-10) + 1e-10);
    }
    default:
      return assertNever(strategy, 'rollout filter strategy');
  }
}

/** Mean over groups of a per-group array, and over the kept groups only (0 if none). */
function meanOf(xs: Float64Array, idx?: number[]): number {
  const ii = idx ?? Array.from(xs, (_, i) => i);
  return ii.length > 0 ? ii.reduce((a, i) => a + xs[i]!, 0) / ii.length : 0;
}

/** Per-group std (unbiased; 0 for a single member), mean, max and sum of a per-trajectory quantity. */
export function groupSummary(
  x: Nums,
  groups: number[][],
): { std: Float64Array; mean: Float64Array; max: Float64Array; sum: Float64Array } {
  const G = groups.length;
  const std = new Float64Array(G);
  const mean = new Float64Array(G);
  const max = new Float64Array(G);
  const sum = new Float64Array(G);
  groups.forEach((members, g) => {
    const v = members.map((i) => x[i]!);
    const n = v.length;
    sum[g] = v.reduce((a, y) => a + y, 0);
    mean[g] = sum[g]! / n;
    max[g] = Math.max(...v);
    std[g] = n > 1 ? Math.sqrt(v.reduce((a, y) => a + (y - mean[g]!) ** 2, 0) / (n - 1)) : 0;
  });
  return { std, mean, max, sum };
}

/** Rollout filter settings: the group metric plus the selection rule. */
export interface RolloutFilterConfig extends SelectConfig {
  /** What a group is scored by. */
  metric: FilterMetric;
}

/** Mean-over-groups statistics, overall and over the kept groups. */
export interface GroupStats {
  std: number;
  mean: number;
  max: number;
  sum: number;
}

/** Output of `filterRollouts`. */
export interface RolloutFilterResult {
  /** Kept groups, ascending indices into `groupKeys`. */
  keptGroups: number[];
  /** The key of each group, in order of first appearance in `groupIds`. */
  groupKeys: (number | string)[];
  /** Per trajectory: 1 if its group is kept. */
  keep: Uint8Array;
  /** Kept trajectories, ascending. */
  keptIndices: number[];
  /** Per group: the score it was ranked by. */
  scores: Float64Array;
  /** Per group: its reward std (what RAGEN attaches as `reward_std`, for soft reweighting). */
  groupRewardStd: Float64Array;
  /** True for RAGEN's "nofilter" (top_p ≥ 1 with includeZero): everything is kept. */
  noFilter: boolean;
  stats: {
    keptCount: number;
    /** Kept groups / all groups. */
    keptRatio: number;
    /** Groups with |score| ≤ 1e-10. */
    zeroCount: number;
    /** Mean over groups of the metric's quantity (reward, entropy or length): RAGEN `in_group_*`. */
    inGroup: GroupStats;
    chosenInGroup: GroupStats;
    /** Mean over groups of reward std/mean/max/sum: RAGEN `in_group_reward_*`. */
    reward: GroupStats;
    chosenReward: GroupStats;
  };
}

/**
 * Scores groups by `metric` and keeps whole groups with `selectGroups`. Inputs are per trajectory:
 * `rewards` (its score, the sum of its token rewards), `entropy` (its mean token entropy; for the
 * entropy metrics), `lengths` (its loss-token count; for `length`). Groups may differ in size.
 * In per-turn layouts pass one entry per episode, as RAGEN collapses turn rows first (the episode's
 * score, the mean of its turns' entropies, the sum of its turns' lengths).
 * Difference from RAGEN: groups come from `groupIds` rather than a reshape that assumes contiguous
 * equal-size groups; a single-member group has std 0 rather than NaN.
 */
export function filterRollouts(
  a: { rewards: Nums; groupIds: GroupKeys; entropy?: Nums; lengths?: Nums },
  cfg: RolloutFilterConfig,
): RolloutFilterResult {
  const N = a.rewards.length;
  checkLength('groupIds', a.groupIds, N, 'one per trajectory');
  const { metric } = cfg;
  const groups = groupIndices(a.groupIds);
  const groupKeys = groups.map((m) => a.groupIds[m[0]!]!);
  const reward = groupSummary(a.rewards, groups);
  const need = (x: Nums | undefined, what: string): Nums => {
    if (x === undefined) throw new TypeError(`filterRollouts: metric \`${metric}\` needs per-trajectory \`${what}\`.`);
    checkLength(what, x, N, 'one per trajectory');
    return x;
  };
  let quantity: ReturnType<typeof groupSummary>;
  let scores: Float64Array;
  switch (metric) {
    case 'reward_std':
      quantity = reward;
      scores = reward.std;
      break;
    case 'reward_mean':
      quantity = reward;
      scores = reward.mean;
      break;
    case 'reward_sum':
      quantity = reward;
      scores = reward.sum;
      break;
    case 'entropy':
      quantity = groupSummary(need(a.entropy, 'entropy'), groups);
      scores = quantity.mean;
      break;
    case 'entropy_std':
      quantity = groupSummary(need(a.entropy, 'entropy'), groups);
      scores = quantity.std;
      break;
    case 'length':
      quantity = groupSummary(need(a.lengths, 'lengths'), groups);
      scores = quantity.mean;
      break;
    default:
      return assertNever(metric, 'rollout filter metric');
  }
  const keptGroups = selectGroups(scores, cfg);
  const keep = new Uint8Array(N);
  for (const g of keptGroups) for (const i of groups[g]!) keep[i] = 1;
  const keptIndices: number[] = [];
  keep.forEach((k, i) => k && keptIndices.push(i));
  const stats = (m: ReturnType<typeof groupSummary>, idx?: number[]): GroupStats => ({
    std: meanOf(m.std, idx),
    mean: meanOf(m.mean, idx),
    max: meanOf(m.max, idx),
    sum: meanOf(m.sum, idx),
  });
  return {
    keptGroups,
    groupKeys,
    keep,
    keptIndices,
    scores,
    groupRewardStd: reward.std,
    noFilter: cfg.strategy === 'top_p' && cfg.value >= 1 && cfg.includeZero,
    stats: {
      keptCount: keptGroups.length,
      keptRatio: groups.length > 0 ? keptGroups.length / groups.length : 0,
      zeroCount: Array.from(scores).filter((x) => Math.abs(x) <= 1e-10).length,
      inGroup: stats(quantity),
      chosenInGroup: stats(quantity, keptGroups),
      reward: stats(reward),
      chosenReward: stats(reward, keptGroups),
    },
  };
}
