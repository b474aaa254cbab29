// The `algo` section of the config: advantage estimator, reward normalisation, group filter, PPO loss, KL.
// Names follow src/algo and the literature (gae, grpo, dr_grpo, rloo, reinforce_pp; token-mean...; k1/k2/k3).
// The option lists come from src/algo, so the config accepts exactly what the algorithms implement.
import { z } from 'zod';
import {
  ADV_ESTIMATORS,
  CORRECTION_LEVELS,
  CORRECTION_MODES,
  POLICY_LOSSES,
  FILTER_LOSS_SCALINGS,
  FILTER_METRICS,
  FILTER_STRATEGIES,
  KL_ESTIMATORS,
  LOSS_AGG_MODES,
  REWARD_GROUPINGS,
  REWARD_NORM_METHODS,
} from '../algo/index.js';

// z.enum wants a non-empty tuple of literals; the algo lists are typed readonly arrays of their unions.
const oneOf = <T extends string>(values: readonly T[]) => z.enum(values as [T, ...T[]]);

/** Reward normalisation before the advantage (RAGEN's `agent_proxy.reward_normalization`; v1's ARPO/BRPO/GRPO). */
export const RewardNormSchema = z.strictObject({
  /**
   * Which episodes are normalised together: `state` (one group = one seed), `batch` (the whole step), `inductive` (by
   * env tag). @default "state"
   */
  grouping: oneOf(REWARD_GROUPINGS).default('state'),
  /**
   * `identity` (raw rewards, ARPO), `mean` (x − μ), `mean_std` ((x − μ)/σ, 0 when σ ≈ 0; BRPO with batch grouping),
   * `asym_clip` (mean_std clipped to [−1, 3]). @default "identity"
   */
  method: oneOf(REWARD_NORM_METHODS).default('identity'),
});

/** The rollout filter: keep the groups with the most learning signal (StarPO-S / RAGEN-2 SNR-aware filtering). */
export const FilterSchema = z.strictObject({
  /**
   * `top_p`: smallest set of groups whose score mass reaches `value`; `top_k`: the best `value` fraction of groups;
   * `top_k_abs`: the best `value` groups; `min_p`: groups scoring at least `value` × the best; `percentile_range`: the
   * groups ranked in [`percentileLow`, `percentileHigh`); `within_group`: every group, and in each the round(`value` ×
   * size) trajectories of largest reward variance (RAGEN's `more-experiments`). @default "top_p"
   */
  strategy: oneOf(FILTER_STRATEGIES).default('top_p'),
  /**
   * The strategy's parameter: p for top_p (1 keeps everything: no filter), the kept fraction for top_k, a count for
   * top_k_abs, the ratio for min_p, the kept fraction of each group for within_group. @default 1
   */
  value: z.number().min(0).default(1),
  /**
   * Group score: `reward_std` (in-group reward standard deviation; RAGEN's `reward_variance`), `reward_mean`,
   * `reward_sum`, `entropy`, `entropy_std`, `length`. @default "reward_std"
   */
  metric: oneOf(FILTER_METRICS).default('reward_std'),
  /** Keep the groups with the `largest` or the `smallest` scores. @default "largest" */
  type: z.enum(['largest', 'smallest']).default('largest'),
  /** Let groups scoring 0 (e.g. all rewards equal) be kept; false drops them before selection. @default true */
  includeZero: z.boolean().default(true),
  /**
   * How top_p turns scores into mass: `linear` (score / Σ scores) or `softmax` (RAGEN-2's main-table runs). @default
   * "linear"
   */
  topPMode: z.enum(['linear', 'softmax']).default('linear'),
  /** Slack subtracted from the linear top_p threshold (RAGEN's `selection_eps`). @default 0.01 */
  selectionEps: z.number().min(0).default(0.01),
  /**
   * `percentile_range`: the lower end of the band of group ranks kept, as a fraction of the groups (0 = the best group
   * under `type: largest`; RAGEN's `rollout_filter_percentile_low`). @default 0
   */
  percentileLow: z.number().min(0).max(1).default(0),
  /** `percentile_range`: the band's upper end (exclusive; RAGEN's `rollout_filter_percentile_high`). @default 1 */
  percentileHigh: z.number().min(0).max(1).default(1),
});

/** GSPO's clip range of the length-normalised sequence ratio (`algo.policyLoss: gspo`). */
export const GspoSchema = z.strictObject({
  /**
   * The sequence ratio is clipped below at 1 − this (Zheng et al. 2025 use 3e-4: the ratio is a per-token geometric
   * mean, far closer to 1 than a token ratio). @default 0.0003
   */
  clipRatioLow: z.number().min(0).default(3e-4),
  /** ... and above at 1 + this (the paper's 4e-4). @default 0.0004 */
  clipRatioHigh: z.number().min(0).default(4e-4),
});

