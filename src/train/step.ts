// One StarPO step, in RAGEN's order (inventory 3.6) with its bugs left out: rollout -> collapse diagnostics ->
// reward normalisation -> group filter -> old / reference log-probs -> values -> advantages -> gradient analysis ->
// critic update -> actor update. Validation, checkpoints and early stops are the loop's (trainer.ts).
import {
  enginePolicy,
  rollout,
  type AgentConfig,
  type EnvGroups,
  type EpisodeRecord,
  type Policy,
  type RolloutBatch,
} from '../agent/index.js';
import type { KLController } from '../algo/index.js';
import type { TrainableEngine } from '../engine/index.js';
import type { MetricValues } from '../metrics/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { maskedStats } from './batch.js';
import { collapseDiagnostics, type CollapseEma } from './collapse-step.js';
import { samplingOf, type RagenConfig } from '../config/index.js';
import { analyzeStep } from './grad-analysis.js';
import type { OffPolicyInfo } from './off-policy.js';
import { optimizerSettings } from './lr-schedule.js';
import { episodeRecords, tokenAdvantages, turnAdvantages } from './rollout-records.js';
import { generatedTokens, trainMetrics } from './rollout-metrics.js';
import { updateActor, updateCritic, type BatchSchedule } from './update.js';
import { actorLossConfig, filterBatch, lossHorizon, prepareKept } from './update-data.js';
import { agentBatches, gatewayMetrics, gatewayRefusals, joinBatches } from './agent-source.js';
import type { Gateway } from '../gateway/index.js';

/** What one step needs; `kl` and `collapseEma` carry state from step to step. */
export interface StepContext {
  config: RagenConfig;
  engine: TrainableEngine;
  tokenizer: Tokenizer;
  agent: AgentConfig;
  /** The training env groups (mode 'train') of the built-in env entries; null when every entry is an agent program. */
  groups: EnvGroups | null;
  /** The training gateway answering the agent entries (`env.train.N.agent`); absent without them. */
  gateway?: Gateway;
  /** Where a step says why agent episodes failed (the run's console); unset: nowhere. */
  log?: (line: string) => void;
  /** β of the in-reward KL penalty (fixed or adaptive). */
  kl: KLController;
  collapseEma: CollapseEma;
}

/** What a step reports. */
export interface StepOutput {
  metrics: MetricValues;
  /** Trajectories for rollouts/step-N.jsonl (the first `logging.rolloutsPerStep` episodes). */
  records: EpisodeRecord[];
  /** The filter kept nothing: no update happened. */
  empty: boolean;
  /** `rollout/in_group_reward_std` (the reward-std early stop reads it). */
  inGroupStd: number;
  rollout: RolloutBatch;
}

/** The sampler seed of training step `step` (1-based): fresh noise each step, reproducible from the config. */
export function stepSeed(base: number, step: number): number {
  return (Math.imul(base ^ 0x5bd1e995, 0x27d4eb2d) + Math.imul(step, 0x9e3779b1)) >>> 0;
}

export { lossHorizon } from './update-data.js';

const seconds = (t0: number) => (performance.now() - t0) / 1000;

/** A step's rollout with its metrics (`train/*`, `timing_s/gen`, `perf/*` of generation). */
export interface CollectedRollout {
  batch: RolloutBatch;
  metrics: MetricValues;
  genTokens: number;
}

/**
 * Step `step`'s rollout (1-based): its seeds depend only on the step. `groups` defaults to the context's;
 * `wrap` wraps the policy (async rollouts gate each generate call on the policy version). Built-in env entries roll
 * out in the agent loop, agent entries through the gateway; step k's groups take seeds `seed.train + (k-1)·G + g`
 * (G every entry's groups, the built-in envs' first), and the two batches are joined.
 */
