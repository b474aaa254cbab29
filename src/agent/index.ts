// agent: the context manager (prompts, parsing, exact token assembly), the env-group manager and the rollout loop.
export {
  agentConfig,
  agentConfigSchema,
  agentProgram,
  agentProgramSchema,
  programEnv,
  CONTEXT_WINDOW_MODES,
  type AgentConfig,
  type AgentProgramConfig,
  type ContextWindowMode,
} from './config.js';
export {
  systemPrompt,
  turnPrompt,
  singleTurnPrompt,
  prefillText,
  formatInstruction,
  formatReward,
  INVALID_WARNING,
  type PromptEnv,
  type TurnView,
  type TurnSummary,
} from './prompt.js';
export { parseResponse, STRIPPED_MARKERS, type ParsedResponse, type ParseOptions } from './parse.js';
export { TokenChain, chainToSample, type TrainingSample } from './sequence.js';
export { EpisodeContext, type ResponseRecord } from './episode-context.js';
export { EnvGroups, type EnvGroupsOptions, type EnvTagSpec, type EnvSlot, type TurnStep } from './env-groups.js';
export {
  enginePolicy,
  oraclePolicy,
  randomPolicy,
  scriptedGeneration,
  formatAnswer,
  stopSettings,
  type Policy,
  type PolicyRequest,
  type EngineSampling,
} from './policies.js';
export {
  rollout,
  episodeMessages,
  type Episode,
  type EpisodeTurn,
  type LoopEpisode,
  type LoopTurn,
  type AgentCall,
  type EndReason,
  type RolloutBatch,
  type RolloutOptions,
} from './rollout.js';
export { firstPrompts, type FirstPrompt } from './first-prompt.js';
export { computeMetrics, type TagMetrics } from './metrics.js';
export { collate, type TokenBatch } from './collate.js';
export {
  episodeRecord,
  writeEpisodeRecords,
  type EpisodeRecord,
  type TurnRecord,
  type TrainingFields,
} from './trajectories.js';
export { openaiPolicy, type OpenAIPolicy, type OpenAIPolicyOptions, type EpisodeUsage } from './openai-policy.js';
