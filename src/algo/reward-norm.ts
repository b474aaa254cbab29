// Episode-reward normalisation before advantages (RAGEN `agent_proxy.reward_normalization`): v1's
// ARPO (identity), BRPO (batch mean_std) and GRPO (state mean_std) as grouping x method.
import { assertNever } from '../util/index.js';
import { checkLength, parseName, type Nums } from './shape.js';
import { groupIndices } from './outcome-advantage.js';

/** Which episodes are normalised together: same initial state (group id), the whole batch, or same env tag. */
export type RewardGrouping = 'state' | 'batch' | 'inductive';
/** How each set is normalised. */
export type RewardNormMethod = 'identity' | 'mean' | 'mean_std' | 'asym_clip';

export const REWARD_GROUPINGS: readonly RewardGrouping[] = ['state', 'batch', 'inductive'];
export const REWARD_NORM_METHODS: readonly RewardNormMethod[] = ['identity', 'mean', 'mean_std', 'asym_clip'];

/** Parses a reward grouping (`tag` is accepted for `inductive`). */
export function parseRewardGrouping(name: string): RewardGrouping {
  return parseName('reward normalisation grouping', name, REWARD_GROUPINGS, { tag: 'inductive' });
}

/** Parses a reward normalisation method. */
export function parseRewardNormMethod(name: string): RewardNormMethod {
  return parseName('reward normalisation method', name, REWARD_NORM_METHODS);
}

function normalizeSet(xs: number[], method: RewardNormMethod): number[] {
  const n = xs.length;
  const mean = xs.reduce((s, x) => s + x, 0) / n;
  // Unbiased std, as torch.std; undefined (NaN) for a single episode, which the `> 1e-6` test maps to 0.
  const std = n > 1 ? Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1)) : NaN;
  const z = (x: number): number => (std > 1e-6 ? (x - mean) / (std + 1e-6) : 0);
  switch (method) {
    case 'identity':
      return xs.slice();
    case 'mean':
      return xs.map((x) => x - mean);
    case 'mean_std':
      return xs.map(z);
    case 'asym_clip':
      return xs.map((x) => Math.min(3, Math.max(-1, z(x))));
    default:
      return assertNever(method, 'reward normalisation method');
  }
}

/**
 * Normalises one score per episode within its set (RAGEN ctx_manager `_normalize_score_tensor`):
 * - `identity`: x (ARPO, RAGEN's default);
 * - `mean`: x − μ;
 * - `mean_std`: (x − μ)/(σ + 1e-6), or 0 when σ ≤ 1e-6 (BRPO with grouping `batch`, GRPO with `state`);
 * - `asym_clip`: mean_std clamped to [−1, 3].
 * σ is the unbiased std. When every set has a single episode the scores are returned unchanged (as the
 * inventory records); otherwise a singleton set gets 0 under mean / mean_std / asym_clip.
 *
 * @param scores one score per episode (sum of turn rewards plus format penalty)
 * @param groupIds per episode, its group (used by `state`)
 * @param tags per episode, its env tag (used by `inductive`)
 */
export function normalizeRewards(a: {
  scores: Nums;
  grouping: RewardGrouping;
  method: RewardNormMethod;
  groupIds?: ArrayLike<number | string>;
  tags?: ArrayLike<string>;
}): Float64Array {
  const { scores, grouping, method } = a;
  const n = scores.length;
  let keys: ArrayLike<number | string>;
  switch (grouping) {
    case 'state':
      if (a.groupIds === undefined)
        throw new TypeError('normalizeRewards: grouping `state` needs `groupIds` (one per episode).');
      keys = a.groupIds;
      break;
    case 'batch':
      keys = new Array<number>(n).fill(0);
      break;
    case 'inductive':
      if (a.tags === undefined)
        throw new TypeError('normalizeRewards: grouping `inductive` needs `tags` (one env tag per episode).');
      keys = a.tags;
      break;
    default:
      return assertNever(grouping, 'reward grouping');
  }
  checkLength(grouping === 'inductive' ? 'tags' : 'groupIds', keys, n, 'one per episode');
  const out = Float64Array.from(scores);
  const sets = groupIndices(keys);
  if (sets.every((s) => s.length === 1)) return out;
  for (const set of sets) {
    const normed = normalizeSet(
      set.map((i) => scores[i]!),
      method,
    );
    set.forEach((i, j) => (out[i] = normed[j]!));
  }
  return out;
}
