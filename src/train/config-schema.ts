// The StarPO config schema (zod): one strict object per section, typed defaults, JSDoc on every field.
// The JSDoc text is the documentation: scripts/gen-config-docs.ts turns it into docs/config.md.
import { z } from 'zod';
import { AlgoSchema } from './config-schema-algo.js';
import { TrainerSchema } from './config-schema-trainer.js';

/** Seeds of the environment groups (RAGEN's `seed`). */
export const SeedSchema = z.strictObject({
  /** First seed of training groups: step k's group g gets seed `train + counter + g`, and the counter advances by the number of groups after every step, so every step sees fresh states. @default 10000 */
  train: z.number().int().default(10000),
  /** First seed of validation groups; the same seeds every validation, so val is a fixed set. @default 123 */
  val: z.number().int().default(123),
});

/** LoRA adapters on the policy (RAGEN's `lora.*`). */
export const LoraSchema = z.strictObject({
  /** Adapter rank; 0 trains all weights (full fine-tuning). @default 0 */
  rank: z.number().int().min(0).default(0),
  /** Scale numerator: the adapter output is multiplied by `alpha / rank`. @default 64 */
  alpha: z.number().positive().default(64),
  /** Dropout on the adapter input during training. @default 0 */
  dropout: z.number().min(0).max(1).default(0),
  /** Linear layers that get adapters: `all-linear` or module names such as `q_proj`, `v_proj`. @default ["all-linear"] */
  targetModules: z.array(z.string().min(1)).min(1).default(['all-linear']),
});

/** The value model used by GAE-based estimators. */
export const CriticSchema = z.strictObject({
  /** `separate`: a second model with a value head (RAGEN's layout); `shared`: a value head on the policy's trunk (half the memory, coupled updates). @default "separate" */
  mode: z.enum(['separate', 'shared']).default('separate'),
  /** Directory the separate critic starts from; null means `model.path`. @default null */
  path: z.string().min(1).nullable().default(null),
});

/** Settings of the `openai` engine (generation only: evaluation of API models or a vLLM / llama.cpp server). */
export const OpenAISchema = z.strictObject({
  /** Base URL of an OpenAI-compatible server. @default "http://localhost:8000/v1" */
  baseUrl: z.string().min(1).default('http://localhost:8000/v1'),
  /** Model name sent to the server; null means `model.path`. @default null */
  model: z.string().min(1).nullable().default(null),
  /** Name of the environment variable holding the API key (the key itself never goes in a config). @default "OPENAI_API_KEY" */
  apiKeyEnv: z.string().min(1).default('OPENAI_API_KEY'),
  /** Requests in flight at once. @default 16 */
  maxConcurrency: z.number().int().min(1).default(16),
});

/** The policy model and the engine that runs it. */
export const ModelSchema = z.strictObject({
  /** Model directory in Hugging Face layout (`config.json`, `model.safetensors`, `tokenizer.json`): a shipped preset model under `models/` or any downloaded HF checkpoint. Checked when the run starts, not when the config loads. @default "models/ragen-tiny" */
  path: z.string().min(1).default('models/ragen-tiny'),
  /** Engine: `local` (in-process TypeScript, CPU), `torch` (a PyTorch worker, for GPUs), `openai` (generation only). @default "local" */
  engine: z.enum(['local', 'torch', 'openai']).default('local'),
  /** Kernel backend inside the engine (e.g. `auto`, `js`, `wasm`, `native` for `local`; a device such as `cuda` for `torch`); each engine checks its own names at start. @default "auto" */
  backend: z.string().min(1).default('auto'),
  /** Weight and compute dtype. @default "float32" */
  dtype: z.enum(['float32', 'bfloat16', 'float16']).default('float32'),
  /** Compute threads for the engine; 0 uses every core. @default 0 */
  threads: z.number().int().min(0).default(0),
  lora: LoraSchema.prefault({}),
  critic: CriticSchema.prefault({}),
  /** Frozen reference policy for the KL terms: `auto` loads it only when `algo.kl.useKlLoss` or `algo.kl.inReward` is on (RAGEN always builds one). @default "auto" */
  reference: z.enum(['auto', 'always', 'never']).default('auto'),
  openai: OpenAISchema.prefault({}),
});