export async function collectRollout(
  ctx: Pick<StepContext, 'config' | 'engine' | 'tokenizer' | 'agent' | 'groups' | 'gateway' | 'log'>,
  step: number,
  opts: { groups?: EnvGroups; wrap?: (p: Policy) => Policy } = {},
): Promise<CollectedRollout> {
  const { config, engine, tokenizer, agent } = ctx;
  const groups = opts.groups ?? ctx.groups;
  const t0 = performance.now();
  const sampler = stepSeed(config.seed.train, step);
  const allGroups = config.env.train.reduce((n, e) => n + e.groups, 0);
  const first = config.seed.train + (step - 1) * allGroups;
  const batches: RolloutBatch[] = [];
  if (groups) {
    const base = enginePolicy(engine, tokenizer, agent, samplingOf(config, 'train', sampler));
    const policy = opts.wrap ? opts.wrap(base) : base;
    batches.push(await rollout({ groups, policy, tokenizer, agent, resetSeed: first }));
  }
  let gateway: MetricValues = {};
  if (ctx.gateway) {
    const plan = { seedBase: first + (groups?.nGroups ?? 0), samplingSeed: sampler, idPrefix: `s${step}` };
    // A failed episode's line carries its stderr tail: the first of the step is shown, the rest counted.
    const failures: string[] = [];
    const agents = await agentBatches(ctx.gateway, config, 'train', plan, (line) => failures.push(line));
    if (failures.length > 0)
      ctx.log?.(
        `step ${step}: ${failures[0]}${failures.length > 1 ? ` (and ${failures.length - 1} more failed episode(s) this step)` : ''}`,
      );
    batches.push(...agents.batches);
    gateway = gatewayMetrics(agents.outcomes, agents.unauthorized);
    const refused = gatewayRefusals(gateway);
    if (refused) ctx.log?.(`step ${step}: ${refused}`);
  }
  const batch = joinBatches(batches);
  const genSeconds = seconds(t0);
  const genTokens = generatedTokens(batch);
  const metrics: MetricValues = {
    ...trainMetrics(batch),
    ...gateway,
    'timing_s/gen': genSeconds,
    'perf/total_tokens': genTokens,
    'perf/gen_tokens_per_s': genTokens / Math.max(genSeconds, 1e-9),
  };
  return { batch, metrics, genTokens };
}

/** Run training step `step` (1-based). Train seeds: group g of step k gets `seed.train + (k-1)·groups + g`. */
export async function starpoStep(ctx: StepContext, step: number): Promise<StepOutput> {
  const tStep = performance.now();
  return starpoUpdate(ctx, step, await collectRollout(ctx, step), tStep);
}

