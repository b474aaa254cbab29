// Critic-free advantages from outcome rewards: GRPO, Dr. GRPO, RLOO, REINFORCE++ (with and without a
// group baseline). One score per sequence = the sum of its token rewards, broadcast over its loss mask.
import { ShapeError } from '../util/index.js';
import { broadcastOverMask, checkLength, checkTokens, seqSums, type TokenMask, type Nums } from './shape.js';

/** A group key per sequence (same seed / same initial state = same group). Numbers or strings. */
export type GroupKeys = ArrayLike<number | string>;

/** Indices of each group, in order of first appearance. */
export function groupIndices(keys: GroupKeys): number[][] {
  const map = new Map<number | string, number[]>();
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    let list = map.get(k);
    if (list === undefined) map.set(k, (list = []));
    list.push(i);
  }
  return [...map.values()];
}

/** Per-group statistics of a per-sequence score, with each episode counted once. */
interface GroupMoments {
  mean: Float64Array; // per sequence: its group's mean
  std: Float64Array; // per sequence: its group's unbiased std (n−1)
  size: Float64Array; // per sequence: its group's number of distinct episodes
}

function groupMoments(scores: Float64Array, groupIds: GroupKeys, episodeIds?: GroupKeys): GroupMoments {
  const B = scores.length;
  checkLength('groupIds', groupIds, B);
  if (episodeIds !== undefined) checkLength('episodeIds', episodeIds, B);
  const mean = new Float64Array(B);
  const std = new Float64Array(B);
  const size = new Float64Array(B);
  for (const members of groupIndices(groupIds)) {
    // With episodeIds (per-turn rows), each (group, episode) pair contributes once, as in RAGEN.
    const seen = new Set<number | string>();
    const xs: number[] = [];
    for (const i of members) {
      if (episodeIds !== undefined) {
        const e = episodeIds[i]!;
        if (seen.has(e)) continue;
        seen.add(e);
      }
      xs.push(scores[i]!);
    }
    const n = xs.length;
    const m = xs.reduce((s, x) => s + x, 0) / n;
    const sd = n > 1 ? Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (n - 1)) : NaN;
    for (const i of members) {
      mean[i] = m;
      std[i] = sd;
      size[i] = n;
    }
  }
  return { mean, std, size };
}

/** Output of the outcome estimators: per-token advantages and returns, plus per-sequence values. */
export interface OutcomeAdvantage {
  /** (B, T) flat, the sequence's advantage on its loss tokens, 0 elsewhere. */
  advantages: Float64Array;
  /** (B, T) flat; equal to `advantages` for GRPO/RLOO (as veRL), discounted returns for REINFORCE++. */
  returns: Float64Array;
  /** Per sequence: its scalar advantage (before broadcasting). */
  seqAdvantages: Float64Array;
}

interface OutcomeInput {
  /** (B, T) token rewards; a sequence's score is their sum over all T. */
  rewards: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  /** Per sequence: its group (GRPO's `uid`; RAGEN's group_ids). */
  groupIds: GroupKeys;
  /** Per sequence, in per-turn layouts: its episode, so that each episode counts once in group stats. */
  episodeIds?: GroupKeys;
}

/**
 * GRPO's outcome advantage (Shao et al. 2024, DeepSeekMath §4.1.2): A_i = (s_i − mean_g) / (std_g + eps)
 * with the unbiased std of the group, broadcast over the loss mask. A singleton group uses mean 0 and
 * std 1 (as veRL/RAGEN). `normByStd=false` is Dr. GRPO (Liu et al. 2025): A_i = s_i − mean_g.
 * A group whose rewards tie gets advantage 0. Also returns each sequence's group std (for soft
 * reweighting).
 */
