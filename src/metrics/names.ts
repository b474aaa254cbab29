// Every metric key, listed once with its meaning, so the trainer, `ragen eval` and the dashboard agree.
// Keys are `group/name` as in RAGEN/veRL; per-env keys are families such as `val/<tag>/success`.

/** Fixed metric keys and what each measures. Logging an unlisted key is a type error. */
export const METRICS = {
  // train: the step's rollouts (before filtering)
  'train/success': 'Fraction of training episodes that succeeded (terminated and not truncated), over all tags.',
  'train/reward_mean': "Mean episode reward (summed turn rewards plus format penalties) of the step's rollouts.",
  'train/reward_std': 'Standard deviation of episode rewards over the whole step.',
  'train/num_turns': 'Mean model turns per episode.',
  'train/num_actions': 'Mean executed actions per episode.',
  'train/action_is_valid': 'Fraction of turns whose answer parsed into at least one valid action.',
  'train/format_error_rate': 'Fraction of turns that got the format penalty.',
  'train/response_length': 'Mean assistant tokens per episode (all turns).',
  'train/batch_size': 'Training sequences after filtering.',
  'train/num_mini_batches': 'Optimizer steps taken this step (mini-batches × PPO epochs).',
  // rollout: group statistics and the filter (RAGEN's rollout_filter metrics)
  'rollout/in_group_reward_std':
    'Mean over groups of the in-group reward std (unbiased), before filtering: the learning signal.',
  'rollout/in_group_reward_mean': 'Mean over groups of the in-group mean reward, before filtering.',
  'rollout/in_group_reward_max': 'Mean over groups of the in-group max reward, before filtering.',
  'rollout/chosen_in_group_reward_std': 'Mean in-group reward std over the groups the filter kept.',
  'rollout/chosen_in_group_reward_mean': 'Mean in-group mean reward over the groups the filter kept.',
  'rollout/filter_kept_count': 'Groups kept by the rollout filter.',
  'rollout/filter_kept_ratio': 'Kept groups / all groups.',
  'rollout/filter_zero_count': 'Groups whose filter score was 0 (e.g. all rewards equal).',
  'rollout/empty_after_filter': '1 when the filter kept nothing and the step was skipped.',
  // actor: the policy update (means over mini-batches)
  'actor/pg_loss': 'PPO clipped policy-gradient loss.',
  'actor/pg_clipfrac': 'Fraction of tokens where the clip bound (upper or lower) was active.',
  'actor/pg_clipfrac_lower':
    'Fraction of all loss tokens where the dual clip was active (only negative-advantage tokens can trip it).',
  'actor/ppo_kl': "Mean of log π_old − log π over loss tokens (k1 estimate of the update's KL).",
  'actor/entropy': "Mean token entropy of the policy on the step's rollouts.",
  'actor/entropy_loss': 'The entropy term of the loss (entropyCoeff × aggregated entropy).',
  'actor/kl_loss': 'KL(π ‖ π_ref) term of the loss, before the coefficient.',
  'actor/kl_coef': 'Current KL coefficient β (changes under the adaptive controller).',
  'actor/grad_norm': 'Global gradient norm of the policy before clipping.',
  'actor/lr': 'Policy learning rate used this step.',
  'actor/skipped_updates': 'Optimizer steps skipped for a non-finite gradient norm.',
  // critic
  'critic/vf_loss': 'Clipped value loss.',
  'critic/vf_clipfrac': 'Fraction of tokens where the value clip was active.',
  'critic/grad_norm': 'Global gradient norm of the critic before clipping.',
  'critic/lr': 'Critic learning rate used this step.',
  'critic/values_mean': 'Mean critic value over loss tokens.',
  'critic/returns_mean': 'Mean return (value target) over loss tokens.',
  'critic/advantages_mean': 'Mean advantage over loss tokens (after whitening and modifiers).',
  'critic/advantages_max': 'Largest advantage over loss tokens.',
  'critic/advantages_min': 'Smallest advantage over loss tokens.',
  'critic/score_mean': "Mean sequence score (reward on the sequence's last token) fed to the advantage.",
  // collapse: RAGEN-2 reasoning-collapse diagnostics (first-turn sample; see src/algo/collapse.ts)
  'collapse/mi_estimate': 'Î(X;Z): mutual information between prompt and reasoning (per-token log-probs).',
  'collapse/mi_upper_bound': 'log N, the largest possible MI for N prompts.',
  'collapse/mi_zscore': 'Mean (matched − marginal) / marginal std: MI in units of its noise.',
  'collapse/mi_zscore_ema': 'mi_zscore with an EMA of the marginal std.',
  'collapse/conditional_entropy': 'Ĥ(Z|X): reasoning entropy given its own prompt.',
  'collapse/reasoning_entropy': 'Ĥ(Z): reasoning entropy under the prompt mixture.',
  'collapse/retrieval_accuracy':
    'Fraction of reasonings whose own prompt scores them best (template collapse drives it to chance).',
  'collapse/retrieval_chance': 'Retrieval accuracy of a random ranking.',
  'collapse/valid_thinking_rate': 'Fraction of sampled responses with a non-empty <think> block.',
  // async rollouts (trainer.async; src/train/async-rollouts.ts, src/algo/importance.ts)
  'async/staleness_mean':
    'Mean over loss tokens of the policy versions between the sampler and the update (0 = on-policy).',
  'async/staleness_max': 'Largest staleness of a loss token this step (at most trainer.async.maxStaleness).',
  'async/stale_token_frac': 'Fraction of loss tokens sampled by an older policy version.',
  'async/is_weight_mean': 'Mean truncated importance weight min(π_old / μ, C) over stale tokens (1 when none).',
  'async/is_truncated_frac': 'Fraction of stale tokens whose ratio π_old / μ exceeded the cap C.',
  'async/behavior_kl': 'Mean of log μ − log π_old over stale tokens: a k1 estimate of how far the sampler lags.',
  // mismatch: sampler (μ) vs trainer (π_old) log-probs of the trained tokens, and the rollout correction
  'mismatch/log_ratio_mean':
    'Mean of log π_old − log μ over loss tokens (0 when the update reuses the sampler’s log-probs).',
  'mismatch/log_ratio_abs_mean': 'Mean |log π_old − log μ| over loss tokens.',
  'mismatch/log_ratio_abs_max': 'Largest |log π_old − log μ| over loss tokens.',
  'mismatch/k3_kl': 'Mean of ρ − 1 − log ρ, ρ = π_old/μ: the k3 estimate of KL(μ ‖ π_old).',
  'mismatch/frac_ratio_high': 'Fraction of loss tokens with π_old/μ above algo.rolloutCorrection.threshold.',
  'mismatch/frac_ratio_low': 'Fraction of loss tokens with π_old/μ below 1/algo.rolloutCorrection.threshold.',
  'mismatch/is_weight_mean': 'Mean rollout-correction weight over loss tokens (when algo.rolloutCorrection is on).',
  'mismatch/is_token_frac': 'Fraction of loss tokens whose weight the correction truncated, masked or rejected.',
  'mismatch/is_seq_frac': 'Fraction of sequences with at least one such token.',
  'mismatch/rejected_seq_frac': 'Fraction of sequences rejected by algo.rolloutCorrection.rejectBound.',
  // on-policy distillation (algo.distill; src/train/stage-distill.ts, src/algo/distill.ts), over loss tokens
  'distill/reverse_kl':
    'Mean of log π_student − log π_teacher on the student’s sampled tokens: the k1 estimate of KL(π_student ‖ π_teacher).',
  'distill/teacher_logprob':
    'Mean teacher log-prob of the student’s sampled tokens (rises as the student imitates it).',
  'distill/student_logprob': 'Mean student (π_old) log-prob of its sampled tokens.',
  'distill/advantage_mean': 'Mean distillation advantage −coef·(log π_student − log π_teacher).',
  'distill/advantage_min': 'Smallest distillation advantage.',
  'distill/advantage_max': 'Largest distillation advantage.',
  'distill/tokens': 'Loss tokens the teacher scored this step.',
  'timing_s/distill': 'Teacher scoring of the batch (algo.distill).',
  'timing_s/rollout_wait': 'Time the step waited for its rollout (async: what generation ahead did not hide).',
  // the training gateway (agent programs as episodes, env.train.N.agent; src/gateway)
  'gateway/calls': 'Chat calls the gateway answered this step, over every agent episode.',
  'gateway/refused_calls': "Calls refused (429) for going over an episode's `maxCalls`.",
  'gateway/unauthorized_calls':
    'Requests refused (404) for naming no open episode: a wrong episode secret in the URL, no `/episodes/<secret>/` path, or an episode that had ended.',
  'gateway/duplicate_rewards': 'Reward reports refused (409) because their episode already had one.',
  'gateway/calls_per_episode': 'Mean answered calls per agent episode.',
  'gateway/episodes_ok': 'Agent episodes that exited 0 and reported a reward.',
  'gateway/episodes_no_reward': 'Agent episodes that exited 0 without reporting a reward (scored `failureReward`).',
  'gateway/episodes_crashed': 'Agent episodes whose program exited non-zero or did not start (scored `failureReward`).',
  'gateway/episodes_timeout': 'Agent episodes killed at `timeoutS` (scored `failureReward`).',
  'gateway/unparsed_tool_call_rate':
    'Share of calls offered tools whose reply holds `tool_call` text that is not a well-formed call (the policy garbled the format).',
  // timing (seconds) and throughput
  'timing_s/gen': 'Rollout time (generation and env steps).',
  'timing_s/collapse': 'Collapse diagnostics time.',
  'timing_s/grad_analysis': 'Gradient analysis time (`trainer.gradAnalysis`), both views.',
  'timing_s/filter': 'Rollout filter time.',
  'timing_s/old_log_prob': 'Forward pass for old log-probs and entropy.',
  'timing_s/ref': 'Reference-model forward pass.',
  'timing_s/values': 'Critic forward pass.',
  'timing_s/adv': 'Advantage computation.',
  'timing_s/update_critic': 'Critic update.',
  'timing_s/update_actor': 'Policy update.',
  'timing_s/val': 'Validation.',
  'timing_s/checkpoint': 'Checkpoint write.',
  'timing_s/step':
    'Whole training step: the StarPO update, the rollout file and validation (the checkpoint write is `timing_s/checkpoint`, logged with the next step).',
  'perf/tokens_per_s': 'Tokens processed per second over the step (generated + trained).',
  'perf/gen_tokens_per_s': 'Generated tokens per second during rollouts.',
  'perf/total_tokens': 'Tokens generated this step.',
  'perf/rss_mb': 'Resident memory of the trainer process at the end of the step (MB); flat over a healthy run.',
  // early warnings of the echo trap (src/algo/early-warning.ts; logged once a series covers its baseline and window)
  'early_warning/reward_std_ratio': 'Recent (last 5 steps) / baseline (first 10 steps) mean in-group reward std.',
  'early_warning/reward_std_collapse': '1 while reward_std_ratio < 0.5: groups stop telling good from bad rollouts.',
  'early_warning/entropy_ratio': 'Recent / baseline mean policy entropy.',
  'early_warning/entropy_drop': '1 while entropy_ratio < 0.5: the policy is becoming deterministic.',
  'early_warning/grad_norm_z': "z-score of this step's actor grad norm against the previous 20 steps.",
  'early_warning/grad_norm_spike': '1 when grad_norm_z > 3.',
  'early_warning/mi_zscore_ratio': 'Recent / baseline mean `collapse/mi_zscore` (its own steps only).',
  'early_warning/mi_collapse':
    '1 while mi_zscore_ratio < 0.5 and cond_entropy_ratio >= 0.8: reasoning stays varied but stops depending on the input (template collapse).',
  'early_warning/cond_entropy_ratio':
    'Recent / baseline mean `collapse/conditional_entropy` Ĥ(Z|X) (its own steps only).',
  // validation summary and early stops
  'val/success': 'Mean of `val/<tag>/success` over the validation tags.',
  'early_stopped/empty_filtered_steps': '1 when the run stopped after too many consecutive empty batches.',
  'early_stopped/reward_std_collapse': '1 when the run stopped because the in-group reward std collapsed.',
  'early_stopped/low_val_success': "1 when the run stopped because some env's validation success stayed near 0.",
  'early_stopped/early_warning':
    '1 when the run stopped because a warning listed in `trainer.earlyStop.onWarnings` started.',
} as const satisfies Record<string, string>;

