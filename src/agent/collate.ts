// Training samples -> the padded (B, T) row-major arrays every src/algo function takes
// (element (b, t) at index b*T + t; padding has mask 0), plus per-sequence group keys and scores.
import type { SequenceBatch } from '../engine/index.js';
import type { TrainingSample } from './sequence.js';

/**
 * A right-padded batch of training samples: the engine seam's `SequenceBatch` (ids, attention mask, lengths) plus
 * the trainer's per-token arrays, all token-aligned (see TrainingSample).
 */
export interface TokenBatch extends SequenceBatch {
  /** 1 on sampled (trained) tokens. */
  lossMask: Uint8Array;
  /** Log-probs at sampling (the PPO ratio's denominator), 0 off the loss mask. */
  oldLogprobs: Float32Array;
  /** Token-level rewards, non-zero only on loss tokens. */
  rewards: Float32Array;
  /** Turn index of each sampled token, -1 elsewhere (for turn-level estimators). */
  turnIds: Int32Array;
  /** Per row: the group key (`${tag}/${group}`) outcome advantages normalise within (src/algo's `groupIds`). */
  groupIds: string[];
  /** Per row: the metric tag of its source (the `env.train` entry: a built-in env's tag or an agent entry's name). */
  tags: string[];
  /** Per row: the sequence score (sum of its rewards). */
  scores: Float64Array;
  /** Per row: the episode index in the rollout batch (src/algo's `episodeIds` for per-turn samples). */
  episodeIds: Int32Array;
}

/** Pad `samples` to the longest (or to `T` when given; longer samples are an error). */
export function collate(samples: readonly TrainingSample[], padId: number, T?: number): TokenBatch {
  const B = samples.length;
  const longest = samples.reduce((m, s) => Math.max(m, s.ids.length), 0);
  const width = T ?? longest;
  if (longest > width)
    throw new RangeError(
      `collate: a sample has ${longest} tokens, more than T = ${width}; raise T or lower agent.maxContextTokens.`,
    );
  const batch: TokenBatch = {
    B,
    T: width,
    ids: new Int32Array(B * width).fill(padId),
    attentionMask: new Uint8Array(B * width),
    lossMask: new Uint8Array(B * width),
    oldLogprobs: new Float32Array(B * width),
    rewards: new Float32Array(B * width),
    turnIds: new Int32Array(B * width).fill(-1),
    groupIds: samples.map((s) => `${s.tag}/${s.group}`),
    tags: samples.map((s) => s.tag),
    scores: Float64Array.from(samples, (s) => s.score),
    lengths: Int32Array.from(samples, (s) => s.ids.length),
    episodeIds: Int32Array.from(samples, (s) => s.episode),
    ...(samples.some((s) => s.images && s.images.length > 0) ? { images: samples.map((s) => s.images) } : {}),
  };
  samples.forEach((s, b) => {
    const o = b * width;
    for (let t = 0; t < s.ids.length; t++) {
      batch.ids[o + t] = s.ids[t]!;
      batch.attentionMask[o + t] = 1;
      batch.lossMask[o + t] = s.lossMask[t]!;
      batch.oldLogprobs[o + t] = s.logprobs[t]!;
      batch.rewards[o + t] = s.rewards[t]!;
      batch.turnIds[o + t] = s.turnIds[t]!;
    }
  });
  return batch;
}
