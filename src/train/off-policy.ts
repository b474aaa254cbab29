// Async rollouts' off-policy correction inside a step: per-token staleness (policy versions between the sampler
// and the update) and truncated importance weights on the stale tokens' advantages (src/algo/importance.ts).
import type { TokenBatch } from '../agent/index.js';
import { truncatedImportanceWeights } from '../algo/index.js';
import type { MetricValues } from '../metrics/index.js';

/**
 * How stale each sampled token is (async rollouts): `versionOf(episode, turn)` is the policy version that sampled
 * that turn, `current` the version being updated; stale tokens get truncated importance weights.
 */
export interface OffPolicyInfo {
  versionOf: (episode: number, turn: number) => number;
  current: number;
  /** Truncation C of min(π_old / μ, C). */
  importanceCap: number;
}

/** Versions between the policy that sampled each loss token and the one being updated (0 off the mask). */
export function tokenStaleness(tokens: TokenBatch, info: OffPolicyInfo): Int32Array {
  const { B, T } = tokens;
  const out = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    const episode = tokens.episodeIds[b]!;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (!tokens.lossMask[i]) continue;
      const lag = info.current - info.versionOf(episode, tokens.turnIds[i]!);
      if (lag < 0)
        throw new Error(
          `token ${i} was sampled by policy version ${info.current - lag}, newer than the version being updated (${info.current})`,
        );
      out[i] = lag;
    }
  }
  return out;
}

/**
 * Advantages of stale tokens times min(π_old / μ, C), with μ the sampler's exact log-probs (`tokens.oldLogprobs`)
 * and π_old the current policy's (`oldLogprobs`). Fresh tokens keep weight 1 exactly (μ is π_old there), so a step
 * without stale tokens is the synchronous one. Logs the `async/*` metrics.
 */
export function correctOffPolicy(
  advantages: Float64Array,
  tokens: TokenBatch,
  oldLogprobs: Float32Array | Float64Array,
  staleness: Int32Array,
  info: OffPolicyInfo,
  metrics: MetricValues,
): Float64Array {
  const staleMask = Uint8Array.from(staleness, (s) => (s > 0 ? 1 : 0));
  const w = truncatedImportanceWeights({
    behaviorLogprobs: tokens.oldLogprobs,
    proxLogprobs: oldLogprobs,
    mask: staleMask,
    cap: info.importanceCap,
  });
  let loss = 0;
  let staleCount = 0;
  let sum = 0;
  let max = 0;
  for (let i = 0; i < staleness.length; i++) {
    if (!tokens.lossMask[i]) continue;
    loss++;
    sum += staleness[i]!;
    max = Math.max(max, staleness[i]!);
    if (staleness[i]! > 0) staleCount++;
  }
  Object.assign(metrics, {
    'async/staleness_mean': loss > 0 ? sum / loss : 0,
    'async/staleness_max': max,
    'async/stale_token_frac': loss > 0 ? staleCount / loss : 0,
    'async/is_weight_mean': w.mean,
    'async/is_truncated_frac': w.truncatedFrac,
    'async/behavior_kl': w.behaviorKl,
  } satisfies MetricValues);
  if (staleCount === 0) return advantages;
  const out = Float64Array.from(advantages);
  for (let i = 0; i < out.length; i++) if (staleMask[i]) out[i]! *= w.weights[i]!;
  return out;
}
