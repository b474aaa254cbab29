// Prefill of batched generation: prompts sorted by length are processed in groups (each left-padded only to
// its own longest prompt, in time chunks bounded by a token budget), then copied right-aligned into the
// shared KV cache. Padding work is per group, not per batch.
import { concat, embedding, noGrad, tidy, type Tensor } from '../tensor/index.js';
import type { FusedWeights } from './fused.js';
import { KVCache } from './kv-cache.js';
import type { Transformer } from './transformer.js';

export interface PrefillOptions {
  fused?: FusedWeights | undefined;
  /** Most tokens (rows x chunk length) per forward pass. */
  maxTokens: number;
  /** Most attention-score floats per forward pass. */
  maxScoreFloats: number;
}

/**
 * Fill `cache` (row j = prompts[order[j]], `order` sorted by length, longest first; every prompt ends at
 * slot P = the longest length) and return the logits (B, V) of each row's last prompt token.
 */
export function prefill(
  model: Transformer,
  prompts: readonly (readonly number[])[],
  order: readonly number[],
  cache: KVCache,
  opts: PrefillOptions,
): Tensor {
  const P = prompts[order[0]!]!.length;
  const parts: Tensor[] = [];
  for (let j0 = 0; j0 < order.length;) {
    const Pg = prompts[order[j0]!]!.length;
    const n = Math.max(1, Math.min(order.length - j0, Math.floor(opts.maxTokens / Pg)));
    const group = order.slice(j0, j0 + n);
    const tmp = new KVCache(model.config, n, Pg);
    try {
      parts.push(
        prefillGroup(
          model,
          group.map((i) => prompts[i]!),
          tmp,
          opts,
        ),
      );
      cache.writeRows(tmp, j0, P - Pg);
    } finally {
      tmp.dispose();
    }
    j0 += n;
  }
  cache.length = P;
  if (parts.length === 1) return parts[0]!;
  const logits = noGrad(() => concat(parts, 0));
  for (const t of parts) t.dispose();
  return logits;
}

/** One group into its own cache (capacity = its longest prompt); logits (n, V) of the last tokens. */
function prefillGroup(
  model: Transformer,
  prompts: (readonly number[])[],
  cache: KVCache,
  opts: PrefillOptions,
): Tensor {
  const n = prompts.length;
  const P = cache.capacity;
  const pads = prompts.map((p) => P - p.length);
  let keyValid: Int32Array | undefined;
  if (pads.some((p) => p > 0)) {
    keyValid = new Int32Array(n * P);
    pads.forEach((pad, b) => keyValid!.fill(1, b * P + pad, (b + 1) * P));
  }
  const byScores = Math.floor(opts.maxScoreFloats / (n * model.config.numHeads * P));
  const chunk = Math.max(1, Math.min(byScores, Math.floor(opts.maxTokens / n)));
  let last: Tensor | null = null;
  for (let t0 = 0; t0 < P; t0 += chunk) {
    const T = Math.min(chunk, P - t0);
    const ids = new Int32Array(n * T);
    const positions = new Int32Array(n * T);
    prompts.forEach((p, b) => {
      for (let t = 0; t < T; t++) {
        const s = t0 + t - pads[b]!;
        ids[b * T + t] = s >= 0 ? p[s]! : 0;
        positions[b * T + t] = Math.max(0, s);
      }
    });
    const isLast = t0 + T === P;
    last = noGrad(() =>
      tidy(() => {
        const h = model.hidden(ids, n, T, { cache, positions, keyValid, fused: opts.fused });
        return isLast ? lastLogits(model, h, n, T) : null;
      }),
    );
  }
  return last!;
}

/** Logits (B, V) of each sequence's last position of hidden (B*T, C). */
export function lastLogits(model: Transformer, hidden: Tensor, B: number, T: number): Tensor {
  const rows =
    T === 1
      ? hidden
      : embedding(
          hidden,
          Int32Array.from({ length: B }, (_, b) => b * T + T - 1),
        );
  return model.logits(rows);
}