/** One training entry of `env.train`: an env id and how many groups of it each step rolls out. */
export const TrainEnvSchema = z.strictObject({
  /** Registered environment id (RAGEN's tag), e.g. `SimpleSokoban`, `FrozenLake`, `Bandit`; checked against the registry when the run starts. */
  tag: z.string().min(1),
  /** Groups of this env per step (RAGEN's `env_configs.n_groups`). @default 8 */
  groups: z.number().int().min(1).default(8),
  /** Envs per group; all members of a group start from the same seed, so they are G samples of one prompt (RAGEN's `group_size`). Every entry of `env.train` must use the same size. @default 16 */
  groupSize: z.number().int().min(1).default(16),
});

/** One validation entry of `env.val`. */
export const ValEnvSchema = z.strictObject({
  /** Registered environment id (RAGEN's tag); checked when the run starts. */
  tag: z.string().min(1),
  /** Validation groups (distinct seeds) of this env. @default 512 */
  groups: z.number().int().min(1).default(512),
  /** Samples per validation seed; above 1 also reports `pass@groupSize`. Every entry of `env.val` must use the same size. @default 1 */
  groupSize: z.number().int().min(1).default(1),
});

/** Which environments to train and validate on (RAGEN's `es_manager` and `custom_envs`). */
export const EnvSchema = z.strictObject({
  /** Training mixture; each step rolls out every entry's groups. @default [{tag: SimpleSokoban, groups: 8, groupSize: 16}] */
  train: z.array(TrainEnvSchema).min(1).default([{ tag: 'SimpleSokoban', groups: 8, groupSize: 16 }]),
  /** Validation set; each entry is reported as `val/<tag>/success`. @default [{tag: SimpleSokoban, groups: 512, groupSize: 1}] */
  val: z.array(ValEnvSchema).default([{ tag: 'SimpleSokoban', groups: 512, groupSize: 1 }]),
  /** Per-tag env config overrides, e.g. `{FrozenLake: {successRate: 1}}`, validated by the env's own schema when the run starts (RAGEN's `custom_envs.<tag>.env_config`). @default {} */
  config: z.record(z.string().min(1), z.record(z.string(), z.unknown())).default({}),
});

/** How the agent talks to the environment: turns, action caps, context, reward placement (RAGEN's `agent_proxy`). */
export const AgentSchema = z.strictObject({
  /** Most model turns per episode (RAGEN's `max_turn`). @default 5 */
  maxTurns: z.number().int().min(1).default(5),
  /** Actions executed per turn; extra actions in one answer are dropped without penalty. @default 2 */
  maxActionsPerTurn: z.number().int().min(1).default(2),
  /** Actions per episode before it is cut off (RAGEN's per-tag `max_actions_per_traj`); null uses each env's own cap. @default null */
  maxActionsPerEpisode: z.number().int().min(1).nullable().default(null),
  /** Separator of actions inside `<answer>`. @default "||" */
  actionSep: z.string().min(1).default('||'),
  /** `full`: one training sequence per episode holding every turn; `limited_multi_turn`: one sequence per turn with the last `window` turns as chat; `single_turn`: one sequence per turn with earlier turns summarised in the prompt. @default "full" */
  contextMode: z.enum(['full', 'limited_multi_turn', 'single_turn']).default('full'),
  /** Turns of history kept by the per-turn context modes; null keeps all. Not allowed with `contextMode: full`, which always keeps everything. @default null */
  window: z.number().int().min(1).nullable().default(null),
  /** Longest templated context in tokens; the oldest whole turns are dropped to fit (RAGEN's `max_model_len`). @default 3600 */
  maxContextTokens: z.number().int().min(16).default(3600),
  /** Ask for `<think>...</think>` before `<answer>` (RAGEN's `enable_think`). @default true */
  enableThink: z.boolean().default(true),
  /** Reward added once per turn whose answer had no valid action (a format error). @default -0.1 */
  formatPenalty: z.number().max(0).default(-0.1),
  /** `episode`: the episode's summed reward on its last token (RAGEN's default); `turn`: each turn's reward on that turn's last token (RAGEN's `use_turn_scores`). @default "episode" */
  rewardMode: z.enum(['episode', 'turn']).default('episode'),
  /** Stop sampling at `</answer>` (the chat template's closing tokens are appended unsampled). @default true */
  stopAtAnswer: z.boolean().default(true),
  /** First words of the system prompt, before the env's instruction. @default "You're a helpful assistant." */
  systemPrefix: z.string().default("You're a helpful assistant."),
});

