// One StarPO step, in RAGEN's order (inventory 3.6) with its bugs left out, as named stages over one StepBatch
// (step-batch.ts): rollout -> collapse diagnostics -> collate (stage-collate.ts) -> filter (stage-filter.ts) -> score
// (stage-score.ts) -> advantages (stage-advantages.ts) -> gradient analysis -> update (stage-update.ts). Validation,
// checkpoints and early stops are the loop's (loop.ts).
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
import { collapseDiagnostics, type CollapseEma } from './collapse-step.js';
import { samplingOf, type RagenConfig } from '../config/index.js';
import { analyzeStep } from './grad-analysis.js';
import type { OffPolicyInfo } from './off-policy.js';
import { episodeRecords, tokenAdvantages, turnAdvantages } from './rollout-records.js';
import { generatedTokens, trainMetrics } from './rollout-metrics.js';
import { family, seconds, stepSettings, type StepBatch, type StepSettings, type UpdateBatch } from './step-batch.js';
import { collateStage } from './stage-collate.js';
import { filterStage } from './stage-filter.js';
import { scoreStage } from './stage-score.js';
import { advantagesStage } from './stage-advantages.js';
import { distillStage } from './stage-distill.js';
import type { Teacher } from './teacher.js';
import { updateStage } from './stage-update.js';
import { agentBatches, gatewayMetrics, gatewayRefusals, joinBatches } from './agent-source.js';
import type { Gateway } from '../gateway/index.js';

/**
 * What one step needs; `kl` and `collapseEma` carry state from step to step (registered with the run's RunState, which
 * checkpoints them: the step never saves them).
 */
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
  /** The distillation teacher (`algo.distill.teacher`; src/train/teacher.ts `openTeacher`); absent without one. */
  teacher?: Teacher;
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

export { lossHorizon } from './step-batch.js';

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
    gateway = gatewayMetrics(agents.outcomes, agents.unauthorized, ctx.gateway.toolFormat);
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

/** The batch after collate and filter (what the gradient probe and the gateway's tests read). */
export type FilteredBatch = Pick<
  StepBatch,
  'episodes' | 'all' | 'filter' | 'keptEpisodes' | 'keptRows' | 'fullForward'
>;

/** Stages collate and filter of `config` on a rollout batch. */
export async function filterBatch(
  engine: Pick<TrainableEngine, 'forward'>,
  config: RagenConfig,
  batch: RolloutBatch,
  padTokenId: number,
): Promise<FilteredBatch> {
  const s = stepSettings(config);
  const { metrics: _c, ...collated } = collateStage(batch, s.collate, padTokenId);
  const { metrics: _f, ...filtered } = await filterStage(collated, s.filter, engine);
  return { ...collated, ...filtered };
}

/** What `prepareKept` gives: the update's view of the batch, the stages' metrics, the KL controller's input. */
export interface PreparedUpdate {
  data: UpdateBatch & Pick<StepBatch, 'staleness'>;
  metrics: MetricValues;
  klUpdate: { currentKl: number; B: number } | null;
}

/**
 * Stages score and advantages on the rows the filter kept (null when it kept none), as both the step and the gradient
 * probe run them (with stage distill between them under `algo.distill`). `klBeta` is the in-reward KL coefficient now;
 * `offPolicy` (async rollouts) marks stale tokens; `teacher` scores the rows for distillation.
 */
export async function prepareKept(
  engine: TrainableEngine,
  s: StepSettings,
  f: FilteredBatch,
  o: { klBeta: number; offPolicy?: OffPolicyInfo; teacher?: Teacher },
): Promise<PreparedUpdate | null> {
  if (f.keptRows.length === 0) return null;
  const { metrics: scoreMetrics, ...scoredOnly } = await scoreStage(f, s.score, engine, o.offPolicy);
  let scored: typeof scoredOnly & Pick<StepBatch, 'teacherLogprobs' | 'distillAdvantages'> = scoredOnly;
  if (s.distill !== null) {
    if (!o.teacher)
      throw new Error('prepareKept: algo.distill.teacher is set but no teacher was opened (openTeacher) for the step.');
    const { metrics: distillMetrics, ...distilled } = await distillStage(scoredOnly, s.distill, o.teacher);
    Object.assign(scoreMetrics, distillMetrics);
    scored = { ...scoredOnly, ...distilled };
  }
  const {
    metrics: advMetrics,
    klUpdate,
    ...adv
  } = advantagesStage(scored, s.advantages, {
    klBeta: o.klBeta,
    keptRatio: f.filter.stats.keptRatio,
    ...(o.offPolicy ? { offPolicy: o.offPolicy } : {}),
  });
  return { data: { ...scored, ...adv }, metrics: { ...scoreMetrics, ...advMetrics }, klUpdate };
}

