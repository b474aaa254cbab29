// The `trainer` section of the config: steps, batches, optimiser, schedule, validation, checkpoints, early stops.
// Defaults follow RAGEN's base.yaml and verl's; deliberate differences are noted on the field.
import { z } from 'zod';

/**
 * Reward-std collapse: stop when the in-group reward std falls far below its early level (RAGEN's reward-variance early
 * stop).
 */
export const RewardStdCollapseSchema = z.strictObject({
  /** Check for reward-std collapse. @default true */
  enabled: z.boolean().default(true),
  /** Steps whose mean `rollout/in_group_reward_std` is the baseline. @default 10 */
  baselineSteps: z.number().int().min(1).default(10),
  /** Collapse means the std is below `ratio` × baseline. @default 0.1 */
  ratio: z.number().min(0).max(1).default(0.1),
  /** Consecutive collapsed steps that stop the run. @default 10 */
  patience: z.number().int().min(1).default(10),
});

/** Validation-success collapse: stop when some env's val success stays near zero. */
export const ValSuccessCollapseSchema = z.strictObject({
  /** Check for validation-success collapse. @default true */
  enabled: z.boolean().default(true),
  /** Collapse means some `val/<tag>/success` is below this. @default 0.01 */
  threshold: z.number().min(0).max(1).default(0.01),
  /** Consecutive collapsed validations that stop the run. @default 5 */
  patience: z.number().int().min(1).default(5),
});

/** Early stops, each logged with its reason under `early_stopped/*`. */
export const EarlyStopSchema = z.strictObject({
  /**
   * Stop after this many consecutive steps whose batch the filter emptied; 0 never stops (RAGEN's
   * `rollout_filter_empty_stop_steps`). @default 5
   */
  emptyBatchPatience: z.number().int().min(0).default(5),
  rewardStdCollapse: RewardStdCollapseSchema.prefault({}),
  valSuccessCollapse: ValSuccessCollapseSchema.prefault({}),
  /**
   * Echo-trap warnings (`early_warning/*`, src/algo/early-warning.ts) that stop the run when they start, e.g.
   * `[mi_collapse]`; [] only warns. @default []
   */
  onWarnings: z.array(z.enum(['reward_std_collapse', 'entropy_drop', 'grad_norm_spike', 'mi_collapse'])).default([]),
});

/** Mutual-information / reasoning-collapse diagnostics (RAGEN-2), computed on the unfiltered batch. */
export const CollapseSchema = z.strictObject({
  /** Compute the diagnostics on step 1 and every this many steps; 0 never (RAGEN's `compute_freq`). @default 5 */
  every: z.number().int().min(0).default(5),
  /** (prompt, reasoning) pairs scored per diagnostic. @default 64 */
  numSamples: z.number().int().min(1).default(64),
  /** Score first-turn pairs (`collapse_first_turn_sample/*`). @default true */
  firstTurn: z.boolean().default(true),
  /** Score pairs drawn from all turns (`collapse_trajectory_sample/*`). @default true */
  multiTurn: z.boolean().default(true),
});

/** RAGEN-2's gradient analysis by reward-std bucket (src/train/grad-analysis.ts; RAGEN's `gradient_analysis_*`). */
export const GradAnalysisSchema = z.strictObject({
  /** Run the analysis on step 1 and every this many steps; 0 never (RAGEN's `gradient_analysis_every`). @default 0 */
  every: z.number().int().min(0).default(0),
  /** Equal-count buckets of groups ranked by in-group reward std (RAGEN-2's default is 6). @default 6 */
  buckets: z.number().int().min(1).default(6),
  /**
   * Also analyse the whole batch before the rollout filter (`grad_analysis/prefilter/*`; RAGEN's
   * `gradient_analysis_log_prefilter`). @default false
   */
  prefilter: z.boolean().default(false),
});

/**
 * Asynchronous rollouts (off by default): the rollouts of the next `maxStaleness` steps are generated while this
 * step's update runs, so env latency overlaps training. Stale tokens are corrected with truncated importance weights
 * (src/algo/importance.ts). Deterministic: each generate call of a rollout runs at a fixed policy version.
 */
