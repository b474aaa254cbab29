// The sampler/trainer mismatch inside a step: the `mismatch/*` metrics (always) and, under `algo.rolloutCorrection`,
// importance weights π_old/μ on the advantages (src/algo/mismatch.ts, src/algo/rollout-correction.ts).
import type { TokenBatch } from '../agent/index.js';
import { mismatchStats, mismatchStatsByTag, rolloutCorrection } from '../algo/index.js';
import type { RagenConfig } from '../config/index.js';
import { mismatchTagMetric, type MetricValues } from '../metrics/index.js';

/**
 * Logs `mismatch/*` between the sampler's log-probs (`tokens.oldLogprobs`, μ) and the π_old the update anchors on
 * (`oldLogprobs`: the trainer's recompute, or the sampler's own numbers when `algo.recomputeOldLogprobs` reuses them,
 * where every statistic is exactly 0), overall and per source (`mismatch/<tag>/*`: each `env.train` entry's rows; a
 * tag with no loss token in the kept rows writes none), then returns the advantages times the correction weights (unchanged when
 * `correction.mode` is `off` and no `rejectBound` is set).
 */
export function correctMismatch(
  advantages: Float64Array,
  tokens: TokenBatch,
  oldLogprobs: ArrayLike<number>,
  correction: RagenConfig['algo']['rolloutCorrection'],
  metrics: MetricValues,
): Float64Array {
  const { B, T, lossMask: mask } = tokens;
  const m = mismatchStats({
    behaviorLogprobs: tokens.oldLogprobs,
    trainerLogprobs: oldLogprobs,
    mask,
    B,
    T,
    threshold: correction.threshold,
  });
  Object.assign(metrics, {
    'mismatch/log_ratio_mean': m.logRatioMean,
    'mismatch/log_ratio_abs_mean': m.logRatioAbsMean,
    'mismatch/log_ratio_abs_max': m.logRatioAbsMax,
    'mismatch/k3_kl': m.k3Kl,
    'mismatch/frac_ratio_high': m.fracHigh,
    'mismatch/frac_ratio_low': m.fracLow,
  } satisfies MetricValues);
  const byTag = mismatchStatsByTag({
    behaviorLogprobs: tokens.oldLogprobs,
    trainerLogprobs: oldLogprobs,
    mask,
    tags: tokens.tags,
    B,
    T,
    threshold: correction.threshold,
  });
  for (const [tag, t] of byTag)
    Object.assign(metrics, {
      [mismatchTagMetric(tag, 'log_ratio_abs_mean')]: t.logRatioAbsMean,
      [mismatchTagMetric(tag, 'log_ratio_abs_max')]: t.logRatioAbsMax,
      [mismatchTagMetric(tag, 'k3_kl')]: t.k3Kl,
      [mismatchTagMetric(tag, 'frac_ratio_high')]: t.fracHigh,
      [mismatchTagMetric(tag, 'frac_ratio_low')]: t.fracLow,
    } satisfies MetricValues);
  if (correction.mode === 'off' && correction.rejectBound === null) return advantages;
  const c = rolloutCorrection(
    { behaviorLogprobs: tokens.oldLogprobs, proxLogprobs: oldLogprobs, mask, B, T },
    correction,
  );
  Object.assign(metrics, {
    'mismatch/is_weight_mean': c.stats.weightMean,
    'mismatch/is_token_frac': c.stats.tokenFrac,
    'mismatch/is_seq_frac': c.stats.seqFrac,
    'mismatch/rejected_seq_frac': c.stats.rejectedSeqFrac,
  } satisfies MetricValues);
  const out = Float64Array.from(advantages);
  for (let i = 0; i < out.length; i++) out[i]! *= c.weights[i]!;
  return out;
}
