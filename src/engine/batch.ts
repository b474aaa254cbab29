// Building the engine seam's batch from plain id lists (tools, tests, the SFT and collapse passes); the trainer's
// own TokenBatch (src/agent collate) already is one.
import type { SequenceBatch } from './types.js';

/**
 * Right-pad `sequences` (each at least one token) with `padId` into a `SequenceBatch` as wide as the longest (or `T`).
 */
export function sequenceBatch(sequences: readonly (readonly number[])[], padId = 0, T?: number): SequenceBatch {
  const longest = sequences.reduce((m, s) => Math.max(m, s.length), 0);
  const width = T ?? longest;
  if (sequences.length === 0 || sequences.some((s) => s.length === 0))
    throw new RangeError(
      `sequenceBatch: need one or more non-empty sequences, got lengths [${sequences.map((s) => s.length)}]`,
    );
  if (longest > width) throw new RangeError(`sequenceBatch: a sequence has ${longest} tokens, more than T = ${width}`);
  const B = sequences.length;
  const ids = new Int32Array(B * width).fill(padId);
  const attentionMask = new Uint8Array(B * width);
  sequences.forEach((s, b) => {
    ids.set(s, b * width);
    attentionMask.fill(1, b * width, b * width + s.length);
  });
  return { B, T: width, ids, attentionMask, lengths: Int32Array.from(sequences, (s) => s.length) };
}

/** Row b's tokens (unpadded). */
export function rowTokens(batch: SequenceBatch, b: number): Int32Array {
  return batch.ids.subarray(b * batch.T, b * batch.T + batch.lengths[b]!);
}