/** Steps 2-6 of a StarPO step on a collected rollout; `tStep` is when the step's clock started (perf/tokens_per_s). */
export async function starpoUpdate(
  ctx: StepContext,
  step: number,
  collected: CollectedRollout,
  tStep: number,
  offPolicy?: OffPolicyInfo,
): Promise<StepOutput> {
  const { config, engine, tokenizer, agent } = ctx;
  const algo = config.algo;
  const t = config.trainer;
  const { batch, genTokens } = collected;
  const metrics: MetricValues = { ...collected.metrics };
  let t0: number;

  // 2. collapse diagnostics on the unfiltered batch, on step 1 and every `collapse.every` steps
  const every = t.collapse.every;
  if (every > 0 && (step === 1 || step % every === 0)) {
    t0 = performance.now();
    const c = await collapseDiagnostics(engine, batch.episodes, t.collapse, ctx.collapseEma);
    ctx.collapseEma = c.ema;
    Object.assign(metrics, c.metrics, { 'timing_s/collapse': seconds(t0) });
  }

  // 3. reward normalisation (per episode score), then the group filter on the raw episode scores
  t0 = performance.now();
  const filtered = await filterBatch(engine, config, batch, tokenizer.padTokenId);
  const { episodes, filter, keptEpisodes, keptRows } = filtered;
  Object.assign(metrics, {
    'rollout/in_group_reward_std': filter.stats.reward.std,
    'rollout/in_group_reward_mean': filter.stats.reward.mean,
    'rollout/in_group_reward_max': filter.stats.reward.max,
    'rollout/chosen_in_group_reward_std': filter.stats.chosenReward.std,
    'rollout/chosen_in_group_reward_mean': filter.stats.chosenReward.mean,
    'rollout/filter_kept_count': filter.stats.keptCount,
    'rollout/filter_kept_ratio': filter.stats.keptRatio,
    'rollout/filter_zero_count': filter.stats.zeroCount,
    'rollout/empty_after_filter': keptRows.length === 0 ? 1 : 0,
    'train/batch_size': keptRows.length,
    'timing_s/filter': seconds(t0),
  } satisfies MetricValues);
  // `timing_s/step` is the loop's (trainer.ts): it times the whole step, validation included.
  const out = (records: EpisodeRecord[], empty: boolean): StepOutput => ({
    metrics,
    records,
    empty,
    inGroupStd: filter.stats.reward.std,
    rollout: batch,
  });
  const limit = config.logging.rolloutsPerStep;
  // 4-5. old / reference log-probs, values, token rewards, advantages and their modifiers on the kept rows
  const klBeta = ctx.kl.value; // this step's in-reward β (the controller then adapts it for the next step)
  const prepared = await prepareKept(engine, config, filtered, { klBeta, ...(offPolicy ? { offPolicy } : {}) });
  if (!prepared) return out(episodeRecords(step, episodes, keptEpisodes, new Map(), limit, agent), true);
  Object.assign(metrics, prepared.metrics);
  if (prepared.klUpdate) ctx.kl.update(prepared.klUpdate.currentKl, prepared.klUpdate.B);
  const data = prepared.data;
  const { tokens, advantages } = data;
  const critic = data.values !== undefined;
  const schedule: BatchSchedule = {
    miniBatchSize: t.miniBatchSize,
    microBatchSize: t.microBatchSize,
    epochs: t.ppoEpochs,
    shuffleSeed: t.shuffle ? stepSeed(config.seed.train ^ 0x2545f491, step) : null,
    horizon: lossHorizon(config),
  };

  // 5b. RAGEN-2's gradient analysis by reward-std bucket, at its cadence: separate passes that leave no gradient
  const ga = t.gradAnalysis;
  if (ga.every > 0 && (step === 1 || step % ga.every === 0)) {
    t0 = performance.now();
    Object.assign(metrics, (await analyzeStep(engine, config, { ...filtered, data, klBeta })).metrics);
    metrics['timing_s/grad_analysis'] = seconds(t0);
  }

  // 6. critic update, then the actor update (after `criticWarmup` steps)
  let optimizerSteps = 0;
  if (critic) {
    t0 = performance.now();
    const settings = optimizerSettings(config, 'critic', step);
    const c = await updateCritic(
      engine,
      data,
      { lossAgg: algo.lossAgg, valueClip: algo.valueClip },
      schedule,
      settings,
    );
    // A shared-trunk critic's backward also reaches the policy trunk: drop that gradient so the actor's update
    // is its own loss's alone (the trunk learns from the policy loss; the value head from the value loss).
    if (config.model.critic.mode === 'shared') engine.zeroGrad('policy');
    Object.assign(metrics, {
      'critic/vf_loss': c.vfLoss,
      'critic/vf_clipfrac': c.vfClipfrac,
      'critic/grad_norm': c.gradNorm,
      'critic/lr': settings.lr,
      'critic/values_mean': maskedStats(data.values!, tokens.lossMask).mean,
      'timing_s/update_critic': seconds(t0),
    } satisfies MetricValues);
  }
  if (step > t.criticWarmup) {
    t0 = performance.now();
    const settings = optimizerSettings(config, 'actor', step);
    const u = await updateActor(engine, data, actorLossConfig(config), schedule, settings);
    optimizerSteps = u.optimizerSteps;
    Object.assign(metrics, {
      'actor/pg_loss': u.pgLoss,
      'actor/pg_clipfrac': u.clipfrac,
      'actor/pg_clipfrac_lower': u.clipfracDual,
      'actor/ppo_kl': u.ppoKl,
      'actor/entropy_loss': u.entropyLoss,
      'actor/grad_norm': u.gradNorm,
      'actor/lr': settings.lr,
      'actor/skipped_updates': u.skipped,
      'timing_s/update_actor': seconds(t0),
      ...(metrics['actor/entropy'] === undefined && u.entropy !== null ? { 'actor/entropy': u.entropy } : {}),
      ...(algo.kl.useKlLoss ? { 'actor/kl_loss': u.klLoss } : {}),
    } satisfies MetricValues);
  }
  metrics['train/num_mini_batches'] = optimizerSteps;
  const trainedTokens = tokens.lengths.reduce((x, y) => x + y, 0) * (optimizerSteps > 0 ? t.ppoEpochs : 0);
  metrics['perf/tokens_per_s'] = (genTokens + trainedTokens) / Math.max(seconds(tStep), 1e-9);
  metrics['perf/rss_mb'] = process.memoryUsage.rss() / 2 ** 20;
  return out(
    episodeRecords(step, episodes, keptEpisodes, turnAdvantages(tokens, advantages), limit, agent, {
      tokens: tokenAdvantages(tokens, advantages),
      decode: (id) => tokenizer.decode([id]),
    }),
    false,
  );
}
