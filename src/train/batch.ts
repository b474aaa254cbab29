// The trainer's batch plumbing on token-aligned (B, T) arrays (entry (b, t) describes token t; the layout of
// src/algo and of the engine seam alike): row subsets, reward edits, masked statistics.
import type { TokenBatch, TrainingSample } from '../agent/index.js';

/** Copy rows of a (B, T) array into a (rows.length, T) one. */
export function takeRows<A extends Float64Array | Float32Array | Uint8Array | Int32Array>(
  x: A,
  rows: readonly number[],
  T: number,
): A {
  const Ctor = x.constructor as new (n: number) => A;
  const out = new Ctor(rows.length * T);
  rows.forEach((r, i) => out.set(x.subarray(r * T, (r + 1) * T), i * T));
  return out;
}

/** The sub-batch of `rows` (same T), every per-token and per-row field copied. */
export function selectRows(batch: TokenBatch, rows: readonly number[]): TokenBatch {
  const T = batch.T;
  return {
    B: rows.length,
    T,
    ids: takeRows(batch.ids, rows, T),
    attentionMask: takeRows(batch.attentionMask, rows, T),
    lossMask: takeRows(batch.lossMask, rows, T),
    oldLogprobs: takeRows(batch.oldLogprobs, rows, T),
    rewards: takeRows(batch.rewards, rows, T),
    turnIds: takeRows(batch.turnIds, rows, T),
    groupIds: rows.map((r) => batch.groupIds[r]!),
    tags: rows.map((r) => batch.tags[r]!),
    scores: Float64Array.from(rows, (r) => batch.scores[r]!),
    lengths: Int32Array.from(rows, (r) => batch.lengths[r]!),
    episodeIds: Int32Array.from(rows, (r) => batch.episodeIds[r]!),
    ...(batch.images ? { images: rows.map((r) => batch.images![r]) } : {}),
  };
}

/**
 * Replace each episode's score by a normalised one (src/algo `normalizeRewards`) in its samples' token rewards.
 * With episode rewards every sample of the episode carries the score on its last loss token, which
 * becomes `normalized[episode]`; with turn rewards the delta goes on the last loss token of the sample
 * holding the episode's final turn, so the episode's rewards sum to the normalised score.
 */
export function applyEpisodeScores(
  samples: readonly TrainingSample[],
  scores: ArrayLike<number>,
  normalized: ArrayLike<number>,
  rewardMode: 'episode' | 'turn',
): TrainingSample[] {
  const lastTurn = new Map<number, number>();
  for (const s of samples) lastTurn.set(s.episode, Math.max(lastTurn.get(s.episode) ?? -1, ...s.turns));
  return samples.map((s) => {
    const delta = normalized[s.episode]! - scores[s.episode]!;
    if (delta === 0) return s;
    if (rewardMode === 'turn' && !s.turns.includes(lastTurn.get(s.episode)!)) return s;
    let pos = s.ids.length - 1; // the last loss token: where chainToSample puts the episode score / the final turn's reward
    while (pos > 0 && !s.lossMask[pos]) pos--;
    const rewards = s.rewards.slice();
    rewards[pos] = rewards[pos]! + delta;
    return { ...s, rewards, score: s.score + delta };
  });
}

/** Masked mean, min and max of a (B, T) array over the loss mask (zeros for an empty mask). */
export function maskedStats(x: ArrayLike<number>, mask: ArrayLike<number>): { mean: number; min: number; max: number } {
  let s = 0;
  let n = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < x.length; i++) {
    if (!mask[i]) continue;
    s += x[i]!;
    n++;
    min = Math.min(min, x[i]!);
    max = Math.max(max, x[i]!);
  }
  return n > 0 ? { mean: s / n, min, max } : { mean: 0, min: 0, max: 0 };
}
