// Token ids a model never samples (Hugging Face's `suppress_tokens`): a vision-language model's vision tokens, which
// only the processor writes. Their logits are set to SUPPRESSED_LOGIT before sampling and in the teacher-forced pass,
// so the distribution a token is sampled from and the one training scores it under are the same, renormalized
// without them.
import { add, tensor, type Tensor } from '../tensor/index.js';

/**
 * The logit a suppressed id gets: softmax gives it exactly 0 and `0 * logit` stays 0 (an entropy term), where
 * -Infinity would make that NaN.
 */
export const SUPPRESSED_LOGIT = -1e30;

/** logits (N, V) with the columns `ids` at SUPPRESSED_LOGIT (a constant: no gradient reaches them). */
export function suppressLogits(logits: Tensor, ids: Int32Array): Tensor {
  const V = logits.shape.at(-1)!;
  const bias = new Float32Array(V);
  for (const id of ids) bias[id] = SUPPRESSED_LOGIT;
  return add(logits, tensor(bias, [V]));
}

/** Row `z[off, off + V)` of logits with the columns `ids` at SUPPRESSED_LOGIT, in place. */
export function suppressRow(z: Float32Array, off: number, ids: Int32Array): void {
  for (const id of ids) z[off + id] = SUPPRESSED_LOGIT;
}

/**
 * 1 where the target is not suppressed, 0 where it is (the prompt's vision tokens): a teacher-forced log-prob is
 * reported only where the policy could have sampled the target; elsewhere it is 0 and carries no gradient.
 */
export function sampledTargets(targets: Int32Array, ids: Int32Array): Float32Array {
  const out = new Float32Array(targets.length).fill(1);
  const set = new Set(ids);
  targets.forEach((t, i) => {
    if (set.has(t)) out[i] = 0;
  });
  return out;
}