/** Families of per-env (or per-sample-scheme) keys, with their meaning. `<tag>` is an env entry's metric tag. */
export const METRIC_FAMILIES = {
  'train/<tag>/<name>':
    "Per-env training metric: success, num_actions, action_is_valid, action_is_effective, pass@<k>, and the env's numeric info keys (per-turn means).",
  'val/<tag>/<name>':
    'Per-env validation metric (same names as train); `val/<tag>/success` drives the validation early stop.',
  'collapse_first_turn_sample/<name>': 'Collapse diagnostics on first-turn (prompt, reasoning) pairs, all statistics.',
  'collapse_trajectory_sample/<name>': 'Collapse diagnostics on pairs drawn from all turns, all statistics.',
  'mismatch/<tag>/<name>':
    "Per-source sampler/trainer mismatch: the `mismatch/*` statistics over one `env.train` entry's loss tokens (a built-in env's tag or an agent entry's name), kept rows only; names in MISMATCH_TAG_NAMES. A source with no trained token in the step writes none (summary-memory turns and other untrained tokens are never measured).",
  'grad_analysis/<bucket>/<name>':
    'Gradient analysis (`trainer.gradAnalysis`) of the filtered batch, per reward-std bucket (`bucket_1` = lowest std, ..., `all`); names in GRAD_ANALYSIS_NAMES.',
  'grad_analysis/prefilter/<bucket>/<name>':
    'The same gradient analysis on the whole batch, before the rollout filter (`trainer.gradAnalysis.prefilter`).',
} as const;

