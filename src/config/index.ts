// config: the run config of `ragen train` — its schema (sections owned by other modules embed their own schemas),
// presets and `extends`, command-line overrides, error messages, RAGEN's key names, and run-time checks.
export {
  ConfigSchema,
  SeedSchema,
  ModelSchema,
  LoraSchema,
  CriticSchema,
  EnvSchema,
  TrainEnvSchema,
  ValEnvSchema,
  GenerationSchema,
  ValGenerationSchema,
  LoggingSchema,
  type RagenConfig,
  type RagenConfigInput,
  type DeepReadonly,
} from './schema.js';
export { AlgoSchema } from './schema-algo.js';
export { TrainerSchema } from './schema-trainer.js';
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
} from './load.js';
export { parseOverride, type Override } from './overrides.js';
export { CONFIG_ALIASES, type ConfigAlias } from './aliases.js';
export { RAGEN_KEYS, ragenKeyHint, type RagenKey } from './ragen-keys.js';
export { checkRunConfig, trainEpisodesPerStep, valEpisodes, type RunCheckOptions } from './check.js';
export { checkPromptBudget, checkPromptsFit, type PromptSet } from './prompt-budget.js';
export { envGroupsOptions, samplingOf } from './rollout-options.js';
export { agentEntries, agentEntryName, entryTags, envTags, tagEntries, type AgentEntry } from './env-entries.js';
export { checkResumeOverrides, resumable, RESUMABLE_KEYS } from './resume.js';
export { checkFlagOverrides, type FlagSetting } from './flag-overrides.js';
