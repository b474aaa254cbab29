// gateway: train agents as they are written — an episode-scoped OpenAI-compatible server that records every call.
export { Gateway, type GatewayOptions } from './server.js';
export { EpisodeBook, type CallRecord, type EpisodeLog } from './episodes.js';
export {
  lowerToolMessages,
  parseToolCalls,
  unparsedToolCall,
  pyJson,
  toolsSystemText,
  toolChoiceOf,
  QWEN_DEFAULT_SYSTEM,
  type ToolCall,
  type ToolChoice,
} from './qwen-tools.js';
export { chainCalls, extendsIds, samplesFromCalls, type CallChain } from './samples.js';
export {
  exitRecordReward,
  runAgentEpisode,
  runAgentEpisodes,
  type AgentContext,
  type AgentFunction,
  type AgentOutcome,
  type AgentProgram,
  type AgentStatus,
  type AgentTask,
  type RewardSource,
  type RunOptions,
  type TaskVerifier,
  type TranscriptCall,
} from './runner.js';
export { loadExport, resolveAgentProgram } from './program-module.js';
export { agentRollout, type AgentRolloutOptions } from './agent-rollout.js';
export { toolDemoCalls, toolDemoSamples, type DemoToolStep, type ToolDemo } from './tool-demos.js';