/** The `<name>`s of a `grad_analysis/<bucket>/` family key (src/train/grad-analysis.ts), with their meaning. */
export const GRAD_ANALYSIS_NAMES = {
  task: 'Global L2 norm of the policy gradient of the task (clipped policy-gradient) loss over the bucket.',
  entropy: 'Gradient norm of the entropy term (−entropyCoeff × aggregated entropy); 0 when entropyCoeff is 0.',
  kl: 'Gradient norm of the KL-loss term (kl.coef × aggregated KL to the reference); 0 without algo.kl.useKlLoss.',
  'per_sample/<term>': "The term's gradient norm / the bucket's sample count (task, entropy, kl).",
  'per_token/<term>': "The term's gradient norm / the bucket's loss-token count (task, entropy, kl).",
  'loss/<term>':
    "The term's value over the bucket, aggregated as the update aggregates a mini-batch (task, entropy, kl).",
  sample_count: 'Training sequences in the bucket.',
  sample_pct: "The bucket's share of the analysed batch's sequences.",
  token_count: 'Loss tokens in the bucket.',
  group_count: 'Rollout groups in the bucket.',
  reward_std_mean: "Mean in-group reward std of the bucket's groups.",
  reward_std_min: 'Smallest in-group reward std in the bucket.',
  reward_std_max: 'Largest in-group reward std in the bucket.',
} as const satisfies Record<string, string>;

