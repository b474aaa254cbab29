// The StarPO run config schema (zod): one strict object per section, typed defaults, JSDoc on every field.
// Sections owned by another module are that module's own schema (`agent` is src/agent's). The JSDoc text is
// the documentation: scripts/gen-config-docs.ts turns it into docs/config.md.
import { z } from 'zod';
import { agentConfigSchema, agentProgramSchema } from '../agent/index.js';
import { TORCH_TOKEN_BUDGET } from '../engine/index.js';
import { AlgoSchema } from './schema-algo.js';
import { TrainerSchema } from './schema-trainer.js';
import { HOST_PORT } from '../util/index.js';

/** Seeds of the environment groups (RAGEN's `seed`). */
export const SeedSchema = z.strictObject({
  /**
   * First seed of training groups: step k's group g gets seed `train + counter + g`, and the counter advances by the
   * number of groups after every step, so every step sees fresh states. @default 10000
   */
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
  /**
   * Linear layers that get adapters: `all-linear` or module names such as `q_proj`, `v_proj`. @default ["all-linear"]
   */
  targetModules: z.array(z.string().min(1)).min(1).default(['all-linear']),
});

/** The vision tower of a vision-language model (Qwen2.5-VL, docs/vision.md); both engines run it. */
export const VisionSchema = z.strictObject({
  /**
   * Train the vision tower's weights (patch embedding, vision blocks, merger) beside the language model's (with LoRA:
   * beside the adapters), and a separate critic's own tower beside its model; false keeps the towers frozen. Needs a
   * vision-language checkpoint (either engine).
   * @default false
   */
  train: z.boolean().default(false),
});

/** The value model used by GAE-based estimators. */
export const CriticSchema = z.strictObject({
  /**
   * `separate`: a second model with a value head (RAGEN's layout); `shared`: a value head on the policy's trunk (half
   * the memory, coupled updates). @default "separate"
   */
  mode: z.enum(['separate', 'shared']).default('separate'),
  /** Directory the separate critic starts from; null means `model.path`. @default null */
  path: z.string().min(1).nullable().default(null),
});

/** The torch engine's worker (`model.engine: torch`; docs/gpu.md). */
export const TorchSchema = z
  .strictObject({
    /**
     * Where the worker runs the model: `auto` (CUDA when torch sees a GPU, else CPU), `cpu`, `cuda` or `cuda:N`.
     * @default "auto"
     */
    device: z
      .string()
      .regex(/^(auto|cpu|cuda(:\d+)?)$/, 'auto, cpu, cuda or cuda:N')
      .default('auto'),
    /**
     * Compute precision: `auto` (bf16 on a GPU that has it, else float32), `float32`, or `bfloat16` (autocast; weights,
     * gradients and AdamW state stay float32; on a CPU emulated and slow). @default "auto"
     */
    precision: z.enum(['auto', 'float32', 'bfloat16']).default('auto'),
    /**
     * Most tokens (rows x longest row; with `packing`, bins x longest) the worker runs through the model at once; lower
     * it when the worker reports out-of-memory. The update cuts its micro-batches by it (rows longest first, at most
     * `trainer.microBatchSize` rows each) so that every backward call is one pass that keeps its graph. @default 4096
     */
    tokenBudget: z.number().int().min(16).default(TORCH_TOKEN_BUDGET),
    /**
     * Pack each pass's rows padding-free: rows placed first-fit, longest first, into bins of the longest row's length,
     * positions restarting at each row and attention kept inside it (a block-diagonal causal mask), so only each bin's
     * tail is padding; passes are then budgeted by bins x longest, and attention costs no more than padded rows. Same
     * outputs and gradients as padding, within float rounding. Pays where a pass's row lengths differ widely; not yet
     * timed on a GPU. @default false
     */
    packing: z.boolean().default(false),
    /**
     * Most tokens of graphs one backward call keeps when its rows span several passes (the trainer's micro-batches are
     * one pass each; a call cut otherwise, e.g. by `ragen bench gpu` or an API user, may span several): the first pass
     * always keeps its graph, later ones while the total fits, the rest run without one and are recomputed in the
     * backward (a second forward, memory of one pass). null: `tokenBudget`. @default null
     */
    graphTokenBudget: z.number().int().min(16).nullable().default(null),
    /**
     * Data-parallel worker processes on this machine, launched with torchrun (gloo on CPU, NCCL on CUDA): each takes
     * its share of every batch and of the prompts; gradients are summed across them. Each holds the whole model, except
     * on CUDA with torch >= 2.4, where FSDP2 shards it across them (not yet run on a GPU; `RAGEN_TORCH_FSDP=0` turns it
     * off; docs/gpu.md). @default 1
     */
    ranks: z.number().int().min(1).default(1),
    /**
     * Machines taking part, `ranks` processes on each (torchrun's `--nnodes`, static rendezvous): this one is node 0
     * and prints the command to run on the others (docs/gpu.md). @default 1
     */
    nodes: z.number().int().min(1).default(1),
    /**
     * `host:port` of this machine's rendezvous store as the other nodes reach it; needed when `nodes` > 1. null:
     * 127.0.0.1 and a free port. @default null
     */
    master: z.string().regex(HOST_PORT, 'host:port, e.g. 10.0.0.1:29500').nullable().default(null),
    /**
     * Recompute each decoder layer's activations during backward instead of keeping them: less memory for long
     * sequences, about a third more compute. @default false
     */
    gradientCheckpointing: z.boolean().default(false),
    /**
     * The policy copy rollouts sample from: `bf16` (a bf16 copy, LoRA merged, refreshed at the first generate after
     * each optimizer step: no per-step weight cast under autocast, +2 bytes a parameter), `none` (the float32 policy
     * under autocast), `auto` (`bf16` on CUDA with bf16 precision, else `none`). Under bf16 precision the separate
     * frozen reference and a LoRA model's base weights are stored in bf16 whatever this says. @default "auto"
     */
    rolloutCopy: z.enum(['auto', 'bf16', 'none']).default('auto'),
    /**
     * Experimental, not yet measured on a GPU: `torch.compile` each decoder layer for the teacher-forced passes
     * (log-probs, values, backward; not decoding). Needs torch >= 2.0; on older torch the worker says so and runs
     * eager. @default false
     */
    compile: z.boolean().default(false),
  })
  .refine((t) => t.nodes === 1 || t.master !== null, {
    message:
      "several nodes need `master`, this machine's host:port as the other nodes reach it (e.g. model.torch.master=10.0.0.1:29500)",
    path: ['master'],
  });

