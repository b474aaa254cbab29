// What an update sees of a rollout batch (step.ts's stages 3-5): reward normalisation and the group filter, then for a
// set of rows the old and reference log-probs, values, token rewards (minus an in-reward KL penalty), advantages and
// their modifiers. The step prepares the kept rows; the gradient analysis also every row (its unfiltered view).
import { collate, type Episode, type RolloutBatch, type TokenBatch } from '../agent/index.js';
import {
  applyKLPenalty,
  computeAdvantage,
  filterRollouts,
  lengthWeightAdvantages,
  needsCritic,
  normalizeRewards,
  scaleByKeptRatio,
  softReweightByGroupStd,
  type ActorLossConfig,
  type RolloutFilterResult,
} from '../algo/index.js';
import type { TrainableEngine } from '../engine/index.js';
import type { MetricValues } from '../metrics/index.js';
import type { RagenConfig } from '../config/index.js';
import { applyEpisodeScores, maskedStats, selectRows, takeRows } from './batch.js';
import { needsReference } from './engine-setup.js';
import { correctOffPolicy, tokenStaleness, type OffPolicyInfo } from './off-policy.js';
import { correctMismatch } from './mismatch-step.js';
import type { UpdateBatch } from './update.js';

const seconds = (t0: number) => (performance.now() - t0) / 1000;

/** A rollout batch after reward normalisation and the group filter. */
export interface FilteredBatch {
  episodes: Episode[];
  /** Every sample, token-aligned (B, T); the filter keeps a subset of its rows. */
  all: TokenBatch;
  filter: RolloutFilterResult;
  keptEpisodes: Set<number>;
  /** Rows of `all` whose episode the filter kept. */
  keptRows: number[];
  /** A policy forward over every row (with entropy), made when the filter ranks by entropy. */
  fullForward?: { logprobs: Float32Array; entropy?: Float32Array };
}

/** Stage 3: reward normalisation (per episode score), then the group filter on the raw episode scores. */
export async function filterBatch(
  engine: TrainableEngine,
  config: RagenConfig,
  batch: RolloutBatch,
  padTokenId: number,
): Promise<FilteredBatch> {
  const algo = config.algo;
  const episodes = batch.episodes;
  const rawScores = Float64Array.from(episodes, (e) => e.score);
  let samples = batch.samples;
  if (algo.rewardNorm.method !== 'identity') {
    const normalized = normalizeRewards({
      scores: rawScores,
      grouping: algo.rewardNorm.grouping,
      method: algo.rewardNorm.method,
      groupIds: episodes.map((e) => `${e.tag}/${e.group}`),
      tags: episodes.map((e) => e.tag),
    });
    samples = applyEpisodeScores(samples, rawScores, normalized, config.agent.useTurnScores ? 'turn' : 'episode');
  }
  const all = collate(samples, padTokenId);
  let entropyByEpisode: Float64Array | undefined;
  let fullForward: FilteredBatch['fullForward'];
  if (algo.filter.metric === 'entropy' || algo.filter.metric === 'entropy_std') {
    // The entropy metrics need the policy's entropy before filtering: one forward over every sample, reused later.
    fullForward = await engine.forward(all, { role: 'policy', entropy: true });
    const sums = new Float64Array(episodes.length);
    const counts = new Float64Array(episodes.length);
    for (let i = 0; i < all.B * all.T; i++)
      if (all.lossMask[i]) {
        const e = all.episodeIds[Math.floor(i / all.T)]!;
        sums[e]! += fullForward.entropy![i]!;
        counts[e]!++;
      }
    entropyByEpisode = sums.map((x, i) => (counts[i]! > 0 ? x / counts[i]! : 0));
  }
  const filter = filterRollouts(
    {
      rewards: rawScores,
      groupIds: episodes.map((e) => `${e.tag}/${e.group}`),
      lengths: episodes.map((e) => e.turns.reduce((a, x) => a + x.tokens.length, 0)),
      ...(entropyByEpisode ? { entropy: entropyByEpisode } : {}),
    },
    { ...algo.filter },
  );
  const keptEpisodes = new Set(filter.keptIndices);
  const keptRows = samples.map((s, i) => (keptEpisodes.has(s.episode) ? i : -1)).filter((i) => i >= 0);
  return { episodes, all, filter, keptEpisodes, keptRows, ...(fullForward ? { fullForward } : {}) };
}

