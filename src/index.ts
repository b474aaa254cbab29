// ragen-ts: the package's public API, described in docs/api.md. Only what a user builds with is here; kernels,
// config plumbing, command-line helpers and benchmarks stay internal and may change. src/index.test.ts pins this list.

// Environments: the Gymnasium-style contract, the registry (built-in envs register on import), wrappers, the check.
export {
  type Env,
  type EnvInfo,
  type EnvMode,
  type MaybePromise,
  type ResetOptions,
  type ResetResult,
  type StepResult,
  invalidInfo,
  matchActionName,
  type EnvSpec,
  registerEnv,
  makeEnv,
  listEnvs,
  envSpec,
  resolveEnvId,
  resolveEnvConfig,
  Wrapper,
  OrderEnforcing,
  TimeLimit,
  EpisodeStatistics,
  wrapEnv,
  type WrapOptions,
  RewardScale,
  FormatPenalty,
  ObservationTruncation,
  EpisodeRecorder,
  type RewardScaleOptions,
  type ObservationTruncationOptions,
  type RecordedEpisode,
  checkEnv,
  checkRegisteredEnv,
  EnvCheckError,
  type CheckEnvOptions,
} from './env/index.js';
import './envs/index.js'; // the built-in environments register themselves on import

// Environments over the wire (Node only): the server behind `ragen env serve`, the client, `remote:` ids.
export {
  EnvServer,
  type EnvServerOptions,
  RemoteEnv,
  RemoteEnvError,
  type RemoteEnvOptions,
  registerRemoteEnv,
  registerRemoteEnvs,
} from './env/remote/index.js';

// Engines: the seam every backend implements, the in-process one and the PyTorch worker.
export {
  type Engine,
  type TrainableEngine,
  type SamplingParams,
  type Generation,
  type ModelRole,
  type TrainableRole,
  type SequenceBatch,
  type ForwardResult,
  sequenceBatch,
  type OutputGradients,
  type BackwardOptions,
  type OptimizerSettings,
  type OptimizerStepResult,
  LocalEngine,
  type LocalEngineOptions,
  type LocalPretrainedOptions,
  TorchEngine,
  type TorchEngineOptions,
} from './engine/index.js';

// Models of the local engine: Llama / Qwen2 / Qwen3 decoders in Hugging Face layout.
export {
  Transformer,
  modelConfig,
  countParameters,
  loadModel,
  saveModel,
  type ModelConfig,
  type ModelType,
  type LoraConfig,
  type SaveOptions,
} from './model/index.js';

// Tokenizers and chat templates.
export {
  type Tokenizer,
  HfTokenizer,
  loadTokenizer,
  loadQwenTokenizer,
  tinyTokenizerDir,
  ChatTemplate,
  type ChatMessage,
} from './tokenizer/index.js';

// The agent loop: settings, env groups, policies, rollouts, the padded token batch, episode records on disk.
export {
  agentConfig,
  type AgentConfig,
  type ContextWindowMode,
  EnvGroups,
  type EnvGroupsOptions,
  type EnvTagSpec,
  type Policy,
  type PolicyRequest,
  type EngineSampling,
  enginePolicy,
  oraclePolicy,
  randomPolicy,
  openaiPolicy,
  type OpenAIPolicy,
  type OpenAIPolicyOptions,
  type EpisodeUsage,
  rollout,
  type RolloutOptions,
  type RolloutBatch,
  type Episode,
  type EpisodeTurn,
  type LoopEpisode,
  type LoopTurn,
  type EndReason,
  type TrainingSample,
  parseResponse,
  type ParsedResponse,
  collate,
  type TokenBatch,
  episodeRecord,
  writeEpisodeRecords,
  type EpisodeRecord,
  type TurnRecord,
} from './agent/index.js';

// StarPO's mathematics on plain (B, T) arrays: advantages, reward normalisation, losses with their gradients, KL,
// the rollout filter, collapse diagnostics, echo-trap warnings.
export {
  type Nums,
  type TokenMask,
  computeAdvantage,
  needsCritic,
  type AdvEstimator,
  type AdvantageInput,
  type AdvantageConfig,
  type AdvantageResult,
  gae,
  biLevelGae,
  grpoAdvantage,
  rlooAdvantage,
  reinforcePPAdvantage,
  reinforcePPBaselineAdvantage,
  softReweightByGroupStd,
  scaleByKeptRatio,
  lengthWeightAdvantages,
  normalizeRewards,
  type RewardGrouping,
  type RewardNormMethod,
  aggNorm,
  aggLoss,
  type AggNorm,
  type LossAggMode,
  ppoPolicyLoss,
  entropyBonus,
  actorLoss,
  type PPOClipConfig,
  type PPOStats,
  type ActorLossConfig,
  clippedValueLoss,
  klPenalty,
  klLoss,
  applyKLPenalty,
  KLController,
  type KLEstimator,
  type KLControllerConfig,
  filterRollouts,
  selectGroups,
  type RolloutFilterConfig,
  type RolloutFilterResult,
  collapseMetrics,
  type CollapseMetrics,
  earlyWarnings,
  type EarlyWarning,
  type EarlyWarningReport,
  type EarlyWarningConfig,
  type MetricHistory,
  truncatedImportanceWeights,
  type ImportanceInput,
  type ImportanceWeights,
} from './algo/index.js';

// Serving: an OpenAI-compatible HTTP server over any Engine (`ragen serve`, docs/serving.md).
export { OpenAIServer, type ServeOptions, ApiError, localTopLogprobs, type TopLogprobsSource } from './serve/index.js';

// Training: the StarPO trainer and its configuration (YAML presets + dotted overrides, docs/config.md).
export { train, type TrainOptions, type TrainResult } from './train/index.js';
export { loadConfig, defaultConfig, listPresets, type RagenConfig, type LoadConfigOptions } from './config/index.js';

// Metrics: the key list with meanings, the logger and its sinks, metrics.jsonl.
export {
  METRICS,
  describeMetric,
  type MetricKey,
  MetricLogger,
  type MetricSink,
  type MetricRecord,
  type MetricValues,
  JsonlSink,
  readMetricsFile,
} from './metrics/index.js';

// Errors and the seeded RNG.
export {
  Rng,
  RagenError,
  ConfigError,
  EnvNotFoundError,
  ResetNeededError,
  ShapeError,
  CheckpointError,
  UsageError,
} from './util/index.js';

// Tensors with autograd (PyTorch vocabulary): `import { tensor as T } from 'ragen-ts'`.
export * as tensor from './tensor/index.js';