/** CISPO's clip range of the stop-gradient importance weight (`algo.policyLoss: cispo`). */
export const CispoSchema = z.strictObject({
  /** The weight is clipped below at 1 − this; ≥ 1 is no lower bound (MiniMax-M1 sets none). @default 1 */
  clipRatioLow: z.number().min(0).default(1),
  /** ... and above at 1 + this (MiniMax-M1 tunes only this bound). @default 0.28 */
  clipRatioHigh: z.number().min(0).default(0.28),
});

/**
 * Correction of the sampler/trainer mismatch (veRL's rollout correction): importance weights π_old/μ between the
 * trainer's log-probs and the sampler's, multiplied into the advantages. The `mismatch/*` metrics are written
 * whatever `mode` is.
 */
export const RolloutCorrectionSchema = z.strictObject({
  /**
   * `off`; `tis` (truncated IS: weight min(ρ, threshold)); `mis` (masked IS: weight ρ inside [lowerThreshold,
   * threshold], else 0; at `level: token` with [0.5, 5] this is IcePop). Supersedes the async stale-token weights of
   * `trainer.async` when on. @default "off"
   */
  mode: oneOf(CORRECTION_MODES).default('off'),
  /**
   * Where ρ is formed: `token` (per token), `sequence` (product over the sequence's tokens), `geometric` (the
   * sequence's per-token geometric mean). @default "token"
   */
  level: oneOf(CORRECTION_LEVELS).default('token'),
  /**
   * The upper bound C of ρ (TIS truncates to it, MIS masks above it); also the band [1/C, C] the
   * `mismatch/frac_ratio_*` metrics count outside of. @default 2
   */
  threshold: z.number().gt(1).default(2),
  /** `mis` only: ρ below this is masked too (0: no lower bound; IcePop's α = 0.5). @default 0 */
  lowerThreshold: z.number().min(0).default(0),
  /**
   * Reject (weight 0) whole sequences whose geometric-mean ratio lies outside [1/b, b] (veRL's geometric rejection
   * sampling); null: none. Works with any `mode`, `off` included. @default null
   */
  rejectBound: z.number().gt(1).nullable().default(null),
});

/**
 * On-policy distillation (GKD; Thinking Machines' "On-Policy Distillation"): a teacher scores the student's own sampled
 * tokens and the per-token reverse KL, −coef·(log π_student − log π_teacher), becomes (part of) the advantage. Off
 * while `teacher` is null. The teacher must share the student's tokenizer and chat template (checked when the run
 * opens).
 */
export const DistillSchema = z.strictObject({
  /**
   * The teacher: a model directory in Hugging Face layout, a shipped model (`ragen-tiny`), another run's checkpoint
   * (`runs/x/checkpoints/step-N`), or the base URL of an OpenAI-compatible server that returns prompt log-probs
   * (`echo` with `logprobs`, as `ragen serve` does: `http://127.0.0.1:8000/v1`); null: no distillation. @default null
   */
  teacher: z.string().min(1).nullable().default(null),
  /** The weight of the reverse-KL advantage. @default 1 */
  coef: z.number().min(0).default(1),
  /**
   * `add`: the distillation advantage is added to the environment's advantages (after the estimator and its
   * modifiers); `alone`: it replaces them, so the environment's reward no longer trains the actor. @default "add"
   */
  mode: z.enum(['add', 'alone']).default('add'),
  /**
   * A teacher server's model name (the request's `model` field); null: the first of its `GET /v1/models`.
   * @default null
   */
  serverModel: z.string().min(1).nullable().default(null),
  /** Rows per teacher forward pass (a model directory) or concurrent requests (a server). @default 8 */
  batchSize: z.number().int().positive().default(8),
});

/** The adaptive KL controller of the in-reward penalty (Ziegler et al. 2019). */
export const KlControllerSchema = z.strictObject({
  /** `fixed` keeps β = `algo.kl.coef`; `adaptive` moves β so the observed KL tracks `target`. @default "fixed" */
  type: z.enum(['fixed', 'adaptive']).default('fixed'),
  /** Target KL per token of the adaptive controller. @default 0.1 */
  target: z.number().positive().default(0.1),
  /** Horizon (in samples) over which the adaptive controller corrects β. @default 10000 */
  horizon: z.number().positive().default(10000),
});

/** KL regularisation toward the reference policy. */
export const KlSchema = z.strictObject({
  /** Add `coef · KL(π ‖ π_ref)` to the actor loss (RAGEN's `use_kl_loss`). @default false */
  useKlLoss: z.boolean().default(false),
  /** β: the KL loss coefficient, and the initial coefficient of the in-reward penalty. @default 0 */
  coef: z.number().min(0).default(0),
  /**
   * Per-token estimator: `k1` (log ratio), `k2` (½ log ratio²), `k3` (low-variance, Schulman 2020), `abs`; a `+` suffix
   * uses k2's gradient (straight-through). @default "k1"
   */
  estimator: oneOf(KL_ESTIMATORS).default('k1'),
  /**
   * Subtract `β · KL(π_old ‖ π_ref)` from the per-token rewards instead of (or besides) the loss term (verl's
   * `use_kl_in_reward`). @default false
   */
  inReward: z.boolean().default(false),
  controller: KlControllerSchema.prefault({}),
});