/** The policy model and the engine that runs it. */
export const ModelSchema = z.strictObject({
  /**
   * Model directory in Hugging Face layout (`config.json`, `model.safetensors`, `tokenizer.json`): the name of a model
   * shipped in this package's models/ (`ragen-tiny`), or a Hugging Face Hub id (`Qwen/Qwen2.5-0.5B-Instruct`, from the
   * local Hub cache, downloaded when missing). A directory that exists wins. Checked when the run starts, not when the
   * config loads. @default "ragen-tiny"
   */
  path: z.string().min(1).default('ragen-tiny'),
  /**
   * Chat template of the run: `model` (the model directory's own), `ragen-qwen` (ragen's append-only Qwen template:
   * `<|im_start|>role\ncontent<|im_end|>\n` with history verbatim, Qwen2.5's default system prompt, none for model_type
   * qwen3; needs Qwen's tokenizer), or `auto` (the model's own when it is append-only, else `ragen-qwen`, said once on
   * the console: Qwen3's own template drops earlier reasoning, which exact multi-turn token bookkeeping cannot follow).
   * The Qwen presets use `auto`. @default "model"
   */
  chatTemplate: z.enum(['auto', 'model', 'ragen-qwen']).default('model'),
  /**
   * Engine holding the models: `local` (in this process, on ragen-ts's own CPU kernels) or `torch` (a PyTorch worker
   * process, CPU or CUDA; needs an interpreter with torch >= 1.13, see docs/gpu.md). @default "local"
   */
  engine: z.enum(['local', 'torch']).default('local'),
  torch: TorchSchema.prefault({}),
  /**
   * Kernel backend of the local engine (in-process TypeScript, float32): `auto` (`native` when its addon is built, else
   * `wasm`, else `js`), `native`, `wasm`, `js`, or `js64` (plain JS in float64, for checks). @default "auto"
   */
  backend: z.enum(['auto', 'native', 'wasm', 'js', 'js64']).default('auto'),
  /**
   * Storage of the frozen projection weights on the local engine (the LoRA base, which is also the reference, or a full
   * fine-tune's reference copy): `float32`, or `bf16` (half the bytes, in native memory beside the tensor arena; needs
   * `model.backend` native; adapters, activations and optimizer state stay float32). @default "float32"
   */
  frozenDtype: z.enum(['float32', 'bf16']).default('float32'),
  /**
   * Activation checkpointing on the local engine: keep each decoder layer's input only and recompute the layer in
   * backward (memory ~ one layer's activations instead of all of them, about a third more compute; same gradients).
   * The torch engine's is `model.torch.gradientCheckpointing`. @default false
   */
  gradientCheckpointing: z.boolean().default(false),
  lora: LoraSchema.prefault({}),
  vision: VisionSchema.prefault({}),
  critic: CriticSchema.prefault({}),
  /**
   * Frozen reference policy for the KL terms: `auto` loads it only when `algo.kl.useKlLoss` or `algo.kl.inReward` is on
   * (RAGEN always builds one). @default "auto"
   */
  reference: z.enum(['auto', 'always', 'never']).default('auto'),
});

