// Off-policy correction of asynchronous rollouts: truncated importance weights between the policy that
// sampled a token (behaviour μ, possibly some versions old) and the proximal policy π_old of the update.

import type { Nums, TokenMask } from './shape.js';

/** Inputs of `truncatedImportanceWeights`, token-aligned (B*T). */
export interface ImportanceInput {
  /** log μ(token): the exact log-probs recorded when the token was sampled (temperature 1). */
  behaviorLogprobs: Nums;
  /** log π_old(token): the current policy before this step's update (the PPO ratio's denominator). */
  proxLogprobs: Nums;
  mask: TokenMask;
  /** Truncation C > 0: weights are min(π_old / μ, C). */
  cap: number;
}

/** Per-token weights (0 off the mask) and their summary over the mask. */
export interface ImportanceWeights {
  weights: Float64Array;
  /** Mean weight over loss tokens (after truncation). */
  mean: number;
  /** Fraction of loss tokens whose ratio π_old / μ exceeded C (and was cut to C). */
  truncatedFrac: number;
  /** Mean of log μ − log π_old over loss tokens: a k1 estimate of KL(μ ‖ π_old), how far the samples lag. */
  behaviorKl: number;
}

/**
 * Truncated importance sampling per token: w_t = min(π_old(a_t) / μ(a_t), C), the truncation ρ̄ of IMPALA's
 * V-trace (Espeholt et al. 2018, section 4.1) applied to the PPO surrogate the way decoupled PPO separates the
 * behaviour policy from the proximal one (Hilton et al. 2022, "Batch size-invariance for policy optimization";
 * used for stale rollouts by AReaL, Fu et al. 2025) and as veRL's truncated importance sampling (TIS) for
 * sampler/trainer mismatch (Yao et al. 2025). The trainer multiplies each loss token's advantage by w_t, which
 * for w_t ≥ 0 equals weighting that token's clipped PPO loss: max(−wA·r, −wA·clip(r)) = w·max(−A·r, −A·clip(r)).
 * Truncating at C bounds the variance a very unlikely behaviour token would add; tokens sampled by the current
 * policy (μ = π_old) get weight 1.
 */
export function truncatedImportanceWeights(x: ImportanceInput): ImportanceWeights {
  if (!(x.cap > 0)) throw new RangeError(`truncatedImportanceWeights: cap must be > 0, got ${x.cap}`);
  const n = x.mask.length;
  if (x.behaviorLogprobs.length !== n || x.proxLogprobs.length !== n) {
    throw new RangeError(
      `truncatedImportanceWeights: behaviorLogprobs (${x.behaviorLogprobs.length}), proxLogprobs (${x.proxLogprobs.length}) and mask (${n}) must have one entry per token`,
    );
  }
  const weights = new Float64Array(n);
  let count = 0;
  let sum = 0;
  let truncated = 0;
  let kl = 0;
  const logCap = Math.log(x.cap);
  for (let i = 0; i < n; i++) {
    if (!x.mask[i]) continue;
    const logRatio = x.proxLogprobs[i]! - x.behaviorLogprobs[i]!;
    const w = logRatio > logCap ? x.cap : Math.exp(logRatio);
    if (logRatio > logCap) truncated++;
    weights[i] = w;
    sum += w;
    kl -= logRatio;
    count++;
  }
  return {
    weights,
    mean: count > 0 ? sum / count : 1,
    truncatedFrac: count > 0 ? truncated / count : 0,
    behaviorKl: count > 0 ? kl / count : 0,
  };
}
