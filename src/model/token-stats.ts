// Per-token log p(target) and entropy straight from hidden states and the output head, a chunk of rows at a time, so
// the (tokens, vocabulary) float32 logits never exist at once (151,936 columns for Qwen). With two or more chunks each
// is checkpointed: backward recomputes its logits (python/ragen_torch/token_stats.py does so for the torch engine).
import {
  checkpoint,
  concat,
  entropy,
  linear,
  logprobOfTarget,
  mul,
  narrow,
  tensor,
  type Tensor,
} from '../tensor/index.js';
import { sampledTargets, suppressLogits } from './suppress.js';

/** Bytes of float32 scratch one chunk may use (logits, their gradient and a softmax-sized temporary). */
export const DEFAULT_LOGITS_CHUNK_BYTES = 256 << 20;

/** Rows per chunk for a vocabulary of V under `chunkBytes` (3 x rows x V x 4 bytes), at least 1. */
export function rowsPerChunk(V: number, chunkBytes = DEFAULT_LOGITS_CHUNK_BYTES): number {
  return Math.max(1, Math.floor(chunkBytes / (3 * 4 * V)));
}

/**
 * hidden (N, C), head (V, C), targets (N) -> log p(target) (N) and / or entropy (N) of softmax(hidden head^T), each
 * differentiable in hidden and (when it needs a gradient) head; equal to `logprobOfTarget(linear(hidden, head))` and
 * `entropy(...)` of the whole logits, with at most `rowsPerChunk` rows of logits alive. With `suppressed` ids (a
 * VLM's vision tokens, suppress.ts) both are those of the distribution renormalized without them, the one its sampler
 * draws from; a target that is itself suppressed (a prompt's image token) gets log-prob 0 and no gradient.
 */
export function tokenStats(
  hidden: Tensor,
  head: Tensor,
  targets: Int32Array,
  want: { logprobs: boolean; entropy: boolean },
  chunkBytes = DEFAULT_LOGITS_CHUNK_BYTES,
  suppressed: Int32Array | null = null,
): { logprobs?: Tensor; entropy?: Tensor } {
  const [N, C] = hidden.shape as [number, number];
  const [V] = head.shape as [number];
  if (hidden.ndim !== 2 || head.ndim !== 2 || head.shape[1] !== C)
    throw new RangeError(`tokenStats: hidden [${hidden.shape}] and head [${head.shape}] must be (N, C) and (V, C)`);
  if (targets.length !== N) throw new RangeError(`tokenStats: ${targets.length} targets for ${N} rows`);
  if (!want.logprobs && !want.entropy) return {};
  // Suppression adds the masked logits and their gradient: 5 (n, V) buffers instead of 3.
  const rows = rowsPerChunk(V, suppressed ? (chunkBytes * 3) / 5 : chunkBytes);
  const stats = (h: Tensor, t: Int32Array): Tensor[] => {
    let logits = linear(h, head); // (n, V)
    const r: Tensor[] = [];
    if (suppressed) logits = suppressLogits(logits, suppressed);
    if (want.logprobs) {
      const lp = logprobOfTarget(logits, t);
      const sampled = suppressed ? sampledTargets(t, suppressed) : null;
      r.push(sampled?.includes(0) ? mul(lp, tensor(sampled)) : lp);
    }
    if (want.entropy) r.push(entropy(logits));
    return r;
  };
  // One chunk: keep its logits for backward instead of recomputing them (one (N, V, C) product less). Backward starts at
  // the head, where a recompute would allocate them again, so the peak is the same; only a shared prefix's logits
  // (tokenForward) stay through the rows' pass, at most chunkBytes / 3 more.
  if (N <= rows) {
    const outs = stats(hidden, targets);
    return { ...(want.logprobs ? { logprobs: outs[0]! } : {}), ...(want.entropy ? { entropy: outs.at(-1)! } : {}) };
  }
  const params = head.requiresGrad ? [head] : [];
  const lp: Tensor[] = [];
  const ent: Tensor[] = [];
  for (let s = 0; s < N; s += rows) {
    const n = Math.min(rows, N - s);
    const t = targets.subarray(s, s + n);
    const outs = checkpoint((h) => stats(h, t), [narrow(hidden, 0, s, n)], params); // (n, C) rows
    if (want.logprobs) lp.push(outs[0]!);
    if (want.entropy) ent.push(outs[want.logprobs ? 1 : 0]!);
  }
  const join = (parts: Tensor[]) => (parts.length === 1 ? parts[0]! : concat(parts, 0));
  return {
    ...(want.logprobs ? { logprobs: join(lp) } : {}),
    ...(want.entropy ? { entropy: join(ent) } : {}),
  };
}