/** What `prepareUpdate` gives back; it changes no state, so the caller applies `klUpdate` to its controller. */
export interface PreparedUpdate {
  data: UpdateBatch;
  metrics: MetricValues;
  /** The in-reward KL penalty's measured KL and batch size, for the adaptive controller (null without it). */
  klUpdate: { currentKl: number; B: number } | null;
}

/**
 * Stages 4-5 of a StarPO step on rows `rows` of the whole batch `all`. `fullForward` is a policy forward over every
 * row (with entropy) made earlier for an entropy filter, reused instead of a fresh one; `klBeta` is the in-reward
 * KL coefficient now; `keptRatio` the filter's kept fraction (for `filterLossScaling`); `offPolicy` (async rollouts)
 * says
 * which tokens are stale: their old log-probs are recomputed and their advantages importance-weighted.
 */
export async function prepareUpdate(
  engine: TrainableEngine,
  config: RagenConfig,
  all: TokenBatch,
  rows: readonly number[],
  o: {
    fullForward?: { logprobs: Float32Array; entropy?: Float32Array };
    klBeta: number;
    keptRatio: number;
    offPolicy?: OffPolicyInfo;
  },
): Promise<PreparedUpdate> {
  const algo = config.algo;
  const metrics: MetricValues = {};
  const fullForward = o.fullForward;
  // old log-probs: the sampler's when they are exact (`algo.recomputeOldLogprobs`), else a teacher-forced
  // recompute (RAGEN's way, right for any engine) that also gives the entropy; reference log-probs; values
  const tokens = rows.length === all.B ? all : selectRows(all, rows);
  const { B, T } = tokens;
  let oldLogprobs: Float32Array;
  const staleness = o.offPolicy ? tokenStaleness(tokens, o.offPolicy) : undefined;
  // Stale tokens (async rollouts) were sampled by an older policy: π_old must be the current one, recomputed.
  const stale = staleness !== undefined && staleness.some((x) => x > 0);
  const recompute =
    stale || (algo.recomputeOldLogprobs === 'auto' ? engine.kind !== 'local' : algo.recomputeOldLogprobs);
  let t0 = performance.now();
  if (fullForward || recompute) {
    const fwd = fullForward
      ? { logprobs: takeRows(fullForward.logprobs, rows, all.T), entropy: takeRows(fullForward.entropy!, rows, all.T) }
      : await engine.forward(tokens, { role: 'policy', entropy: true });
    oldLogprobs = fwd.logprobs;
    metrics['timing_s/old_log_prob'] = seconds(t0);
    metrics['actor/entropy'] = maskedStats(fwd.entropy!, tokens.lossMask).mean;
  } else {
    // The sampler's log p(token) at temperature 1 under the weights that sampled it: the policy has not changed
    // since. `actor/entropy` then comes from the actor update's first forward passes.
    oldLogprobs = tokens.oldLogprobs.map((x, i) => (tokens.lossMask[i] ? x : 0));
  }
  let refLogprobs: Float32Array | undefined;
  if (needsReference(config)) {
    t0 = performance.now();
    refLogprobs = (await engine.forward(tokens, { role: 'reference' })).logprobs;
    metrics['timing_s/ref'] = seconds(t0);
  }
  let values: Float32Array | undefined;
  if (needsCritic(algo.advEstimator)) {
    t0 = performance.now();
    values = (await engine.forward(tokens, { role: 'critic' })).values!;
    metrics['timing_s/values'] = seconds(t0);
  }

  // token rewards (minus the KL penalty when it is in the reward), advantages, modifiers
  t0 = performance.now();
  let rewards: Float64Array = Float64Array.from(tokens.rewards);
  let klUpdate: PreparedUpdate['klUpdate'] = null;
  if (algo.kl.inReward) {
    const p = applyKLPenalty({
      rewards,
      logprobs: oldLogprobs,
      refLogprobs: refLogprobs!,
      mask: tokens.lossMask,
      B,
      T,
      beta: o.klBeta,
      estimator: algo.kl.estimator,
    });
    rewards = p.rewards;
    metrics['actor/kl_coef'] = o.klBeta;
    klUpdate = { currentKl: p.currentKl, B };
  } else if (algo.kl.useKlLoss) metrics['actor/kl_coef'] = algo.kl.coef;
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
    {
      advEstimator: algo.advEstimator,
      gamma: algo.gamma,
      lambda: algo.lambda,
      gammaTurn: algo.gammaTurn,
      ...(algo.normAdvantages !== null ? { normAdvantages: algo.normAdvantages } : {}),
    },
  );
  let advantages = adv.advantages;
  const mods = algo.modifiers;
  if (mods.softReweight && adv.groupStd)
    advantages = softReweightByGroupStd({ advantages, groupStd: adv.groupStd, B, T }).advantages;
  if (mods.filterLossScaling !== 'none') advantages = scaleByKeptRatio(advantages, o.keptRatio, mods.filterLossScaling);
  if (mods.lengthWeight) advantages = lengthWeightAdvantages({ advantages, mask: tokens.lossMask, B, T });
  if (mods.zeroTaskAdvantage) advantages = new Float64Array(advantages.length);
  if (o.offPolicy) {
    const weighted = correctOffPolicy(advantages, tokens, oldLogprobs, staleness!, o.offPolicy, metrics);
    if (algo.rolloutCorrection.mode === 'off') advantages = weighted; // else the rollout correction below supersedes it
  }
  advantages = correctMismatch(advantages, tokens, oldLogprobs, algo.rolloutCorrection, metrics);
  metrics['timing_s/adv'] = seconds(t0);
  const a = maskedStats(advantages, tokens.lossMask);
  Object.assign(metrics, {
    'critic/advantages_mean': a.mean,
    'critic/advantages_max': a.max,
    'critic/advantages_min': a.min,
    'critic/returns_mean': maskedStats(adv.returns, tokens.lossMask).mean,
    'critic/score_mean': tokens.scores.reduce((x, y) => x + y, 0) / B,
  } satisfies MetricValues);
  const data: UpdateBatch = {
    tokens,
    oldLogprobs,
    advantages,
    returns: adv.returns,
    ...(values ? { values } : {}),
    ...(refLogprobs ? { refLogprobs } : {}),
  };
  return { data, metrics, klUpdate };
}

