// `top_logprobs`: the k most likely tokens at each generated position. The Engine seam returns only the
// sampled token's log-prob, so engines that can score alternatives plug in a TopLogprobsSource (local: below).
import { embedding, noGrad, tidy } from '../tensor/index.js';
import { suppressRow, type Transformer } from '../model/index.js';

/** One alternative at a position: token id and its log-prob at temperature 1. */
export interface TopLogprob {
  id: number;
  logprob: number;
}

/** The `k` most likely tokens (descending) at each position where `completion` was sampled after `prompt`. */
export type TopLogprobsSource = (
  prompt: readonly number[],
  completion: readonly number[],
  k: number,
) => Promise<TopLogprob[][]>;

/**
 * Top log-probs from a teacher-forced pass of a local model over prompt + completion: log-softmax of the logits
 * at the positions that predicted each completion token (the distribution the token was sampled from, at T = 1).
 */
export function localTopLogprobs(model: Transformer): TopLogprobsSource {
  return async (prompt, completion, k) => {
    if (completion.length === 0 || k === 0) return completion.map(() => []);
    const ids = Int32Array.from([...prompt, ...completion.slice(0, -1)]);
    const T = ids.length;
    const rows = Int32Array.from(completion, (_, i) => prompt.length - 1 + i);
    let logits: Float32Array | undefined;
    noGrad(() => tidy(() => void (logits = model.logits(embedding(model.hidden(ids, 1, T), rows)).toFloat32Array())));
    const V = model.config.vocabSize;
    // A VLM's vision tokens are outside the distribution its tokens were sampled from.
    if (model.suppressedTokens)
      for (let i = 0; i < completion.length; i++) suppressRow(logits!, i * V, model.suppressedTokens);
    return completion.map((_, i) => topK(logits!.subarray(i * V, (i + 1) * V), k));
  };
}

/** The k largest entries of a logit row as log-softmax values, descending (ties: lower id first). */
export function topK(z: Float32Array, k: number): TopLogprob[] {
  let max = -Infinity;
  for (const v of z) if (v > max) max = v;
  let sum = 0;
  for (const v of z) sum += Math.exp(v - max);
  const logZ = max + Math.log(sum);
  const order = Array.from(z.keys())
    .sort((a, b) => z[b]! - z[a]! || a - b)
    .slice(0, k);
  return order.map((id) => ({ id, logprob: z[id]! - logZ }));
}
