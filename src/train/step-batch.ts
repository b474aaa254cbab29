// One step's data as it moves through the stages (step.ts: rollout -> collate -> filter -> score -> advantages ->
// update), the narrow settings each stage reads (`stepSettings`), and the one helper stages build metrics with.
import type { Episode, TokenBatch } from '../agent/index.js';
import { needsCritic, type ActorLossConfig, type LossAggMode, type RolloutFilterResult } from '../algo/index.js';
import type { OptimizerSettings } from '../engine/index.js';
import type { MetricKey, MetricValues } from '../metrics/index.js';
import type { RagenConfig } from '../config/index.js';
import { needsReference } from './engine-setup.js';
import { optimizerSettings } from './lr-schedule.js';

/** A per-token (B, T) array, token-aligned with the batch (the engine's outputs and src/algo's results alike). */
export type TokenArray = Float32Array | Float64Array;

/**
 * The step's batch. Each stage reads what earlier stages filled and adds its own fields (the comment on each group
 * names the stage); a stage takes `Pick<StepBatch, ...>` of what it reads, so any producer of those fields can feed it.
 */
export interface StepBatch {
  // rollout (step.ts's collectRollout, or the gateway)
  episodes: Episode[];
  // collate: every sample after reward normalisation, padded to (B, T)
  all: TokenBatch;
  // filter: the groups kept and their rows of `all`
  filter: RolloutFilterResult;
  keptEpisodes: Set<number>;
  /** Rows of `all` whose episode the filter kept (the rows score, advantages and update see). */
  keptRows: number[];
  /** A policy forward over every row (with entropy), made when the filter ranks by entropy; score reuses it. */
  fullForward?: { logprobs: Float32Array; entropy?: Float32Array };
  // score: per-token log-probs and values of the kept rows
  /** The kept rows of `all`, (B, T). */
  tokens: TokenBatch;
  /** log π_old: the log-probs of the sampling policy (the sampler's, or recomputed). */
  oldLogprobs: TokenArray;
  /** Reference log-probs; present when a KL term needs them. */
  refLogprobs?: TokenArray;
  /** Critic values before the update (the value clip's centre); present with a critic. */
  values?: TokenArray;
  /** Policy versions between each token's sampler and the update (async rollouts only). */
  staleness?: Int32Array;
  // distill (with `algo.distill.teacher`): the teacher's log-probs of the kept rows and the reverse-KL advantages
  teacherLogprobs?: TokenArray;
  distillAdvantages?: TokenArray;
  // advantages
  advantages: TokenArray;
  returns: TokenArray;
}

/** What the actor and critic updates read of the batch (`updateActor`, `updateCritic`, the gradient analysis). */
export type UpdateBatch = Pick<
  StepBatch,
  'tokens' | 'oldLogprobs' | 'advantages' | 'returns' | 'values' | 'refLogprobs'
>;

/** What a stage gives back: the fields it fills and its metrics. */
export type StageOutput<K extends keyof StepBatch> = Pick<StepBatch, K> & { metrics: MetricValues };

/** The metric names under `prefix/` that src/metrics/names.ts lists (a family's names are free-form). */
type NamesUnder<P extends string> = MetricKey extends infer K ? (K extends `${P}/${infer N}` ? N : never) : never;

/**
 * The stages' one way to build metrics: `family('critic', { vf_loss: 1 })` is `{ 'critic/vf_loss': 1 }`, with each
 * name checked against src/metrics/names.ts at compile time. Undefined values are left out.
 */
export function family<P extends string>(
  prefix: P,
  values: { [N in NamesUnder<P>]?: number | undefined },
): MetricValues {
  const out: Record<string, number> = {};
  for (const [name, v] of Object.entries(values) as [string, number | undefined][])
    if (v !== undefined) out[`${prefix}/${name}`] = v;
  return out as MetricValues;
}

/** Seconds since `t0` (performance.now()). */
export const seconds = (t0: number): number => (performance.now() - t0) / 1000;