/** Sampling during validation. */
export const ValGenerationSchema = z.strictObject({
  /** Sampling temperature for validation (RAGEN's `val_kwargs.temperature`). @default 0.5 */
  temperature: z.number().min(0).default(0.5),
  /** Decode greedily during validation (overrides `temperature`). @default false */
  greedy: z.boolean().default(false),
});

/** Sampling during training rollouts (RAGEN's `actor_rollout_ref.rollout`). */
export const GenerationSchema = z.strictObject({
  /** Sampling temperature of training rollouts. @default 1 */
  temperature: z.number().min(0).default(1),
  /** Nucleus sampling mass; 1 disables it. @default 1 */
  topP: z.number().gt(0).max(1).default(1),
  /** Keep only the k most likely tokens; 0 disables it (RAGEN writes -1). @default 0 */
  topK: z.number().int().min(0).default(0),
  /** Most new tokens per turn (RAGEN's `response_length`). @default 400 */
  maxNewTokens: z.number().int().min(1).default(400),
  val: ValGenerationSchema.prefault({}),
});

/** Where and how the run logs. */
export const LoggingSchema = z.strictObject({
  /** Parent directory of run directories. @default "runs" */
  runsDir: z.string().min(1).default('runs'),
  /** Exact run directory; null names it `<runsDir>/<env>__<algo>__<seed>__<timestamp>`. @default null */
  runDir: z.string().min(1).nullable().default(null),
  /** Steps averaged into one `metrics.jsonl` line and console update. @default 1 */
  logEvery: z.number().int().min(1).default(1),
  /** Write `rollouts/step-N.jsonl` every this many steps; 0 never. @default 1 */
  rolloutsEvery: z.number().int().min(0).default(1),
  /** Trajectories saved per rollout file (the first groups of the step); null saves all. @default 16 */
  rolloutsPerStep: z.number().int().min(1).nullable().default(16),
  /** Console output: `auto` (a progress bar on a terminal, plain lines otherwise), `bar`, `plain`, or `none`. @default "auto" */
  console: z.enum(['auto', 'bar', 'plain', 'none']).default('auto'),
});

/** The whole StarPO config: what `ragen train` resolves from defaults, a preset and overrides. */
export const ConfigSchema = z.strictObject({
  /** Short run name used in the run directory name in place of the env tag; null uses the first training tag. @default null */
  name: z.string().regex(/^[\w.+-]+$/, 'letters, digits, `_`, `.`, `+`, `-` only').nullable().default(null),
  seed: SeedSchema.prefault({}),
  model: ModelSchema.prefault({}),
  env: EnvSchema.prefault({}),
  agent: AgentSchema.prefault({}),
  generation: GenerationSchema.prefault({}),
  algo: AlgoSchema.prefault({}),
  trainer: TrainerSchema.prefault({}),
  logging: LoggingSchema.prefault({}),
});

/** Recursively read-only (the resolved config is frozen). */
export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** The resolved, complete, frozen config. */
export type RagenConfig = DeepReadonly<z.output<typeof ConfigSchema>>;
/** What a preset file or an override may contain: any subset of the config. */
export type RagenConfigInput = z.input<typeof ConfigSchema>;