/**
 * One training entry of `env.train`: a built-in env (`tag`) or an agent program run through the training gateway
 * (`agent`, docs/agents.md), exactly one of the two, and how many groups of it each step rolls out.
 */
export const TrainEnvSchema = z.strictObject({
  /**
   * Registered environment id (RAGEN's tag), e.g. `SimpleSokoban`, `FrozenLake`, `Bandit`; checked against the registry
   * when the run starts. Give this or `agent`.
   */
  tag: z.string().min(1).optional(),
  /**
   * An agent program trained through the gateway, e.g. `{command: "node my-agent.mjs", timeoutS: 60}`: one run of it
   * per episode, its OpenAI calls answered by the policy (docs/agents.md). Give this or `tag`.
   */
  agent: agentProgramSchema.optional(),
  /**
   * Metric tag of an `agent` entry (`train/<name>/success`); unset: `agent`, or `agent-<N>` (N the entry's index) when
   * the split has several agent entries. Only for `agent` entries.
   */
  name: z
    .string()
    .regex(/^[\w.+-]+$/, 'letters, digits, `_`, `.`, `+`, `-` only')
    .optional(),
  /** Groups of this env per step (RAGEN's `env_configs.n_groups`). @default 8 */
  groups: z.number().int().min(1).default(8),
  /**
   * Envs per group; all members of a group start from the same seed, so they are G samples of one prompt (RAGEN's
   * `group_size`). Every entry of `env.train` must use the same size. @default 16
   */
  groupSize: z.number().int().min(1).default(16),
});

/** One validation entry of `env.val`: a built-in env (`tag`) or an agent program (`agent`), exactly one of the two. */
export const ValEnvSchema = z.strictObject({
  /** Registered environment id (RAGEN's tag); checked when the run starts. Give this or `agent`. */
  tag: z.string().min(1).optional(),
  /**
   * An agent program validated through the gateway (validation sampling), the same block as in `env.train`. Give this
   * or `tag`.
   */
  agent: agentProgramSchema.optional(),
  /**
   * Metric tag of an `agent` entry (`val/<name>/success`); unset: `agent`, or `agent-<N>` when the split has several
   * agent entries. Only for `agent` entries.
   */
  name: z
    .string()
    .regex(/^[\w.+-]+$/, 'letters, digits, `_`, `.`, `+`, `-` only')
    .optional(),
  /** Validation groups (distinct seeds) of this env. @default 512 */
  groups: z.number().int().min(1).default(512),
  /**
   * Samples per validation seed; above 1 also reports `pass@groupSize`. Every entry of `env.val` must use the same
   * size. @default 1
   */
  groupSize: z.number().int().min(1).default(1),
});

/** Wrappers stacked on every env of one tag, local or remote, in wrapEnv's order (docs/environments.md, Wrappers). */
export const EnvWrappersSchema = z.strictObject({
  /** Multiplies every step's reward (RewardScale); the env's own reward stays in `info.rawReward`. @default 1 */
  rewardScale: z.number().finite().default(1),
  /** Added to every reward after scaling (RewardScale). @default 0 */
  rewardShift: z.number().finite().default(0),
  /** `[low, high]` bounds of the scaled reward (RewardScale); null: no clip. @default null */
  rewardClip: z.tuple([z.number(), z.number()]).nullable().default(null),
  /**
   * Added to the reward of every action the env reports invalid, after scaling (FormatPenalty), e.g. -0.1; 0: none.
   * @default 0
   */
  formatPenalty: z.number().finite().default(0),
  /**
   * Most characters an observation keeps (ObservationTruncation, marked `[... N characters cut]`); null: no limit.
   * @default null
   */
  observationMaxChars: z.number().int().min(1).nullable().default(null),
  /** Which end of a cut observation to keep. @default "head" */
  observationKeep: z.enum(['head', 'tail']).default('head'),
  /**
   * Append every episode of this tag, as the agent saw it, to this JSONL file (EpisodeRecorder); null: none. @default
   * null
   */
  recordEpisodes: z.string().min(1).nullable().default(null),
});

