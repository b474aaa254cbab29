// From the resolved config to the settings of the pieces the trainer drives: the agent loop's AgentConfig,
// the env-group managers, and sampling. Kept in one place so the names of the two schemas can differ.
import { agentConfig, type AgentConfig, type EngineSampling, type EnvGroupsOptions } from '../agent/index.js';
import type { RagenConfig } from './config-schema.js';

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