export function grpoAdvantage(
  a: OutcomeInput & { eps?: number; normByStd?: boolean },
): OutcomeAdvantage & { groupStd: Float64Array } {
  const { rewards, mask, B, T, groupIds, episodeIds } = a;
  const eps = a.eps ?? 1e-6;
  const normByStd = a.normByStd ?? true;
  checkTokens('rewards', rewards, B, T);
  const scores = seqSums(rewards, B, T);
  const { mean, std, size } = groupMoments(scores, groupIds, episodeIds);
  const seqAdvantages = new Float64Array(B);
  const groupStd = new Float64Array(B);
  for (let i = 0; i < B; i++) {
    const single = size[i] === 1;
    const m = single ? 0 : mean[i]!;
    const sd = single ? 1 : std[i]!;
    groupStd[i] = sd;
    seqAdvantages[i] = normByStd ? (scores[i]! - m) / (sd + eps) : scores[i]! - m;
  }
  const advantages = broadcastOverMask(seqAdvantages, mask, B, T);
  return { advantages, returns: advantages.slice(), seqAdvantages, groupStd };
}

/**
 * RLOO (Kool et al. 2019; Ahmadian et al. 2024): A_i = s_i − mean of the other n−1 scores in the group
 * = n/(n−1)·(s_i − mean_g); a singleton group keeps A_i = s_i (as veRL). Broadcast over the loss mask.
 */
export function rlooAdvantage(a: OutcomeInput): OutcomeAdvantage {
  const { rewards, mask, B, T, groupIds, episodeIds } = a;
  checkTokens('rewards', rewards, B, T);
  const scores = seqSums(rewards, B, T);
  const { mean, size } = groupMoments(scores, groupIds, episodeIds);
  const seqAdvantages = new Float64Array(B);
  for (let i = 0; i < B; i++) {
    const n = size[i]!;
    seqAdvantages[i] = n > 1 ? (n / (n - 1)) * (scores[i]! - mean[i]!) : scores[i]!;
  }
  const advantages = broadcastOverMask(seqAdvantages, mask, B, T);
  return { advantages, returns: advantages.slice(), seqAdvantages };
}

/**
 * REINFORCE++ with a group baseline (veRL `reinforce_plus_plus_baseline`): A_i = s_i − mean_g
 * (singleton: mean 0), broadcast over the loss mask. veRL then whitens over the batch; so does
 * `computeAdvantage` (not this function).
 */
export function reinforcePPBaselineAdvantage(a: OutcomeInput): OutcomeAdvantage {
  const { rewards, mask, B, T, groupIds, episodeIds } = a;
  checkTokens('rewards', rewards, B, T);
  const scores = seqSums(rewards, B, T);
  const { mean, size } = groupMoments(scores, groupIds, episodeIds);
  const seqAdvantages = new Float64Array(B);
  for (let i = 0; i < B; i++) seqAdvantages[i] = scores[i]! - (size[i] === 1 ? 0 : mean[i]!);
  const advantages = broadcastOverMask(seqAdvantages, mask, B, T);
  return { advantages, returns: advantages.slice(), seqAdvantages };
}

/**
 * REINFORCE++ (Hu 2025): per-token discounted return G_t = r_t + γ·G_next over the loss tokens
 * (advantage = return; `computeAdvantage` whitens it over the batch, as veRL).
 *
 * Difference from veRL's `reinforce_plus_plus`: veRL resets the running return to 0 after every token
 * off the mask, so in a multi-turn sequence the earlier turns never see the final reward. Here tokens
 * off the mask are skipped (the return is carried through them undiscounted, as in veRL's GAE), and a
 * non-zero reward off the mask is an error. `seqAdvantages` holds each sequence's return at its first
 * loss token.
 */
export function reinforcePPAdvantage(a: {
  rewards: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  gamma: number;
}): OutcomeAdvantage {
  const { rewards, mask, B, T, gamma } = a;
  checkTokens('rewards', rewards, B, T);
  checkTokens('mask', mask, B, T);
  const advantages = new Float64Array(B * T);
  const seqAdvantages = new Float64Array(B);
  for (let b = 0; b < B; b++) {
    let g = 0;
    for (let t = T - 1; t >= 0; t--) {
      const i = b * T + t;
      if (!mask[i]) {
        if (rewards[i] !== 0)
          throw new ShapeError(
            `reward ${rewards[i]} at (b=${b}, t=${t}) lies off the loss mask; place it on a policy token.`,
          );
        continue;
      }
      g = rewards[i]! + gamma * g;
      advantages[i] = g;
      seqAdvantages[b] = g;
    }
  }
  return { advantages, returns: advantages.slice(), seqAdvantages };
}