/** Multipliers applied to the advantages after they are computed, in this order (RAGEN's post-advantage modifiers). */
export const AdvModifiersSchema = z.strictObject({
  /**
   * GRPO only: scale a group's advantages by its reward std over the largest group std (RAGEN's
   * `soft_advantage_reweight`). @default false
   */
  softReweight: z.boolean().default(false),
  /**
   * Scale advantages by the filter's kept ratio: `none`, `linear` (× ratio) or `sqrt` (× √ratio) (RAGEN's
   * `filter_loss_scaling`). @default "none"
   */
  filterLossScaling: oneOf(FILTER_LOSS_SCALINGS).default('none'),
  /**
   * Divide each sequence's advantage by its length over the mean length (RAGEN's `grpo_advantage_length_weight`).
   * @default false
   */
  lengthWeight: z.boolean().default(false),
  /**
   * Zero every advantage: an ablation that leaves only the entropy and KL terms (RAGEN's `zero_task_advantage`).
   * @default false
   */
  zeroTaskAdvantage: z.boolean().default(false),
});

/** The StarPO algorithm: advantages, filtering and the PPO-style losses (RAGEN's `algorithm` and `actor`). */
export const AlgoSchema = z.strictObject({
  /**
   * Advantage estimator: `gae` (PPO with a critic), `bi_level_gae` (turn-level then token-level GAE, with a critic),
   * `grpo`, `dr_grpo` (GRPO without the std division), `rloo`, `reinforce_pp` (REINFORCE++), `reinforce_pp_baseline`.
   * @default "gae"
   */
  advEstimator: oneOf(ADV_ESTIMATORS).default('gae'),
  /** Token-level discount γ. @default 1 */
  gamma: z.number().min(0).max(1).default(1),
  /** GAE λ. @default 1 */
  lambda: z.number().min(0).max(1).default(1),
  /** Turn-level discount of `bi_level_gae` (RAGEN's `high_level_gamma`). @default 0.95 */
  gammaTurn: z.number().min(0).max(1).default(0.95),
  /**
   * Whiten advantages over all loss tokens of the batch (verl's `masked_whiten`); null uses the estimator's own choice
   * (on for gae, bi_level_gae, reinforce_pp*, off for grpo, dr_grpo, rloo). @default null
   */
  normAdvantages: z.boolean().nullable().default(null),
  rewardNorm: RewardNormSchema.prefault({}),
  filter: FilterSchema.prefault({}),
  /** Lower PPO clip ε: the ratio is clipped below at 1 − ε. @default 0.2 */
  clipRatioLow: z.number().min(0).lt(1).default(0.2),
  /** Upper PPO clip ε ("clip-higher", DAPO): the ratio is clipped above at 1 + ε. @default 0.28 */
  clipRatioHigh: z.number().min(0).default(0.28),
  /**
   * Dual-clip bound c for negative advantages (Ye et al. 2020): their loss is at most −A·c; must exceed 1 (veRL's
   * `clip_ratio_c`). @default 3
   */
  clipRatioC: z.number().gt(1).default(3),
  /**
   * The policy-gradient loss: `ppo` (the clipped surrogate with `clipRatio*`), `gspo` (one length-normalised ratio per
   * sequence, clipped with `algo.gspo`), `cispo` (REINFORCE with a clipped stop-gradient IS weight, `algo.cispo`).
   * @default "ppo"
   */
  policyLoss: oneOf(POLICY_LOSSES).default('ppo'),
  gspo: GspoSchema.prefault({}),
  cispo: CispoSchema.prefault({}),
  rolloutCorrection: RolloutCorrectionSchema.prefault({}),
  /**
   * How per-token losses are reduced: `token-mean`, `seq-mean-token-mean` (GRPO), `seq-mean-token-sum` (Dr. GRPO),
   * `seq-mean-token-sum-norm`. @default "token-mean"
   */
  lossAgg: oneOf(LOSS_AGG_MODES).default('token-mean'),
  /** Entropy bonus coefficient: the loss subtracts `entropyCoeff · H` (veRL's `entropy_coeff`). @default 0.001 */
  entropyCoeff: z.number().min(0).default(0.001),
  kl: KlSchema.prefault({}),
  /**
   * Recompute log π_old with a teacher-forced forward after the rollout (RAGEN always does): `auto` reuses the
   * sampler's log-probs when the engine samples with the very weights it trains (the local engine: they agree to float
   * rounding, tested in src/model) and recomputes otherwise; `true` always recomputes; `false` always reuses. Reuse
   * saves one forward pass over the batch per step. @default "auto"
   */
  recomputeOldLogprobs: z.union([z.literal('auto'), z.boolean()]).default('auto'),
  /**
   * Critic value clip ε: the new value is clipped to the old value ± ε in the value loss (verl's `cliprange_value`).
   * @default 0.5
   */
  valueClip: z.number().positive().default(0.5),
  modifiers: AdvModifiersSchema.prefault({}),
  distill: DistillSchema.prefault({}),
});
