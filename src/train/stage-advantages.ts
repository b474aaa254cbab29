// Stage advantages: token rewards (minus the in-reward KL penalty), the configured estimator (src/algo
// `computeAdvantage`), then the modifiers (RAGEN-2's soft reweight, filter loss scaling, length weight), the
// distillation advantages (added, or alone), and the importance weights (async stale tokens, rollout correction).
import {
  applyKLPenalty,
  computeAdvantage,
  lengthWeightAdvantages,
  scaleByKeptRatio,
  softReweightByGroupStd,
} from '../algo/index.js';
import { maskedStats } from './batch.js';
import { correctMismatch } from './mismatch-step.js';
import { correctOffPolicy, type OffPolicyInfo } from './off-policy.js';
import { family, seconds, type StageOutput, type StepBatch, type StepSettings } from './step-batch.js';

/** What the stage needs besides the batch: this step's in-reward β, the filter's kept fraction, the async info. */
export interface AdvantageInputs {
  klBeta: number;
  keptRatio: number;
  offPolicy?: OffPolicyInfo;
}

/**
 * Advantages and returns of the scored rows. It changes no state: `klUpdate` (the in-reward penalty's measured KL and
 * batch size, null without it) is for the caller's adaptive controller.
 */
export function advantagesStage(
  b: Pick<StepBatch, 'tokens' | 'oldLogprobs' | 'refLogprobs' | 'values' | 'staleness' | 'distillAdvantages'>,
  s: StepSettings['advantages'],
  o: AdvantageInputs,
): StageOutput<'advantages' | 'returns'> & { klUpdate: { currentKl: number; B: number } | null } {
  const t0 = performance.now();
  const { tokens, oldLogprobs, refLogprobs, values } = b;
  const { B, T } = tokens;
  const metrics = {};
  let rewards: Float64Array = Float64Array.from(tokens.rewards);
  let klUpdate: { currentKl: number; B: number } | null = null;
  if (s.kl.inReward) {
    const p = applyKLPenalty({
      rewards,
      logprobs: oldLogprobs,
      refLogprobs: refLogprobs!,
      mask: tokens.lossMask,
      B,
      T,
      beta: o.klBeta,
      estimator: s.kl.estimator,
    });
    rewards = p.rewards;
    Object.assign(metrics, family('actor', { kl_coef: o.klBeta }));
    klUpdate = { currentKl: p.currentKl, B };
  } else if (s.kl.useKlLoss) Object.assign(metrics, family('actor', { kl_coef: s.kl.coef }));
  const adv = computeAdvantage(
    {
      rewards,
      mask: tokens.lossMask,
      B,
      T,
      ...(values ? { values } : {}),
      groupIds: tokens.groupIds,
      episodeIds: tokens.episodeIds,
      turnIds: tokens.turnIds,
    },
    s.estimator,
  );
  let advantages = adv.advantages;
  const mods = s.modifiers;
  if (mods.softReweight && adv.groupStd)
    advantages = softReweightByGroupStd({ advantages, groupStd: adv.groupStd, B, T }).advantages;
  if (mods.filterLossScaling !== 'none') advantages = scaleByKeptRatio(advantages, o.keptRatio, mods.filterLossScaling);
  if (mods.lengthWeight) advantages = lengthWeightAdvantages({ advantages, mask: tokens.lossMask, B, T });
  if (mods.zeroTaskAdvantage) advantages = new Float64Array(advantages.length);
  if (s.distill !== null) {
    // The reverse KL is a per-token signal: it joins after the estimator and its modifiers, which are sequence-level.
    if (!b.distillAdvantages)
      throw new Error(
        'advantagesStage: algo.distill is on but the batch has no distillAdvantages (stage distill did not run).',
      );
    const d = b.distillAdvantages;
    advantages = s.distill === 'alone' ? Float64Array.from(d) : advantages.map((x, i) => x + d[i]!);
  }
  if (o.offPolicy) {
    const weighted = correctOffPolicy(advantages, tokens, oldLogprobs, b.staleness!, o.offPolicy, metrics);
    if (s.rolloutCorrection.mode === 'off') advantages = weighted; // else the rollout correction below supersedes it
  }
  advantages = correctMismatch(advantages, tokens, oldLogprobs, s.rolloutCorrection, metrics);
  const a = maskedStats(advantages, tokens.lossMask);
  Object.assign(
    metrics,
    family('timing_s', { adv: seconds(t0) }),
    family('critic', {
      advantages_mean: a.mean,
      advantages_max: a.max,
      advantages_min: a.min,
      returns_mean: maskedStats(adv.returns, tokens.lossMask).mean,
      score_mean: tokens.scores.reduce((x, y) => x + y, 0) / B,
    }),
  );
  return { advantages, returns: adv.returns, klUpdate, metrics };
}