/**
 * The step after its rollout: collapse diagnostics, collate -> filter -> score -> advantages (-> gradient analysis) ->
 * update. `tStep` is when the step's clock started (perf/tokens_per_s); `offPolicy` comes with async rollouts.
 */
export async function starpoUpdate(
  ctx: StepContext,
  step: number,
  collected: CollectedRollout,
  tStep: number,
  offPolicy?: OffPolicyInfo,
): Promise<StepOutput> {
  const { engine, tokenizer, agent } = ctx;
  const s = stepSettings(ctx.config);
  const { batch: rollout, genTokens } = collected;
  const metrics: MetricValues = { ...collected.metrics };
  const take = <T extends { metrics: MetricValues }>({ metrics: m, ...rest }: T): Omit<T, 'metrics'> => {
    Object.assign(metrics, m);
    return rest;
  };
  // collapse diagnostics on the unfiltered batch, on step 1 and every `collapse.every` steps
  if (s.collapse.every > 0 && (step === 1 || step % s.collapse.every === 0)) {
    const t0 = performance.now();
    const c = await collapseDiagnostics(engine, rollout.episodes, s.collapse, ctx.collapseEma);
    ctx.collapseEma = c.ema;
    take({ metrics: { ...c.metrics, ...family('timing_s', { collapse: seconds(t0) }) } });
  }
  const collated = take(collateStage(rollout, s.collate, tokenizer.padTokenId));
  const filtered = { ...collated, ...take(await filterStage(collated, s.filter, engine)) };
  // `timing_s/step` is the loop's (loop.ts): it times the whole step, validation included.
  const out = (records: EpisodeRecord[], empty: boolean): StepOutput => ({
    metrics,
    records,
    empty,
    inGroupStd: filtered.filter.stats.reward.std,
    rollout,
  });
  const { episodes, keptEpisodes } = filtered;
  const klBeta = ctx.kl.value; // this step's in-reward β (the controller then adapts it for the next step)
  const prepared = await prepareKept(engine, s, filtered, {
    klBeta,
    ...(offPolicy ? { offPolicy } : {}),
    ...(ctx.teacher ? { teacher: ctx.teacher } : {}),
  });
  if (!prepared) return out(episodeRecords(step, episodes, keptEpisodes, new Map(), s.rolloutsPerStep, agent), true);
  const data = take(prepared).data;
  if (prepared.klUpdate) ctx.kl.update(prepared.klUpdate.currentKl, prepared.klUpdate.B);
  // RAGEN-2's gradient analysis by reward-std bucket, at its cadence: separate passes that leave no gradient
  const ga = s.gradAnalysis;
  if (ga.every > 0 && (step === 1 || step % ga.every === 0)) {
    const t0 = performance.now();
    take(await analyzeStep(engine, s, { ...filtered, data, klBeta }));
    metrics['timing_s/grad_analysis'] = seconds(t0);
  }
  const shuffleSeed = s.update.shuffle ? stepSeed(s.trainSeed ^ 0x2545f491, step) : null;
  const entropyKnown = metrics['actor/entropy'] !== undefined;
  const { optimizerSteps } = take(await updateStage(data, s.update, engine, { step, shuffleSeed, entropyKnown }));
  const { tokens, advantages } = data;
  metrics['train/num_mini_batches'] = optimizerSteps;
  const trainedTokens = tokens.lengths.reduce((x, y) => x + y, 0) * (optimizerSteps > 0 ? s.update.epochs : 0);
  metrics['perf/tokens_per_s'] = (genTokens + trainedTokens) / Math.max(seconds(tStep), 1e-9);
  metrics['perf/rss_mb'] = process.memoryUsage.rss() / 2 ** 20;
  return out(
    episodeRecords(step, episodes, keptEpisodes, turnAdvantages(tokens, advantages), s.rolloutsPerStep, agent, {
      tokens: tokenAdvantages(tokens, advantages),
      decode: (id) => tokenizer.decode([id]),
    }),
    false,
  );
}