/** The `<name>`s of a `mismatch/<tag>/` family key (src/train/mismatch-step.ts), with their meaning. */
export const MISMATCH_TAG_NAMES = {
  log_ratio_abs_mean: "Mean |log π_old − log μ| over the tag's loss tokens.",
  log_ratio_abs_max: "Largest |log π_old − log μ| over the tag's loss tokens.",
  k3_kl: "Mean of ρ − 1 − log ρ, ρ = π_old/μ, over the tag's loss tokens: the k3 estimate of KL(μ ‖ π_old).",
  frac_ratio_high: "Fraction of the tag's loss tokens with π_old/μ above algo.rolloutCorrection.threshold.",
  frac_ratio_low: "Fraction of the tag's loss tokens with π_old/μ below 1/algo.rolloutCorrection.threshold.",
} as const satisfies Record<string, string>;

/** A fixed metric key. */
export type FixedMetricKey = keyof typeof METRICS;
/** Any valid metric key: fixed, or one of the families. */
export type MetricKey =
  | FixedMetricKey
  | `train/${string}/${string}`
  | `val/${string}/${string}`
  | `collapse_first_turn_sample/${string}`
  | `collapse_trajectory_sample/${string}`
  | `grad_analysis/${string}/${string}`
  | `mismatch/${string}/${keyof typeof MISMATCH_TAG_NAMES}`;

