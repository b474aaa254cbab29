// From the resolved config to the settings of the pieces the trainer drives: the agent loop's AgentConfig,
// the env-group managers, and sampling. Kept in one place so the names of the two schemas can differ.
import { agentConfig, type AgentConfig, type EngineSampling, type EnvGroupsOptions } from '../agent/index.js';
import { needsCritic } from '../algo/index.js';
import type { LocalPretrainedOptions, OptimizerSettings } from '../engine/index.js';
import type { RagenConfig } from './config-schema.js';
import { lrAt, lrScheduleOf } from './lr-schedule.js';

/** The agent loop's settings (src/agent/config.ts) from `agent.*` and `generation.maxNewTokens`. */
export function agentSettings(config: RagenConfig): AgentConfig {
  const a = config.agent;
  return agentConfig({
    maxTurns: a.maxTurns,
    maxActionsPerTurn: a.maxActionsPerTurn,
    actionSep: a.actionSep,
    enableThink: a.enableThink,
    formatPenalty: a.formatPenalty,
    contextWindowMode: a.contextMode,
    maxContextWindow: a.window ?? -1,
    maxContextTokens: a.maxContextTokens,
    maxNewTokens: config.generation.maxNewTokens,
    stopAtAnswer: a.stopAtAnswer,
    useTurnScores: a.rewardMode === 'turn',
    systemPrefix: a.systemPrefix,
  });
}

/** The env-group manager settings of the training or the validation split. */
export function envGroupsOptions(config: RagenConfig, mode: 'train' | 'val'): EnvGroupsOptions {
  const entries = config.env[mode];
  return {
    tags: entries.map((e) => ({
      env: e.tag,
      nGroups: e.groups,
      config: { ...(config.env.config[e.tag] ?? {}) },
      ...(config.agent.maxActionsPerEpisode !== null ? { maxActionsPerEpisode: config.agent.maxActionsPerEpisode } : {}),
    })),
    groupSize: entries[0]?.groupSize ?? 1,
    mode,
    seed: config.seed[mode],
  };
}

/** Sampling of training rollouts or of validation (greedy = temperature 0). */
export function samplingOf(config: RagenConfig, mode: 'train' | 'val', seed: number): EngineSampling {
  const g = config.generation;
  if (mode === 'val') return { temperature: g.val.greedy ? 0 : g.val.temperature, topP: g.topP, topK: g.topK, seed };
  return { temperature: g.temperature, topP: g.topP, topK: g.topK, seed };
}

/** Whether the run needs the frozen reference model (`model.reference`, `auto` = a KL term is on). */
export function needsReference(config: RagenConfig): boolean {
  const r = config.model.reference;
  return r === 'always' || (r === 'auto' && (config.algo.kl.useKlLoss || config.algo.kl.inReward));
}

/** `LocalEngine.fromPretrained` options: backend, LoRA, critic layout (only for estimators with a critic), reference. */
export function localEngineOptions(config: RagenConfig): Omit<LocalPretrainedOptions, 'decode'> {
  const m = config.model;
  const modules = m.lora.targetModules;
  const critic = needsCritic(config.algo.advEstimator);
  return {
    backend: m.backend as LocalPretrainedOptions['backend'], // the engine rejects names it does not know
    lora: m.lora.rank > 0 ? { r: m.lora.rank, alpha: m.lora.alpha, dropout: m.lora.dropout, targetModules: modules.length === 1 && modules[0] === 'all-linear' ? 'all-linear' : [...modules] } : null,
    critic: critic ? m.critic.mode : null,
    ...(critic && m.critic.path !== null ? { criticPath: m.critic.path } : {}),
    reference: needsReference(config),
    seed: config.seed.train,
  };
}

/** AdamW settings of the policy (`role: 'actor'`) or the critic at 1-based `step`, the schedule applied. */
export function optimizerSettings(config: RagenConfig, role: 'actor' | 'critic', step: number): OptimizerSettings {
  const t = config.trainer;
  return {
    lr: lrAt(step, role === 'actor' ? t.actorLr : t.criticLr, lrScheduleOf(t)),
    weightDecay: t.weightDecay,
    betas: [t.adamBetas[0], t.adamBetas[1]],
    eps: t.adamEps,
    maxGradNorm: t.gradClip,
  };
}
