// RAGEN's config keys (config/base.yaml + verl@d62da49 defaults) and ours: the table in docs/config.md,
// and the hint an unknown-key error gives when someone types a RAGEN key (`algorithm.adv_estimator=grpo`).

/** One row of the mapping. `ours` is null where we have no equivalent (the note says why). */
export interface RagenKey {
  ragen: string;
  ours: string | null;
  note?: string;
}

const A = 'actor_rollout_ref.actor';
const R = 'actor_rollout_ref.rollout';

/** RAGEN key -> our key, grouped as in docs/config.md. Prefixes shown as `…` are not fixed in RAGEN's files. */
export const RAGEN_KEYS: readonly RagenKey[] = [
  // model
  { ragen: 'model_path', ours: 'model.path', note: 'also `actor_rollout_ref.model.path`' },
  { ragen: 'actor_rollout_ref.model.path', ours: 'model.path' },
  { ragen: 'critic.model.path', ours: 'model.critic.path', note: 'null = the policy path, as in RAGEN' },
  { ragen: 'lora.rank', ours: 'model.lora.rank', note: '0 = full fine-tuning' },
  { ragen: 'lora.alpha', ours: 'model.lora.alpha' },
  { ragen: 'lora.target_modules', ours: 'model.lora.targetModules', note: 'a list; `all-linear` as in RAGEN' },
  {
    ragen: `${A}.use_ref`,
    ours: 'model.reference',
    note: '`true` -> `always`; our default `auto` loads it only for KL',
  },
  // seeds and envs
  { ragen: 'seed.train', ours: 'seed.train' },
  { ragen: 'seed.val', ours: 'seed.val' },
  {
    ragen: 'es_manager.train.env_groups',
    ours: 'env.train.N.groups',
    note: 'per tag; the total is the sum over `env.train`',
  },
  {
    ragen: 'es_manager.train.group_size',
    ours: 'env.train.N.groupSize',
    note: 'per tag here (RAGEN: one size for all tags)',
  },
  { ragen: 'es_manager.train.env_configs.tags', ours: 'env.train.N.tag' },
  { ragen: 'es_manager.train.env_configs.n_groups', ours: 'env.train.N.groups' },
  { ragen: 'es_manager.val.env_groups', ours: 'env.val.N.groups' },
  { ragen: 'es_manager.val.group_size', ours: 'env.val.N.groupSize' },
  { ragen: 'es_manager.val.env_configs.tags', ours: 'env.val.N.tag' },
  { ragen: 'es_manager.val.env_configs.n_groups', ours: 'env.val.N.groups' },
  { ragen: 'es_manager.format_penalty', ours: 'agent.formatPenalty' },
  {
    ragen: 'es_manager.step_penalty',
    ours: 'agent.stepPenalty',
    note: 'RAGEN PR #160; sign flipped: its 0.05 is -0.05',
  },
  {
    ragen: 'es_manager.think_len_penalty',
    ours: 'agent.thinkLenPenalty',
    note: 'RAGEN PR #160; sign flipped; × (len − limit)/limit',
  },
  { ragen: 'es_manager.think_len_limit', ours: 'agent.thinkLenLimit', note: 'characters; -1 -> null' },
  {
    ragen: 'custom_envs.<Tag>.env_config',
    ours: 'env.config',
    note: '`env.config.<Tag>.<key>`, keys in our env schemas (camelCase)',
  },
  {
    ragen: 'custom_envs.<Tag>.max_actions_per_traj',
    ours: 'agent.maxActionsPerEpisode',
    note: "null = each env's own cap",
  },
  {
    ragen: 'custom_envs.<Tag>.env_config.distance_reward_coeff',
    ours: 'env.config',
    note: 'Sokoban `distanceRewardCoeff` (RAGEN PR #160): + fall in box-target distance × coeff per step',
  },
  {
    ragen: 'custom_envs.<Tag>.env_config.no_op_penalty',
    ours: 'env.config',
    note: 'Sokoban `noOpPenalty`: added when a valid action leaves the player in place',
  },
  {
    ragen: 'custom_envs.<Tag>.env_config.ignore_gym_reward',
    ours: 'env.config',
    note: 'Sokoban `ignoreGymReward` / `successReward`: success pays `successReward`, else 0',
  },
  {
    ragen: 'custom_envs.<Tag>.env_config.min_solution_steps',
    ours: 'env.config',
    note: 'Sokoban `minSolutionSteps` [min, max] by our solver, `maxResetTries`; an error, not a fallback, when none fits',
  },
  { ragen: 'custom_envs.<Tag>.max_tokens', ours: null, note: 'prompt text only; we state `agent.maxNewTokens`' },
  // agent
  { ragen: 'agent_proxy.max_turn', ours: 'agent.maxTurns' },
  { ragen: 'agent_proxy.max_actions_per_turn', ours: 'agent.maxActionsPerTurn' },
  { ragen: 'agent_proxy.action_sep', ours: 'agent.actionSep' },
  { ragen: 'agent_proxy.enable_think', ours: 'agent.enableThink' },
  { ragen: 'agent_proxy.use_turn_scores', ours: 'agent.useTurnScores' },
  { ragen: 'agent_proxy.context_window_mode', ours: 'agent.contextWindowMode' },
  {
    ragen: 'agent_proxy.max_context_window',
    ours: 'agent.maxContextWindow',
    note: '-1 -> null; an error with `contextWindowMode: full` (RAGEN ignores it)',
  },
  {
    ragen: '…enable_summary_memory',
    ours: 'agent.summaryMemory',
    note: "RAGEN's newer branches; theirs is a template of the dropped turns, ours is written by the policy (not trained)",
  },
  { ragen: 'agent_proxy.reward_normalization.grouping', ours: 'algo.rewardNorm.grouping' },
  { ragen: 'agent_proxy.reward_normalization.method', ours: 'algo.rewardNorm.method' },
  { ragen: 'agent_proxy.batch_adjust_mode', ours: null, note: 'not needed: any batch size splits into mini-batches' },
  // generation
  { ragen: `${R}.temperature`, ours: 'generation.temperature' },
  { ragen: `${R}.top_p`, ours: 'generation.topP' },
  { ragen: `${R}.top_k`, ours: 'generation.topK', note: '-1 -> 0 (off)' },
  { ragen: `${R}.response_length`, ours: 'agent.maxNewTokens' },
  { ragen: `${R}.max_model_len`, ours: 'agent.maxContextTokens' },
  { ragen: `${R}.val_kwargs.temperature`, ours: 'generation.val.temperature' },
  { ragen: `${R}.val_kwargs.do_sample`, ours: 'generation.val.greedy', note: 'negated' },
  // filter
  { ragen: `${R}.rollout_filter_strategy`, ours: 'algo.filter.strategy' },
  { ragen: `${R}.rollout_filter_value`, ours: 'algo.filter.value' },
  { ragen: `${R}.rollout_filter_type`, ours: 'algo.filter.type' },
  { ragen: `${R}.rollout_filter_include_zero`, ours: 'algo.filter.includeZero' },
  {
    ragen: `${R}.rollout_filter_metric`,
    ours: 'algo.filter.metric',
    note: '`reward_variance` (a std in RAGEN) -> `reward_std`',
  },
  { ragen: `${R}.rollout_filter_empty_stop_steps`, ours: 'trainer.earlyStop.emptyBatchPatience' },
  { ragen: '…top_p prob mode (linear/softmax)', ours: 'algo.filter.topPMode' },
  { ragen: '…selection_eps', ours: 'algo.filter.selectionEps' },
  {
    ragen: `${R}.rollout_filter_percentile_low`,
    ours: 'algo.filter.percentileLow',
    note: 'branch `more-experiments`; with strategy `percentile_range` (`within_group` too is a strategy there)',
  },
  { ragen: `${R}.rollout_filter_percentile_high`, ours: 'algo.filter.percentileHigh' },
  // algorithm
  {
    ragen: 'algorithm.adv_estimator',
    ours: 'algo.advEstimator',
    note: '`reinforce_plus_plus` -> `reinforce_pp`; with `bi_level_gae: true` -> `bi_level_gae`',
  },
  { ragen: 'algorithm.norm_adv_by_std_in_grpo', ours: 'algo.advEstimator', note: '`false` -> `dr_grpo`' },
  { ragen: 'algorithm.bi_level_gae', ours: 'algo.advEstimator', note: '`true` -> `bi_level_gae`' },
  { ragen: 'algorithm.gamma', ours: 'algo.gamma' },
  { ragen: 'algorithm.lam', ours: 'algo.lambda' },
  { ragen: 'algorithm.high_level_gamma', ours: 'algo.gammaTurn' },
  { ragen: 'algorithm.use_kl_in_reward', ours: 'algo.kl.inReward' },
  { ragen: 'algorithm.kl_ctrl.type', ours: 'algo.kl.controller.type' },
  { ragen: 'algorithm.kl_ctrl.kl_coef', ours: 'algo.kl.coef', note: 'one β for the loss and the reward penalty' },
  { ragen: 'algorithm.kl_ctrl.target_kl', ours: 'algo.kl.controller.target' },
  { ragen: 'algorithm.kl_ctrl.horizon', ours: 'algo.kl.controller.horizon' },
  { ragen: 'algorithm.soft_advantage_reweight', ours: 'algo.modifiers.softReweight' },
  { ragen: 'algorithm.zero_task_advantage', ours: 'algo.modifiers.zeroTaskAdvantage' },
  { ragen: '…grpo_advantage_length_weight', ours: 'algo.modifiers.lengthWeight' },
  { ragen: `${A}.filter_loss_scaling`, ours: 'algo.modifiers.filterLossScaling' },
  { ragen: `${A}.clip_ratio_low`, ours: 'algo.clipRatioLow' },
  { ragen: `${A}.clip_ratio_high`, ours: 'algo.clipRatioHigh' },
  { ragen: `${A}.clip_ratio_c`, ours: 'algo.clipRatioC' },
  { ragen: `${A}.loss_agg_mode`, ours: 'algo.lossAgg' },
  {
    ragen: `${A}.policy_loss.loss_mode`,
    ours: 'algo.policyLoss',
    note: "veRL's key (RAGEN's configs never set it): `vanilla` -> `ppo`; `gspo`, `cispo`",
  },
  {
    ragen: 'algorithm.rollout_correction.rollout_is',
    ours: 'algo.rolloutCorrection.level',
    note: "veRL's: `token`/`sequence` with `mode: tis`; veRL masks via `rollout_rs` where we have `mode: mis`",
  },
  { ragen: 'algorithm.rollout_correction.rollout_is_threshold', ours: 'algo.rolloutCorrection.threshold' },
  {
    ragen: 'algorithm.rollout_correction.rollout_rs',
    ours: 'algo.rolloutCorrection.rejectBound',
    note: "veRL's `seq_mean_k1` (geometric) only; its threshold `1/b_b` is written `b`",
  },
  { ragen: `${A}.entropy_coeff`, ours: 'algo.entropyCoeff' },
  { ragen: `${A}.use_kl_loss`, ours: 'algo.kl.useKlLoss' },
  { ragen: `${A}.kl_loss_coef`, ours: 'algo.kl.coef' },
  {
    ragen: `${A}.kl_loss_type`,
    ours: 'algo.kl.estimator',
    note: '`kl` -> `k1`, `mse` -> `k2`, `low_var_kl` -> `k3`, `abs` -> `abs`',
  },
  { ragen: 'critic.cliprange_value', ours: 'algo.valueClip' },
  // optimisation
  {
    ragen: `${A}.ppo_mini_batch_size`,
    ours: 'trainer.miniBatchSize',
    note: 'also the top-level `ppo_mini_batch_size`',
  },
  {
    ragen: `${A}.ppo_micro_batch_size_per_gpu`,
    ours: 'trainer.microBatchSize',
    note: 'also `micro_batch_size_per_gpu`',
  },
  { ragen: `${A}.ppo_epochs`, ours: 'trainer.ppoEpochs' },
  { ragen: `${A}.shuffle`, ours: 'trainer.shuffle' },
  { ragen: `${A}.optim.lr`, ours: 'trainer.actorLr' },
  { ragen: 'critic.optim.lr', ours: 'trainer.criticLr' },
  { ragen: `${A}.optim.weight_decay`, ours: 'trainer.weightDecay' },
  { ragen: `${A}.optim.lr_warmup_steps`, ours: 'trainer.warmupSteps' },
  { ragen: `${A}.optim.warmup_style`, ours: 'trainer.lrSchedule', note: '`cosine` -> `warmup_cosine`' },
  { ragen: `${A}.optim.min_lr_ratio`, ours: 'trainer.minLrRatio' },
  { ragen: `${A}.grad_clip`, ours: 'trainer.gradClip' },
  // trainer
  { ragen: 'trainer.total_training_steps', ours: 'trainer.steps' },
  { ragen: 'trainer.test_freq', ours: 'trainer.valEvery' },
  { ragen: 'trainer.val_before_train', ours: 'trainer.valBeforeTrain' },
  { ragen: 'trainer.save_freq', ours: 'trainer.checkpointEvery' },
  { ragen: 'trainer.max_actor_ckpt_to_keep', ours: 'trainer.keepCheckpoints' },
  { ragen: 'trainer.critic_warmup', ours: 'trainer.criticWarmup' },
  { ragen: 'trainer.experiment_name', ours: 'name' },
  { ragen: 'trainer.default_local_dir', ours: 'logging.runDir' },
  {
    ragen: 'trainer.logger',
    ours: 'logging.sinks',
    note: '`[jsonl, tensorboard, wandb]`; the console is `logging.console`',
  },
  { ragen: 'trainer.project_name', ours: 'logging.wandb.project' },
  { ragen: 'trainer.n_gpus_per_node', ours: null, note: 'one process, one device' },
  { ragen: '…compute_freq (collapse detector)', ours: 'trainer.collapse.every' },
  { ragen: '…num_samples (collapse detector)', ours: 'trainer.collapse.numSamples' },
  { ragen: '…first_turn_enabled', ours: 'trainer.collapse.firstTurn' },
  { ragen: '…multi_turn_enabled', ours: 'trainer.collapse.multiTurn' },
  {
    ragen: 'trainer.gradient_analysis_every',
    ours: 'trainer.gradAnalysis.every',
    note: 'RAGEN also needs `gradient_analysis_mode`; here every > 0 turns it on',
  },
  { ragen: 'trainer.gradient_analysis_num_buckets', ours: 'trainer.gradAnalysis.buckets' },
  { ragen: 'trainer.gradient_analysis_log_prefilter', ours: 'trainer.gradAnalysis.prefilter' },
  { ragen: 'trainer.gradient_analysis_only', ours: null, note: '`ragen probe-grads --run DIR` probes a checkpoint' },
];

/** Our key for a RAGEN key typed by a user (exact match on the full dotted key), if we know one. */
export function ragenKeyHint(key: string): RagenKey | undefined {
  return RAGEN_KEYS.find((k) => k.ragen === key);
}