/** The settings of every stage, read once from the config: no stage sees the whole RagenConfig. */
export interface StepSettings {
  /** Sampler and shuffle seeds derive from it. */
  trainSeed: number;
  collate: { rewardNorm: RagenConfig['algo']['rewardNorm']; scoreBy: 'turn' | 'episode' };
  filter: RagenConfig['algo']['filter'];
  score: { recomputeOldLogprobs: boolean | 'auto'; reference: boolean; critic: boolean };
  advantages: {
    kl: { inReward: boolean; useKlLoss: boolean; coef: number; estimator: RagenConfig['algo']['kl']['estimator'] };
    estimator: Pick<RagenConfig['algo'], 'advEstimator' | 'gamma' | 'lambda' | 'gammaTurn'> & {
      normAdvantages?: boolean;
    };
    modifiers: RagenConfig['algo']['modifiers'];
    /** `mismatch/*` thresholds and the importance correction of the sampler/trainer mismatch. */
    rolloutCorrection: RagenConfig['algo']['rolloutCorrection'];
    /** How the distillation advantages join the environment's (`algo.distill.mode`); null without a teacher. */
    distill: 'add' | 'alone' | null;
  };
  /** The distillation stage's settings; null without `algo.distill.teacher`. */
  distill: { coef: number } | null;
  update: {
    miniBatchSize: number;
    microBatchSize: number;
    epochs: number;
    shuffle: boolean;
    /** Dr. GRPO's constant horizon for `seq-mean-token-sum-norm` (the most loss tokens a sequence can have). */
    horizon: number;
    /** Steps during which only the critic trains. */
    criticWarmup: number;
    /** A shared-trunk critic: its backward also reaches the policy trunk, whose gradient is dropped. */
    sharedCritic: boolean;
    actorLoss: ActorLossConfig;
    /** `algo.kl.useKlLoss`: the KL term is in the actor loss (`actor/kl_loss` is logged). */
    useKlLoss: boolean;
    criticLoss: { lossAgg: LossAggMode; valueClip: number };
    /** The optimizer settings (learning rate of the schedule) of a role at a step. */
    optimizer: (role: 'actor' | 'critic', step: number) => OptimizerSettings;
  };
  collapse: RagenConfig['trainer']['collapse'];
  gradAnalysis: RagenConfig['trainer']['gradAnalysis'];
  /** Episodes written to rollouts/step-N.jsonl. */
  rolloutsPerStep: RagenConfig['logging']['rolloutsPerStep'];
}

/** The stages' settings of `config`. */
export function stepSettings(config: RagenConfig): StepSettings {
  const { algo, trainer: t } = config;
  return {
    trainSeed: config.seed.train,
    collate: { rewardNorm: algo.rewardNorm, scoreBy: config.agent.useTurnScores ? 'turn' : 'episode' },
    filter: algo.filter,
    score: {
      recomputeOldLogprobs: algo.recomputeOldLogprobs,
      reference: needsReference(config),
      critic: needsCritic(algo.advEstimator),
    },
    advantages: {
      kl: {
        inReward: algo.kl.inReward,
        useKlLoss: algo.kl.useKlLoss,
        coef: algo.kl.coef,
        estimator: algo.kl.estimator,
      },
      estimator: {
        advEstimator: algo.advEstimator,
        gamma: algo.gamma,
        lambda: algo.lambda,
        gammaTurn: algo.gammaTurn,
        ...(algo.normAdvantages !== null ? { normAdvantages: algo.normAdvantages } : {}),
      },
      modifiers: algo.modifiers,
      rolloutCorrection: algo.rolloutCorrection,
      distill: algo.distill.teacher === null ? null : algo.distill.mode,
    },
    distill: algo.distill.teacher === null ? null : { coef: algo.distill.coef },
    update: {
      miniBatchSize: t.miniBatchSize,
      microBatchSize: t.microBatchSize,
      epochs: t.ppoEpochs,
      shuffle: t.shuffle,
      horizon: lossHorizon(config),
      criticWarmup: t.criticWarmup,
      sharedCritic: config.model.critic.mode === 'shared',
      actorLoss: actorLossConfig(config),
      useKlLoss: algo.kl.useKlLoss,
      criticLoss: { lossAgg: algo.lossAgg, valueClip: algo.valueClip },
      optimizer: (role, step) => optimizerSettings(config, role, step),
    },
    collapse: t.collapse,
    gradAnalysis: t.gradAnalysis,
    rolloutsPerStep: config.logging.rolloutsPerStep,
  };
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
