// gateway: train agents as they are written — an episode-scoped OpenAI-compatible server that records every call.
export { Gateway, type GatewayOptions } from './server.js';
export { EpisodeBook, type CallRecord, type EpisodeLog } from './episodes.js';
export { lowerToolMessages, parseToolCalls, pyJson, toolsSystemText, QWEN_DEFAULT_SYSTEM, type ToolCall } from './qwen-tools.js';
export { chainCalls, extendsIds, samplesFromCalls, type CallChain } from './samples.js';
export { runAgentEpisode, runAgentEpisodes, type AgentOutcome, type AgentProgram, type AgentStatus, type AgentTask, type RunOptions } from './runner.js';
export { agentRollout, type AgentRolloutOptions } from './agent-rollout.js';
export { toolDemoCalls, toolDemoSamples, type DemoToolStep, type ToolDemo } from './tool-demos.js';
