// The trainer's batch plumbing: engine outputs (one array per sequence, position t scoring token t+1) to and
// from src/algo's token-aligned (B, T) layout (entry (b, t) describes token t), row subsets, reward edits.
import type { TokenBatch, TrainingSample } from '../agent/index.js';

/**
 * Engine per-sequence outputs -> a (B, T) token-aligned Float64Array: `out[b*T + t] = perSeq[b][t - 1]`
 * (the log-prob, entropy or value that position t - 1 assigns to / computes before token t); 0 at t = 0.
 * `rows[i]` says which row of the (B, T) array sequence i fills (default: row i).
 */
export function toTokenLayout(perSeq: readonly ArrayLike<number>[], B: number, T: number, rows?: readonly number[]): Float64Array {
  const out = new Float64Array(B * T);
  perSeq.forEach((seq, i) => {
    const o = (rows ? rows[i]! : i) * T;
    for (let t = 1; t <= seq.length && t < T; t++) out[o + t] = seq[t - 1]!;
  });
  return out;
}

/** The inverse of `toTokenLayout` for gradients: row b of the (B, T) array -> `length_b - 1` engine entries. */
export function toEngineLayout(flat: ArrayLike<number>, lengths: ArrayLike<number>, T: number): Float32Array[] {
  const out: Float32Array[] = [];
  for (let b = 0; b < lengths.length; b++) {
    const n = Math.max(0, lengths[b]! - 1);
    const g = new Float32Array(n);
    for (let t = 1; t <= n; t++) g[t - 1] = flat[b * T + t]!;
    out.push(g);
  }
  return out;
}

/** Copy rows of a (B, T) array into a (rows.length, T) one. */
export function takeRows<A extends Float64Array | Float32Array | Uint8Array | Int32Array>(x: A, rows: readonly number[], T: number): A {
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
    scores: Float64Array.from(rows, (r) => batch.scores[r]!),
    lengths: Int32Array.from(rows, (r) => batch.lengths[r]!),
    episodeIds: Int32Array.from(rows, (r) => batch.episodeIds[r]!),
  };
}

/** The unpadded token ids of each row, what engine calls take. */
export function rowSequences(batch: TokenBatch, rows?: readonly number[]): number[][] {
  const idx = rows ?? Array.from({ length: batch.B }, (_, b) => b);
  return idx.map((b) => Array.from(batch.ids.subarray(b * batch.T, b * batch.T + batch.lengths[b]!)));
}

/**
 * Replace each episode's score by a normalised one (src/algo `normalizeRewards`) in its samples' token rewards.
 * With episode rewards every sample of the episode carries the score on its last loss token, which
 * becomes `normalized[episode]`; with turn rewards the delta goes on the last loss token of the sample
 * holding the episode's final turn, so the episode's rewards sum to the normalised score.
 */
export function applyEpisodeScores(samples: readonly TrainingSample[], scores: ArrayLike<number>, normalized: ArrayLike<number>, rewardMode: 'episode' | 'turn'): TrainingSample[] {
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