/** Which environments to train and validate on (RAGEN's `es_manager` and `custom_envs`). */
export const EnvSchema = z.strictObject({
  /**
   * Training mixture; each step rolls out every entry's groups (built-in envs and agent programs, concatenated into one
   * batch). @default [{tag: SimpleSokoban, groups: 8, groupSize: 16}]
   */
  train: z
    .array(TrainEnvSchema)
    .min(1)
    .default([{ tag: 'SimpleSokoban', groups: 8, groupSize: 16 }]),
  /**
   * Validation set; each entry is reported as `val/<tag>/success` (an agent entry as `val/<name>/success`). @default
   * [{tag: SimpleSokoban, groups: 512, groupSize: 1}]
   */
  val: z.array(ValEnvSchema).default([{ tag: 'SimpleSokoban', groups: 512, groupSize: 1 }]),
  /**
   * Per-tag env config overrides, e.g. `{FrozenLake: {successRate: 1}}`, validated by the env's own schema when the run
   * starts (RAGEN's `custom_envs.<tag>.env_config`). @default {}
   */
  config: z.record(z.string().min(1), z.record(z.string(), z.unknown())).default({}),
  /**
   * Per-tag wrappers (reward scale/shift/clip, format penalty, observation truncation, episode recording), e.g.
   * `{SimpleSokoban: {rewardScale: 0.5}}`; the same for local and `remote:` envs. @default {}
   */
  wrappers: z.record(z.string().min(1), EnvWrappersSchema).default({}),
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
  val: ValGenerationSchema.prefault({}),
});

/** The W&B run that `logging.sinks: [jsonl, wandb]` logs to. */
export const WandbSchema = z.strictObject({
  /** W&B project; RAGEN's `trainer.project_name`. @default "ragen-ts" */
  project: z.string().min(1).default('ragen-ts'),
  /** W&B entity (user or team); null uses the API key's default entity. @default null */
  entity: z.string().min(1).nullable().default(null),
  /** Run name shown in W&B; null uses the run directory's name. @default null */
  name: z.string().min(1).nullable().default(null),
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
  /**
   * Console output: `auto` (a progress bar on a terminal, plain lines otherwise), `bar`, `plain`, or `none`. @default
   * "auto"
   */
  console: z.enum(['auto', 'bar', 'plain', 'none']).default('auto'),
  /**
   * Where metric records go: `jsonl` (`metrics.jsonl`, always: the dashboard, `ragen eval` and resume read it),
   * `tensorboard` (event files in `<run>/tensorboard/`), `wandb` (Weights & Biases through the optional `@wandb/sdk`
   * package; `WANDB_API_KEY` and `WANDB_BASE_URL` as W&B reads them). @default ["jsonl"]
   */
  sinks: z
    .array(z.enum(['jsonl', 'tensorboard', 'wandb']))
    .default(['jsonl'])
    .refine(
      (s) => s.includes('jsonl'),
      'must include `jsonl`: the dashboard, `ragen eval` and `--resume` read metrics.jsonl; add the others beside it, e.g. [jsonl, tensorboard]',
    )
    .refine((s) => new Set(s).size === s.length, 'lists a sink twice; name each once'),
  wandb: WandbSchema.prefault({}),
});

/** The whole StarPO config: what `ragen train` resolves from defaults, a preset and overrides. */
export const ConfigSchema = z.strictObject({
  /**
   * Short run name used in the run directory name in place of the env tag; null uses the first training tag. @default
   * null
   */
  name: z
    .string()
    .regex(/^[\w.+-]+$/, 'letters, digits, `_`, `.`, `+`, `-` only')
    .nullable()
    .default(null),
  seed: SeedSchema.prefault({}),
  model: ModelSchema.prefault({}),
  env: EnvSchema.prefault({}),
  agent: agentConfigSchema.prefault({}),
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