/** `train/<tag>/<name>`. */
export const trainEnvMetric = (tag: string, name: string): MetricKey => `train/${tag}/${name}`;
/** `val/<tag>/<name>`, e.g. `val/SimpleSokoban/success`. */
export const valEnvMetric = (tag: string, name: string): MetricKey => `val/${tag}/${name}`;
/** `mismatch/<tag>/<name>`, e.g. `mismatch/SimpleSokoban/k3_kl`. */
export const mismatchTagMetric = (tag: string, name: keyof typeof MISMATCH_TAG_NAMES): MetricKey =>
  `mismatch/${tag}/${name}`;

const FAMILY_PATTERNS: [RegExp, keyof typeof METRIC_FAMILIES][] = [
  [/^train\/[^/]+\/.+$/, 'train/<tag>/<name>'],
  [/^val\/[^/]+\/.+$/, 'val/<tag>/<name>'],
  [/^collapse_first_turn_sample\/.+$/, 'collapse_first_turn_sample/<name>'],
  [/^collapse_trajectory_sample\/.+$/, 'collapse_trajectory_sample/<name>'],
  [/^grad_analysis\/prefilter\/[^/]+\/.+$/, 'grad_analysis/prefilter/<bucket>/<name>'],
  [/^grad_analysis\/[^/]+\/.+$/, 'grad_analysis/<bucket>/<name>'],
];

/** The meaning of a key (for the dashboard's tooltips), or undefined for an unknown key. */
export function describeMetric(key: string): string | undefined {
  if (Object.hasOwn(METRICS, key)) return METRICS[key as FixedMetricKey];
  const grad = /^grad_analysis\/(?:prefilter\/)?[^/]+\/(.+)$/.exec(key);
  if (grad) {
    // Only the analysis's own names: `per_sample/task` is listed as `per_sample/<term>`.
    const name = grad[1]!.replace(/^(per_sample|per_token|loss)\/(task|entropy|kl)$/, '$1/<term>');
    return Object.hasOwn(GRAD_ANALYSIS_NAMES, name)
      ? GRAD_ANALYSIS_NAMES[name as keyof typeof GRAD_ANALYSIS_NAMES]
      : undefined;
  }
  const mismatch = /^mismatch\/[^/]+\/(.+)$/.exec(key);
  if (mismatch)
    return Object.hasOwn(MISMATCH_TAG_NAMES, mismatch[1]!)
      ? MISMATCH_TAG_NAMES[mismatch[1] as keyof typeof MISMATCH_TAG_NAMES]
      : undefined;
  const family = FAMILY_PATTERNS.find(([re]) => re.test(key));
  return family ? METRIC_FAMILIES[family[1]] : undefined;
}

/** Whether `key` is a valid metric key (at run time, for keys built from strings). */
export function isMetricKey(key: string): key is MetricKey {
  return describeMetric(key) !== undefined;
}