export const AsyncSchema = z.strictObject({
  /** Generate rollouts ahead of the update. @default false */
  enabled: z.boolean().default(false),
  /**
   * Most policy versions a sample may lag the policy it trains (= rollouts generated ahead); 0 = the synchronous
   * schedule. @default 1
   */
  maxStaleness: z.number().int().min(0).max(8).default(1),
  /** Truncation C of the importance weights min(π_old / μ, C) on stale tokens. @default 2 */
  importanceCap: z.number().positive().default(2),
});

/** The training loop (RAGEN's `trainer` and the optimiser/batch keys of `actor_rollout_ref.actor` and `critic`). */
export const TrainerSchema = z.strictObject({
  /** StarPO steps (one rollout + update each) (RAGEN's `total_training_steps`). @default 200 */
  steps: z.number().int().min(1).default(200),
  /** Passes over each step's batch. @default 1 */
  ppoEpochs: z.number().int().min(1).default(1),
  /** Sequences per optimizer step; a step's batch gives `batch / miniBatchSize` optimizer steps. @default 32 */
  miniBatchSize: z.number().int().min(1).default(32),
  /**
   * Most sequences per forward/backward pass; gradients accumulate over a mini-batch, so this changes memory and speed,
   * not the result. The local engine takes runs of this many rows; the torch engine takes rows longest first and also
   * closes a micro-batch before it outgrows `model.torch.tokenBudget` (one worker pass per call, graph kept): raise it
   * toward `miniBatchSize` to let the budget alone decide. RAGEN uses 1 per GPU. @default 8
   */
  microBatchSize: z.number().int().min(1).default(8),
  /** Shuffle the batch before cutting mini-batches (with the run's seeded RNG). @default false */
  shuffle: z.boolean().default(false),
  /** Peak learning rate of the policy. @default 1e-6 */
  actorLr: z.number().positive().default(1e-6),
  /** Peak learning rate of the critic. @default 1e-5 */
  criticLr: z.number().positive().default(1e-5),
  /**
   * `constant` (RAGEN's), or `warmup_cosine`: linear warmup over `warmupSteps`, then cosine decay to `minLrRatio` ×
   * peak at the last step. Scheduled per StarPO step. @default "constant"
   */
  lrSchedule: z.enum(['constant', 'warmup_cosine']).default('constant'),
  /** Linear warmup steps (from lr/warmupSteps up to the peak); also applies to `constant`. @default 0 */
  warmupSteps: z.number().int().min(0).default(0),
  /** Final learning rate of `warmup_cosine` as a fraction of the peak. @default 0.1 */
  minLrRatio: z.number().min(0).max(1).default(0.1),
  /** AdamW decoupled weight decay. @default 0.01 */
  weightDecay: z.number().min(0).default(0.01),
  /** AdamW β1 and β2. @default [0.9, 0.999] */
  adamBetas: z.tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)]).default([0.9, 0.999]),
  /** AdamW ε. @default 1e-8 */
  adamEps: z.number().positive().default(1e-8),
  /**
   * Clip the global gradient norm to this; 0 disables clipping. A step with a non-finite norm is skipped and logged.
   * @default 1
   */
  gradClip: z.number().min(0).default(1),
  /** Steps during which only the critic is updated (RAGEN's `critic_warmup`). @default 0 */
  criticWarmup: z.number().int().min(0).default(0),
  /** Validate every this many steps and after the last; 0 never (RAGEN's `test_freq`). @default 10 */
  valEvery: z.number().int().min(0).default(10),
  /** Validate once before the first step. @default true */
  valBeforeTrain: z.boolean().default(true),
  /** Checkpoint every this many steps and after the last; 0 only after the last (RAGEN's `save_freq`). @default 100 */
  checkpointEvery: z.number().int().min(0).default(100),
  /** Complete checkpoints kept; older ones are deleted. @default 1 */
  keepCheckpoints: z.number().int().min(1).default(1),
  /** Save optimizer state with checkpoints (needed for an exact resume). @default true */
  saveOptimizer: z.boolean().default(true),
  /**
   * Checkpoint weights and optimizer state are split into Hugging Face index + shards past this many bytes per file (1
   * GiB by default; any size loads, no file is read whole). @default 1073741824
   */
  checkpointShardBytes: z
    .number()
    .int()
    .positive()
    .default(2 ** 30),
  earlyStop: EarlyStopSchema.prefault({}),
  collapse: CollapseSchema.prefault({}),
  gradAnalysis: GradAnalysisSchema.prefault({}),
  async: AsyncSchema.prefault({}),
});
