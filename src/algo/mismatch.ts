// Sampler/trainer mismatch: how far the log-probs the sampler recorded (μ, the rollout policy) are from the trainer's
// own log-probs of the same tokens (π, the policy the update anchors on), per token and summarised per step.
import { checkLength, checkTokens, type Nums, type TokenMask } from './shape.js';

/** Summary of log π − log μ over the loss tokens of a (B, T) batch. All 0 on an empty mask. */
export interface MismatchStats {
  /** Mean of δ = log π − log μ (its negative is the k1 estimate of KL(μ ‖ π) on μ's samples). */
  logRatioMean: number;
  /** Mean of |δ|. */
  logRatioAbsMean: number;
  /** Largest |δ|. */
  logRatioAbsMax: number;
  /** Mean of e^δ − 1 − δ: the k3 estimate of KL(μ ‖ π) (Schulman 2020), ≥ 0 token by token. */
  k3Kl: number;
  /** Fraction of tokens with ratio π/μ above `threshold`. */
  fracHigh: number;
  /** Fraction of tokens with ratio π/μ below 1/`threshold`. */
  fracLow: number;
  /** Loss tokens the means are over. */
  tokens: number;
}

/**
 * Token-level mismatch between the sampler's log-probs `behaviorLogprobs` (μ) and the trainer's `trainerLogprobs` (π)
 * of the same sampled tokens, over the loss mask. The statistics are those veRL's rollout correction logs as
 * `rollout_corr/*` (docs/algo/rollout_corr.md: `kl`, `k3_kl`, `rollout_is_ratio_fraction_high/low`; Liu, Li et al.
 * 2025, "When Speed Kills Stability: Demystifying RL Collapse from the Training-Inference Mismatch"), plus the mean and
 * largest |δ|. `threshold` C > 1 sets the ratio band [1/C, C] the two fractions count outside of. No exp of a large δ
 * is taken except in k3, which is what it measures.
 */
export function mismatchStats(a: {
  behaviorLogprobs: Nums;
  trainerLogprobs: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  threshold: number;
}): MismatchStats {
  const { behaviorLogprobs, trainerLogprobs, mask, B, T, threshold } = a;
  checkTokens('behaviorLogprobs', behaviorLogprobs, B, T);
  checkTokens('trainerLogprobs', trainerLogprobs, B, T);
  checkTokens('mask', mask, B, T);
  if (!(threshold > 1)) throw new RangeError(`mismatchStats: threshold must be > 1, got ${threshold}.`);
  const logC = Math.log(threshold);
  let n = 0;
  let sum = 0;
  let abs = 0;
  let max = 0;
  let k3 = 0;
  let high = 0;
  let low = 0;
  for (let i = 0; i < B * T; i++) {
    if (!mask[i]) continue;
    const d = trainerLogprobs[i]! - behaviorLogprobs[i]!;
    n++;
    sum += d;
    abs += Math.abs(d);
    max = Math.max(max, Math.abs(d));
    k3 += Math.expm1(d) - d;
    if (d > logC) high++;
    if (d < -logC) low++;
  }
  const mean = (x: number): number => (n > 0 ? x / n : 0);
  return {
    logRatioMean: mean(sum),
    logRatioAbsMean: mean(abs),
    logRatioAbsMax: max,
    k3Kl: mean(k3),
    fracHigh: mean(high),
    fracLow: mean(low),
    tokens: n,
  };
}

/**
 * `mismatchStats` of each source of the batch: `tags[b]` names row b's source (its `env.train` entry's metric tag),
 * and each tag's statistics are those of its rows' loss tokens alone. A tag whose rows hold no loss token is left out
 * (nothing of it was trained, so there is no mismatch to measure). Tags come in first-row order.
 */
export function mismatchStatsByTag(a: {
  behaviorLogprobs: Nums;
  trainerLogprobs: Nums;
  mask: TokenMask;
  tags: readonly string[];
  B: number;
  T: number;
  threshold: number;
}): Map<string, MismatchStats> {
  const { mask, tags, B, T } = a;
  checkTokens('mask', mask, B, T);
  checkLength('tags', tags, B);
  const out = new Map<string, MismatchStats>();
  for (const tag of new Set(tags)) {
    const own = new Uint8Array(B * T);
    for (let b = 0; b < B; b++)
      if (tags[b] === tag) for (let t = 0; t < T; t++) own[b * T + t] = mask[b * T + t] ? 1 : 0;
    const s = mismatchStats({ ...a, mask: own });
    if (s.tokens > 0) out.set(tag, s);
  }
  return out;
}