/**
 * Stages 4-5 on the rows the filter kept, as both the trainer's step and the gradient probe run them (one sequence:
 * rollout, `filterBatch`, this, then the update or the analysis); null when the filter kept nothing.
 */
export async function prepareKept(
  engine: TrainableEngine,
  config: RagenConfig,
  f: FilteredBatch,
  o: { klBeta: number; offPolicy?: OffPolicyInfo },
): Promise<PreparedUpdate | null> {
  if (f.keptRows.length === 0) return null;
  return prepareUpdate(engine, config, f.all, f.keptRows, {
    ...(f.fullForward ? { fullForward: f.fullForward } : {}),
    klBeta: o.klBeta,
    keptRatio: f.filter.stats.keptRatio,
    ...(o.offPolicy ? { offPolicy: o.offPolicy } : {}),
  });
}

/** The most loss tokens one sequence can hold (Dr. GRPO's constant horizon for `seq-mean-token-sum-norm`). */
export function lossHorizon(config: RagenConfig): number {
  return config.agent.maxNewTokens * (config.agent.contextWindowMode === 'full' ? config.agent.maxTurns : 1);
}

/** The actor loss settings of the config (`algo.*`): the update's and the gradient analysis's. */
export function actorLossConfig(config: RagenConfig): ActorLossConfig {
  const algo = config.algo;
  return {
    lossAgg: algo.lossAgg,
    policyLoss: algo.policyLoss,
    gspo: algo.gspo,
    cispo: algo.cispo,
    clipRatioLow: algo.clipRatioLow,
    clipRatioHigh: algo.clipRatioHigh,
    clipRatioC: algo.clipRatioC,
    entropyCoeff: algo.entropyCoeff,
    klCoef: algo.kl.useKlLoss ? algo.kl.coef : 0,
    klEstimator: algo.kl.estimator,
  };
}
