// train: the StarPO config (schema, presets, overrides), run-time checks, learning-rate schedules,
// checkpoint I/O and run setup, and the StarPO trainer (`train`, one step, updates, validation).
export {
  ConfigSchema,
  SeedSchema,
  ModelSchema,
  EnvSchema,
  AgentSchema,
  GenerationSchema,
  LoggingSchema,
  type RagenConfig,
  type RagenConfigInput,
  type DeepReadonly,
} from './config-schema.js';
export { AlgoSchema } from './config-schema-algo.js';
export { TrainerSchema } from './config-schema-trainer.js';
export {
  CONFIG_FILE,
  DEFAULT_PRESET,
  configToYaml,
  deepFreeze,
  defaultConfig,
  listPresets,
  loadConfig,
  loadSavedConfig,
  presetPath,
  presetsDir,
  readConfigLayers,
  resolveConfig,
  saveConfig,
  type ConfigLayer,
  type LoadConfigOptions,
} from './config.js';
export { parseOverride, type Override } from './overrides.js';
export { CONFIG_ALIASES, type ConfigAlias } from './config-aliases.js';
export { RAGEN_KEYS, ragenKeyHint, type RagenKey } from './ragen-keys.js';
export { checkRunConfig, trainEpisodesPerStep, valEpisodes, type RunCheckOptions } from './config-check.js';
export { agentSettings, envGroupsOptions, localEngineOptions, needsReference, optimizerSettings, samplingOf } from './config-bridge.js';
export { lrAt, lrScheduleOf, type LrSchedule } from './lr-schedule.js';
export {
  MANIFEST_FILE,
  checkpointMetrics,
  isCompleteCheckpoint,
  latestCheckpoint,
  listCheckpoints,
  metricsUpTo,
  pruneCheckpoints,
  readCheckpoint,
  writeCheckpoint,
  type CheckpointRef,
  type CheckpointState,
  type WriteCheckpointOptions,
} from './checkpoint-io.js';
export { createRun, resumeRun, runEnvName, type ResumedRun } from './run-setup.js';
export { train, type TrainOptions, type TrainResult } from './trainer.js';
export { starpoStep, stepSeed, lossHorizon, type StepContext, type StepOutput } from './step.js';
export { updateActor, updateCritic, miniBatches, type UpdateBatch, type BatchSchedule, type ActorUpdateStats, type CriticUpdateStats } from './update.js';
export { validate, type Validation } from './validate.js';
export { openModels, modelTokenizer, type TrainerModels } from './engine-setup.js';
export { EarlyStopTracker, type EarlyStop, type EarlyStopState } from './early-stop.js';
export { collapseDiagnostics, type CollapseSettings, type CollapseEma } from './collapse-step.js';
