// The local engine: the policy (with optional LoRA), a frozen reference and a critic, in this process on
// src/tensor's CPU kernels. Implements generate / forward, and backward + optimizerStep for the trainer.
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import {
  add,
  getBackend,
  gradNorm,
  mul,
  noGrad,
  setBackend,
  sum,
  tensor,
  tidy,
  type BackendName,
  type Tensor,
} from '../tensor/index.js';
import {
  commonPrefixLength,
  generate,
  generateYielding,
  LoraAdapters,
  loadModel,
  loadModelConfig,
  ADAPTER_DIR,
  packedGradient,
  packTokens,
  Qwen25VL,
  saveModel,
  tokenAligned,
  tokenForward,
  Transformer,
  readSafetensors,
  refuseStrayVisionToken,
  ValueHead,
  VALUE_HEAD_FILE,
  vlBatchOutputs,
  type VLTokenOutputOptions,
  type LoraConfig,
  type ModelConfig,
  type PackedBatch,
  type TokenOutputs,
  type VisionInput,
} from '../model/index.js';
import { loadTokenizer, type VisionProcessor } from '../tokenizer/index.js';
import { ConfigError, Rng } from '../util/index.js';
import { RoleOptimizer, loadOptimizerStates, saveOptimizerStates } from './local-optim.js';
import {
  generateWithImages,
  imageRows,
  checkpointModelType,
  isVisionCheckpoint,
  loadVision,
  saveVision,
  type LocalVision,
} from './local-vision.js';
import { rowTokens } from './batch.js';
import { checkArenaFits } from './memory-plan.js';
import type {
  BackwardOptions,
  EngineSaveOptions,
  ForwardResult,
  Generation,
  ModelRole,
  OptimizerSettings,
  OptimizerStepResult,
  OutputGradients,
  SamplingParams,
  SequenceBatch,
  TrainableEngine,
  TrainableRole,
} from './types.js';

/** What the local engine holds. */
export interface LocalEngineOptions {
  policy: Transformer;
  /** Frozen reference: a model, 'base' (the policy without its LoRA adapters), or none. @default null */
  reference?: Transformer | 'base' | null;
  /** Critic: a value head on the policy's trunk ('shared'), or a separate model with its head. @default null */
  critic?:
    { mode: 'shared'; valueHead: ValueHead } | { mode: 'separate'; model: Transformer; valueHead: ValueHead } | null;
  /** Token ids -> text, for stop strings. */
  decode?: (ids: number[]) => string;
  /** tokenizer.json copied into saved checkpoints. */
  tokenizerPath?: string;
  /** Seed of LoRA dropout. @default 0 */
  seed?: number;
  /**
   * Most tokens (batch x longest sequence, after the shared prefix) per no-grad forward chunk (bounds memory). @default
   * 4096
   */
  forwardTokenBudget?: number;
  /**
   * Run a prefix shared by every sequence of a batch once (batch 1) when it has at least this many tokens
   * (training sequences all start with the same system prompt); 0 turns it off. Same outputs and gradients
   * up to float rounding. @default 16
   */
  sharedPrefixMin?: number;
  /**
   * Activation checkpointing in backward passes: keep each decoder layer's input only and recompute the layer when
   * backward reaches it (memory ~ one layer's activations, about a third more compute). Same gradients. @default false
   */
  gradientCheckpointing?: boolean;
  /**
   * A vision-language policy (Qwen2.5-VL) whose language model is `policy`: generate calls whose prompts carry images
   * and teacher-forced rows that carry images (`SequenceBatch.images`) run through it, one row at a time.
   */
  vision?: LocalVision;
  /** Train the vision tower's weights with the policy's (`model.vision.train`); frozen otherwise. @default false */
  visionTrain?: boolean;
}

/** How `LocalEngine.fromPretrained` / `create` set up the models. */
export interface LocalPretrainedOptions {
  /** Kernel backend; 'auto' = native, else wasm, else js. @default 'auto' */
  backend?: 'auto' | BackendName;
  /** LoRA adapters to attach (ignored when the checkpoint already holds an adapter). */
  lora?: LoraConfig | null;
  /** Critic layout; a separate critic starts from `criticPath` (default: the policy's checkpoint). @default null */
  critic?: 'shared' | 'separate' | null;
  criticPath?: string;
  /** Keep a frozen reference policy (with LoRA: the base weights, no copy). @default false */
  reference?: boolean;
  /**
   * Storage of frozen projection weights (the LoRA base, a reference copy): bf16 puts them in native memory outside
   * the tensor arena (native backend only). @default 'float32'
   */
  frozenDtype?: 'float32' | 'bf16';
  decode?: (ids: number[]) => string;
  seed?: number;
  /** See LocalEngineOptions.gradientCheckpointing. @default false */
  gradientCheckpointing?: boolean;
  /** A vision-language checkpoint's tower trains (`model.vision.train`); refused for a text-only model. @default false */
  visionTrain?: boolean;
}

/** Tokens the engine's teacher-forced passes processed since the last `reset` (profiling). */
export class TokenStats {
  /** Real tokens (sum of sequence lengths - 1) and padded batch slots (B x T) of no-grad forwards. */
  forwardReal = 0;
  forwardPadded = 0;
  /** The same for backward passes (forward + backward). */
  backwardReal = 0;
  backwardPadded = 0;

  reset(): void {
    this.forwardReal = this.forwardPadded = this.backwardReal = this.backwardPadded = 0;
  }

  /** Count one row of `length` tokens run alone (a vision-language row). */
  countRow(pass: 'forward' | 'backward', length: number): void {
    if (pass === 'forward') {
      this.forwardReal += length - 1;
      this.forwardPadded += length;
    } else {
      this.backwardReal += length - 1;
      this.backwardPadded += length;
    }
  }

  /** Count one packed batch of a pass (its shared prefix once). */
  count(pass: 'forward' | 'backward', packed: PackedBatch): void {
    const real = packed.lengths.reduce((a, L) => a + L - 1, 0);
    const padded = packed.B * packed.T + packed.prefix.ids.length;
    if (pass === 'forward') {
      this.forwardReal += real;
      this.forwardPadded += padded;
    } else {
      this.backwardReal += real;
      this.backwardPadded += padded;
    }
  }
}

/**
 * The in-process engine: policy (optionally LoRA), frozen reference and critic on our own kernels (src/model,
 * src/tensor).
 */
export class LocalEngine implements TrainableEngine {
  readonly kind = 'local';
  /** Token counters of forward / backward (see TokenStats). */
  readonly tokenStats = new TokenStats();
  readonly policy: Transformer;
  private readonly reference: Transformer | 'base' | null;
  private readonly critic: LocalEngineOptions['critic'];
  private readonly options: LocalEngineOptions;
  private readonly dropoutRng: Rng;
  private readonly optimizers = new Map<TrainableRole, RoleOptimizer>();

  constructor(options: LocalEngineOptions) {
    this.options = options;
    this.policy = options.policy;
    this.reference = options.reference ?? null;
    this.critic = options.critic ?? null;
    if (this.reference === 'base' && !this.policy.lora)
      throw new ConfigError(
        "reference 'base' needs LoRA adapters on the policy (the base is then the frozen reference)",
      );
    if (this.reference instanceof Transformer) this.reference.setBaseTrainable(false);
    const vision = options.vision;
    if (vision && vision.model.lm !== this.policy)
      throw new ConfigError("LocalEngine: vision.model's language model must be the engine's policy");
    if (vision && this.reference instanceof Transformer && vision.reference?.lm !== this.reference)
      throw new ConfigError(
        "LocalEngine: a VLM's reference copy must be given as vision.reference (its language model the reference)",
      );
    if (vision && this.critic?.mode === 'separate' && vision.critic?.lm !== this.critic.model)
      throw new ConfigError(
        "LocalEngine: a VLM's separate critic must be given as vision.critic (its language model the critic's model), so that it reads the images with its own tower",
      );
    if (options.visionTrain && !vision)
      throw new ConfigError(
        'visionTrain (model.vision.train) needs a vision-language model; this policy is text-only.',
      );
    for (const vl of [vision?.model, vision?.critic])
      if (vl) for (const t of vl.visual.weights.values()) t.requiresGrad = options.visionTrain ?? false;
    this.dropoutRng = new Rng(options.seed ?? 0);
  }

  /** A fresh seeded model of `config` (for training from scratch). */
  static create(config: ModelConfig, opts: LocalPretrainedOptions & { seed?: number } = {}): LocalEngine {
    selectBackend(opts.backend);
    const seed = opts.seed ?? 0;
    const policy = Transformer.init(config, seed);
    if (opts.lora) LoraAdapters.attach(policy, opts.lora, seed + 1);
    let reference: Transformer | 'base' | null = null;
    if (opts.reference) reference = opts.lora ? 'base' : Transformer.init(config, seed);
    let critic: LocalEngineOptions['critic'] = null;
    if (opts.critic === 'shared') critic = { mode: 'shared', valueHead: ValueHead.init(config.hiddenSize, seed + 2) };
    if (opts.critic === 'separate')
      critic = {
        mode: 'separate',
        model: Transformer.init(config, seed + 3),
        valueHead: ValueHead.init(config.hiddenSize, seed + 2),
      };
    return new LocalEngine({
      policy,
      reference,
      critic,
      seed,
      ...(opts.decode ? { decode: opts.decode } : {}),
      ...(opts.gradientCheckpointing ? { gradientCheckpointing: true } : {}),
    });
  }

  /** Load a Hugging Face checkpoint directory (ours or transformers'); `dir/critic` holds a separate critic. */
  static async fromPretrained(dir: string, opts: LocalPretrainedOptions = {}): Promise<LocalEngine> {
    selectBackend(opts.backend);
    if (await isVisionCheckpoint(dir)) return LocalEngine.fromVisionCheckpoint(dir, opts);
    if ((await checkpointModelType(dir)) === 'qwen3_vl')
      throw new ConfigError(
        `${dir} is a Qwen3-VL checkpoint, which the local engine does not run yet (it runs Qwen2.5-VL); train it on the torch engine (model.engine: torch) or use a Qwen2.5-VL checkpoint.`,
      );
    if (opts.visionTrain)
      throw new ConfigError(
        `model.vision.train: true needs a vision-language checkpoint; ${dir} is a text-only model. Set model.vision.train: false.`,
      );
    await checkCheckpointFits(dir, opts);
    const seed = opts.seed ?? 0;
    const bf16 = frozenBf16(dir, opts);
    const { model: policy, valueHead } = await loadModel(dir, { frozenBf16: bf16.policy });
    if (opts.lora && !policy.lora) LoraAdapters.attach(policy, opts.lora, seed + 1);
    let reference: Transformer | 'base' | null = null;
    if (opts.reference)
      reference = policy.lora ? 'base' : (await loadModel(dir, { adapters: false, frozenBf16: bf16.reference })).model;
    storeFrozen(policy, reference, opts.frozenDtype);
    let critic: LocalEngineOptions['critic'] = null;
    if (opts.critic === 'shared')
      critic = { mode: 'shared', valueHead: valueHead ?? ValueHead.init(policy.config.hiddenSize, seed + 2) };
    if (opts.critic === 'separate') {
      const from = criticSource(dir, opts);
      const c = await loadModel(from, { adapters: false });
      critic = {
        mode: 'separate',
        model: c.model,
        valueHead: c.valueHead ?? ValueHead.init(c.model.config.hiddenSize, seed + 2),
      };
    }
    const tokenizerPath = join(dir, 'tokenizer.json');
    const hasTokenizer = existsSync(tokenizerPath);
    // Stop strings need ids -> text: the checkpoint's own tokenizer unless the caller passes one.
    const decode = opts.decode ?? (hasTokenizer ? (ids: number[]) => loadTokenizer(dir).decode(ids) : undefined);
    return new LocalEngine({
      policy,
      reference,
      critic,
      seed,
      ...(decode ? { decode } : {}),
      ...(hasTokenizer ? { tokenizerPath } : {}),
      ...(opts.gradientCheckpointing ? { gradientCheckpointing: true } : {}),
    });
  }

  /**
   * A Qwen2.5-VL checkpoint: its language model is the policy (LoRA, a 'base' reference and a shared or separate critic
   * as for text models, the separate critic a whole VLM with its own tower); bf16 frozen weights and the memory plan
   * are not supported for it yet.
   */
  private static async fromVisionCheckpoint(dir: string, opts: LocalPretrainedOptions): Promise<LocalEngine> {
    if ((opts.frozenDtype ?? 'float32') !== 'float32')
      throw new ConfigError(
        `${dir} is a Qwen2.5-VL checkpoint: the local engine runs it with float32 weights so far (got frozenDtype ${String(opts.frozenDtype)}); set model.frozenDtype: float32.`,
      );
    const seed = opts.seed ?? 0;
    const vision = await loadVision(dir);
    const policy = vision.model.lm;
    if (opts.lora && !policy.lora) LoraAdapters.attach(policy, opts.lora, seed + 1);
    let reference: Transformer | 'base' | null = null;
    let referenceVision: Qwen25VL | undefined;
    if (opts.reference) {
      referenceVision = policy.lora ? undefined : (await loadVision(dir)).model;
      reference = referenceVision ? referenceVision.lm : 'base';
    }
    let critic: LocalEngineOptions['critic'] = null;
    let criticVision: Qwen25VL | undefined;
    if (opts.critic === 'shared') critic = { mode: 'shared', valueHead: await loadValueHead(dir, policy, seed + 2) };
    if (opts.critic === 'separate') {
      const from = criticSource(dir, opts);
      if (!(await isVisionCheckpoint(from)))
        throw new ConfigError(
          `${from} is not a Qwen2.5-VL checkpoint: a vision-language policy's separate critic must read the images too; point model.critic.path at a Qwen2.5-VL directory or leave it unset (the policy's checkpoint).`,
        );
      criticVision = await Qwen25VL.load(from);
      critic = {
        mode: 'separate',
        model: criticVision.lm,
        valueHead: await loadValueHead(from, criticVision.lm, seed + 2),
      };
    }
    const tokenizerPath = join(dir, 'tokenizer.json');
    const hasTokenizer = existsSync(tokenizerPath);
    const decode = opts.decode ?? (hasTokenizer ? (ids: number[]) => loadTokenizer(dir).decode(ids) : undefined);
    return new LocalEngine({
      policy,
      reference,
      critic,
      seed,
      vision: {
        ...vision,
        ...(referenceVision ? { reference: referenceVision } : {}),
        ...(criticVision ? { critic: criticVision } : {}),
      },
      ...(opts.visionTrain ? { visionTrain: true } : {}),
      ...(decode ? { decode } : {}),
      ...(hasTokenizer ? { tokenizerPath } : {}),
      ...(opts.gradientCheckpointing ? { gradientCheckpointing: true } : {}),
    });
  }

  /** The image processor settings of a vision-language policy; undefined for a text model. */
  get vision(): VisionProcessor | undefined {
    return this.options.vision?.processor;
  }

  /** The model's position table (max_position_embeddings): a prompt plus its generation must fit it. */
  get maxPositions(): number {
    return this.policy.config.maxPositionEmbeddings;
  }

  async generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]> {
    const decode = this.options.decode;
    const opts = { ...params, ...(decode ? { decode } : {}) };
    const vision = this.options.vision;
    if (vision && params.images?.some((im) => im !== undefined && im.length > 0))
      return generateWithImages(vision, prompts, opts);
    if (vision) prompts.forEach((p, i) => refuseStrayVisionToken(p, vision.model.config, `Prompt ${i}`));
    // A caller that reads tokens per step (streaming) also gets the event loop back between steps to send them.
    return params.onTokens ? generateYielding(this.policy, prompts, opts) : generate(this.policy, prompts, opts);
  }

  async forward(batch: SequenceBatch, options: { role: ModelRole; entropy?: boolean }): Promise<ForwardResult> {
    const images = imageRows(batch, this.options.vision);
    if (images.size > 0) return this.forwardWithImages(batch, options, images);
    const { B, T } = batch;
    const { want, out } = forwardOutputs(B, T, options);
    for (const rows of this.chunks(batch)) {
      noGrad(() =>
        tidy(() => {
          const packed = this.pack(batch, rows);
          this.tokenStats.count('forward', packed);
          const t = this.outputs(packed, options.role, want);
          for (const key of ['logprobs', 'entropy', 'values'] as const) {
            if (t[key] && out[key])
              tokenAligned(
                packed,
                t[key].toFloat32Array(),
                t.prefix?.[key]?.toFloat32Array() ?? null,
                out[key],
                T,
                rows,
              );
          }
        }),
      );
    }
    return out;
  }

  /**
   * `forward` of a batch with image rows: its text rows take the text paths, the image rows run through the VLM in
   * groups of up to `forwardTokenBudget` padded tokens (longest first).
   */
  private async forwardWithImages(
    batch: SequenceBatch,
    options: { role: ModelRole; entropy?: boolean },
    images: Map<number, VisionInput>,
  ): Promise<ForwardResult> {
    const { B, T } = batch;
    const text = Array.from({ length: B }, (_, b) => b).filter((b) => !images.has(b));
    const { want, out } = forwardOutputs(B, T, options);
    if (text.length > 0) {
      const part = await this.forward(selectSequences(batch, text), options);
      for (const key of ['logprobs', 'entropy', 'values'] as const)
        text.forEach((b, i) => out[key]?.set(part[key]!.subarray(i * T, (i + 1) * T), b * T));
    }
    const budget = this.options.forwardTokenBudget ?? 4096;
    const L = batch.lengths;
    const order = [...images.keys()].sort((a, b) => L[b]! - L[a]! || a - b);
    for (let i = 0; i < order.length;) {
      const n = Math.max(1, Math.min(order.length - i, Math.floor(budget / L[order[i]!]!)));
      const group = new Map(order.slice(i, i + n).map((b) => [b, images.get(b)!]));
      i += n;
      noGrad(() =>
        tidy(() => {
          for (const b of group.keys()) this.tokenStats.countRow('forward', L[b]!);
          const t = this.visionOutputs(batch, group, options.role, want);
          for (const key of ['logprobs', 'entropy', 'values'] as const)
            if (t[key] && out[key]) scatterRows(t[key].toFloat32Array(), t.starts, [...group.keys()], out[key], batch);
        }),
      );
    }
    return out;
  }

  async backward(
    batch: SequenceBatch,
    options: BackwardOptions,
    lossGrad: (out: ForwardResult) => OutputGradients,
  ): Promise<ForwardResult> {
    const images = imageRows(batch, this.options.vision);
    const values = options.role === 'critic' || (options.values ?? false);
    if (values && !this.critic)
      throw new ConfigError(
        'values were requested but this engine has no critic; create it with critic: "shared" or "separate"',
      );
    if (options.values && options.role === 'policy' && this.critic?.mode !== 'shared')
      throw new ConfigError("values in a policy backward need critic mode 'shared'");
    const { B, T } = batch;
    const want = { entropy: (options.entropy ?? false) && options.role !== 'critic', values };
    const rng = options.diagnostic ? undefined : this.dropoutRng;
    return tidy(() => {
      // Text rows take the packed paths (all rows when none has images); the image rows run through the VLM together.
      const text = images.size === 0 ? undefined : Array.from({ length: B }, (_, b) => b).filter((b) => !images.has(b));
      const packed = text?.length === 0 ? null : this.pack(batch, text);
      if (packed) this.tokenStats.count('backward', packed);
      const t = packed ? this.outputs(packed, options.role, want, rng) : null;
      for (const b of images.keys()) this.tokenStats.countRow('backward', batch.lengths[b]!);
      const seen = images.size > 0 ? this.visionOutputs(batch, images, options.role, want, rng) : null;
      const result: ForwardResult = { logprobs: new Float32Array(B * T) };
      if (want.entropy) result.entropy = new Float32Array(B * T);
      if (want.values) result.values = new Float32Array(B * T);
      for (const key of OUTPUT_KEYS) {
        const out = result[key];
        if (!out) continue;
        if (packed && t?.[key])
          tokenAligned(packed, t[key].toFloat32Array(), t.prefix?.[key]?.toFloat32Array() ?? null, out, T, text);
        if (seen?.[key]) scatterRows(seen[key].toFloat32Array(), seen.starts, [...images.keys()], out, batch);
      }
      const grads = lossGrad(result);
      // The surrogate sum(grad * output): its gradient w.r.t. the weights is the chain rule through the outputs.
      let loss: Tensor | null = null;
      const term = (out: Tensor | undefined, g: Float32Array): void => {
        if (!out) return;
        const part = sum(mul(out, tensor(g)));
        loss = loss ? add(loss, part) : part;
      };
      for (const key of OUTPUT_KEYS) {
        const g = grads[key];
        if (!g) continue;
        if (text && g.length !== B * T)
          throw new RangeError(
            `${key} gradient: ${g.length} entries for a (B, T) = (${B}, ${T}) batch; expected ${B * T}`,
          );
        if (packed && t?.[key]) {
          const p = packedGradient(packed, text ? takeRowsOf(g, text, T) : g, T, `${key} gradient`);
          term(t[key], p.rows);
          term(t.prefix?.[key], p.prefix);
        }
        if (seen?.[key]) term(seen[key], gatherRows(g, seen.starts, [...images.keys()], batch));
      }
      if (loss) (loss as Tensor).backward();
      return result;
    });
  }

  async optimizerStep(role: TrainableRole, settings: OptimizerSettings): Promise<OptimizerStepResult> {
    return this.optimizer(role).step(settings);
  }

  zeroGrad(role: TrainableRole): void {
    this.optimizer(role).zeroGrad();
  }

  async gradNorm(role: TrainableRole): Promise<number> {
    return gradNorm(this.parameters(role).map(([, t]) => t));
  }

  /**
   * Trainable parameters of a role, by name (LoRA: PEFT keys; critic: `value_head.*` and, when separate, its model).
   */
  parameters(role: TrainableRole): [string, Tensor][] {
    if (role === 'policy') {
      const tower = this.options.visionTrain ? [...this.options.vision!.model.visual.weights] : [];
      return [...this.policy.parameters(), ...tower];
    }
    if (!this.critic) throw new ConfigError('this engine has no critic');
    const head = this.critic.valueHead.parameters();
    if (this.critic.mode === 'shared') return head;
    const tower =
      this.options.visionTrain && this.options.vision?.critic ? [...this.options.vision.critic.visual.weights] : [];
    return [...this.critic.model.parameters(), ...tower, ...head];
  }

  async save(dir: string, options: EngineSaveOptions = {}): Promise<void> {
    const shared = this.critic?.mode === 'shared' ? this.critic.valueHead : null;
    const shard = options.maxShardBytes === undefined ? {} : { maxShardBytes: options.maxShardBytes };
    const policy = {
      valueHead: shared,
      ...shard,
      ...(this.options.tokenizerPath ? { tokenizerPath: this.options.tokenizerPath } : {}),
    };
    if (this.options.vision) await saveVision(dir, this.options.vision, policy);
    else await saveModel(dir, this.policy, policy);
    const critic = { valueHead: this.critic?.valueHead ?? null, ...shard };
    const criticVision = this.options.vision?.critic;
    if (criticVision)
      await saveVision(join(dir, 'critic'), { model: criticVision, processor: this.options.vision!.processor }, critic);
    else if (this.critic?.mode === 'separate') await saveModel(join(dir, 'critic'), this.critic.model, critic);
    if (options.optimizer) await saveOptimizerStates(dir, this.optimizers, options.maxShardBytes);
  }

  async loadOptimizer(dir: string): Promise<void> {
    await loadOptimizerStates(dir, (role) => this.optimizer(role));
  }

  dispose(): void {
    for (const o of this.optimizers.values()) o.dispose();
    this.policy.dispose();
    this.options.vision?.model.visual.dispose();
    this.options.vision?.reference?.visual.dispose();
    this.options.vision?.critic?.visual.dispose();
    if (this.reference instanceof Transformer) this.reference.dispose();
    if (this.critic?.mode === 'separate') this.critic.model.dispose();
    this.critic?.valueHead.dispose();
  }

  private optimizer(role: TrainableRole): RoleOptimizer {
    let o = this.optimizers.get(role);
    if (!o) {
      o = new RoleOptimizer(role, this.parameters(role));
      this.optimizers.set(role, o);
    }
    return o;
  }

  /** Rows of the batch in chunks of similar length (longest first) whose padded size fits the token budget. */
  private *chunks(batch: SequenceBatch): Generator<number[]> {
    const budget = this.options.forwardTokenBudget ?? 4096;
    const min = this.options.sharedPrefixMin ?? 16;
    const common = min > 0 && batch.B > 1 ? commonPrefixLength(batch) - 1 : 0;
    const shared = common >= min ? common : 0; // each chunk runs this prefix once, its rows the rest
    const L = batch.lengths;
    const order = Array.from({ length: batch.B }, (_, i) => i).sort((a, b) => L[b]! - L[a]! || a - b);
    let cur: number[] = [];
    for (const i of order) {
      const longest = (cur.length > 0 ? L[cur[0]!]! : L[i]!) - shared;
      if (cur.length > 0 && (cur.length + 1) * longest > budget) {
        yield cur;
        cur = [];
      }
      cur.push(i);
    }
    if (cur.length > 0) yield cur;
  }

  /**
   * The batch's `rows` (default: all) laid out for the model, with their shared prefix split off when it is long
   * enough.
   */
  private pack(batch: SequenceBatch, rows?: readonly number[]): PackedBatch {
    const min = this.options.sharedPrefixMin ?? 16;
    if (!rows || rows.every((r, i) => r === i && rows.length === batch.B)) return packTokens(batch, min);
    const { T } = batch;
    const ids = new Int32Array(rows.length * T);
    rows.forEach((r, i) => ids.set(batch.ids.subarray(r * T, (r + 1) * T), i * T));
    return packTokens({ B: rows.length, T, ids, lengths: rows.map((r) => batch.lengths[r]!) }, min);
  }

  /**
   * The model, value head and adapters a role's pass uses: the reference (a copy, or the policy's base weights:
   * `bare`, run without its LoRA adapters), the critic (values only), or the policy (with the shared head when values
   * are wanted).
   */
  private roleModel(
    role: ModelRole,
    want: { values: boolean },
  ): { model: Transformer; valueHead?: ValueHead; logprobs: boolean; bare: boolean } {
    if (role === 'reference') {
      if (!this.reference) throw new ConfigError('this engine has no reference model; create it with reference: true');
      const copy = this.reference instanceof Transformer;
      return { model: copy ? (this.reference as Transformer) : this.policy, logprobs: true, bare: !copy };
    }
    if (role === 'critic') {
      if (!this.critic)
        throw new ConfigError('this engine has no critic; create it with critic: "shared" or "separate"');
      const model = this.critic.mode === 'separate' ? this.critic.model : this.policy;
      return { model, valueHead: this.critic.valueHead, logprobs: false, bare: false };
    }
    const valueHead = want.values && this.critic ? this.critic.valueHead : undefined;
    return { model: this.policy, ...(valueHead ? { valueHead } : {}), logprobs: true, bare: false };
  }

  /** Output tensors of one packed batch for a role. */
  private outputs(
    batch: PackedBatch,
    role: ModelRole,
    want: { entropy: boolean; values: boolean },
    rng?: Rng,
  ): TokenOutputs {
    const { model, bare, ...pass } = this.roleModel(role, want);
    return withoutAdaptersIf(bare, model, () => tokenForward(model, batch, this.passOptions(pass, want, rng)));
  }

  /** What a role's pass computes (`roleModel`'s head and log-probs, `want`'s entropy) and how. */
  private passOptions(
    pass: { valueHead?: ValueHead; logprobs: boolean },
    want: { entropy: boolean },
    rng: Rng | undefined,
  ): VLTokenOutputOptions {
    return {
      logprobs: pass.logprobs,
      entropy: want.entropy,
      ...(pass.valueHead ? { valueHead: pass.valueHead } : {}),
      ...(rng ? { dropoutRng: rng } : {}),
      ...(this.options.gradientCheckpointing ? { checkpoint: true } : {}),
    };
  }

  /**
   * Output tensors of the image rows `rows` (row -> its images) through the vision-language model in one pass: each
   * (N) over the rows' tokens 1..L-1 in the map's order, row k's from `starts[k]` (`vlBatchOutputs`).
   */
  private visionOutputs(
    batch: SequenceBatch,
    rows: Map<number, VisionInput>,
    role: ModelRole,
    want: { entropy: boolean; values: boolean },
    rng?: Rng,
  ): Partial<Record<OutputKey, Tensor>> & { starts: number[] } {
    const vision = this.options.vision!;
    const { model, bare, ...pass } = this.roleModel(role, want);
    const vl = model === this.policy ? vision.model : model === vision.critic?.lm ? vision.critic : vision.reference!;
    const seqs = [...rows].map(([b, images]) => ({ ids: rowTokens(batch, b), images }));
    return withoutAdaptersIf(bare, model, () => vlBatchOutputs(vl, seqs, this.passOptions(pass, want, rng)));
  }
}

/** Per-token outputs of `rows` (row k's L - 1 values from `starts[k]`) into `out` (B, T) at row b's tokens 1..L-1. */
function scatterRows(
  values: Float32Array,
  starts: readonly number[],
  rows: readonly number[],
  out: Float32Array,
  batch: SequenceBatch,
): void {
  rows.forEach((b, k) => out.set(values.subarray(starts[k]!, starts[k]! + batch.lengths[b]! - 1), b * batch.T + 1));
}

/** The inverse of `scatterRows`: the (B, T) gradient's entries at each row's tokens 1..L-1, in `starts` order. */
function gatherRows(
  g: ArrayLike<number>,
  starts: readonly number[],
  rows: readonly number[],
  batch: SequenceBatch,
): Float32Array {
  const out = new Float32Array(rows.reduce((a, b) => a + batch.lengths[b]! - 1, 0));
  rows.forEach((b, k) => {
    for (let t = 1; t < batch.lengths[b]!; t++) out[starts[k]! + t - 1] = g[b * batch.T + t]!;
  });
  return out;
}

/** `fn()` over the base weights of `model` (its LoRA adapters detached) when `bare`, else as it is. */
function withoutAdaptersIf<T>(bare: boolean, model: Transformer, fn: () => T): T {
  const adapters = model.lora;
  if (bare) model.lora = null;
  try {
    return fn();
  } finally {
    model.lora = adapters;
  }
}

type OutputKey = 'logprobs' | 'entropy' | 'values';
const OUTPUT_KEYS: readonly OutputKey[] = ['logprobs', 'entropy', 'values'];

/** The rows `rows` of a batch (text rows of a batch with images), images left out. */
function selectSequences(batch: SequenceBatch, rows: readonly number[]): SequenceBatch {
  const { T } = batch;
  return {
    B: rows.length,
    T,
    ids: takeRowsOf(batch.ids, rows, T),
    attentionMask: takeRowsOf(batch.attentionMask, rows, T),
    lengths: Int32Array.from(rows, (r) => batch.lengths[r]!),
  };
}

/** Rows `rows` of a (B, T) array, as a (rows.length, T) one. */
function takeRowsOf<A extends Int32Array | Uint8Array | Float32Array>(
  x: A | ArrayLike<number>,
  rows: readonly number[],
  T: number,
): A {
  const Ctor = (ArrayBuffer.isView(x) ? x.constructor : Float32Array) as new (n: number) => A;
  const out = new Ctor(rows.length * T);
  rows.forEach((r, i) => {
    for (let t = 0; t < T; t++) out[i * T + t] = x[r * T + t]!;
  });
  return out;
}

/**
 * Which models of checkpoint `dir` load their projections straight into bf16 (frozenDtype bf16): the policy when it
 * will carry LoRA adapters (given, or saved in `dir`), a reference copy otherwise. Refuses bf16 with nothing frozen.
 */
export function frozenBf16(
  dir: string,
  opts: Pick<LocalPretrainedOptions, 'lora' | 'reference' | 'frozenDtype'>,
): { policy: boolean; reference: boolean } {
  if (opts.frozenDtype !== 'bf16') return { policy: false, reference: false };
  const lora = !!opts.lora || existsSync(join(dir, ADAPTER_DIR, 'adapter_config.json'));
  if (!lora && !opts.reference) throw new ConfigError(NOTHING_FROZEN);
  return { policy: lora, reference: !lora && !!opts.reference };
}

const NOTHING_FROZEN =
  'model.frozenDtype=bf16 needs frozen weights: LoRA adapters (model.lora.rank > 0) or a reference model; a full fine-tune without a reference has none';

/**
 * With frozenDtype bf16, move the frozen weights to bf16 native memory: the LoRA policy's base (its reference too),
 * and a separate reference model.
 */
export function storeFrozen(
  policy: Transformer,
  reference: Transformer | 'base' | null,
  frozenDtype: 'float32' | 'bf16' | undefined,
): void {
  if (frozenDtype !== 'bf16') return;
  if (!policy.lora && !(reference instanceof Transformer)) throw new ConfigError(NOTHING_FROZEN);
  if (policy.lora) policy.storeFrozenAsBf16();
  if (reference instanceof Transformer) {
    reference.setBaseTrainable(false);
    reference.storeFrozenAsBf16();
  }
}

/**
 * Refuse, before reading any weight, a checkpoint whose models (with `opts`' LoRA, critic and reference) cannot fit
 * the current backend's tensor arena (see memory-plan.ts).
 */
export async function checkCheckpointFits(dir: string, opts: Omit<LocalPretrainedOptions, 'decode'>): Promise<void> {
  const config = await loadModelConfig(dir);
  let lora = opts.lora ?? null;
  const saved = join(dir, ADAPTER_DIR, 'adapter_config.json');
  if (existsSync(saved)) {
    const raw = JSON.parse(await readFile(saved, 'utf8')) as { r?: unknown; target_modules?: unknown };
    const r = Number(raw.r);
    const targets = raw.target_modules;
    // a regex target_modules (a VL adapter's, PEFT's form) counts as all-linear: an upper bound
    if (Number.isInteger(r) && r > 0)
      lora = { r, alpha: r, targetModules: Array.isArray(targets) ? targets.map(String) : 'all-linear' };
  }
  const reference = opts.reference ? (lora ? 'base' : 'copy') : null;
  const frozenDtype = opts.frozenDtype ?? 'float32';
  checkArenaFits(config, { lora, critic: opts.critic ?? null, reference, frozenDtype }, getBackend().name, dir);
}

/** The value head saved in checkpoint `dir` (value_head.safetensors), else a fresh seeded one. */
/** Where a separate critic starts: `criticPath`, else the checkpoint's own `critic/`, else the policy's directory. */
function criticSource(dir: string, opts: Pick<LocalPretrainedOptions, 'criticPath'>): string {
  return opts.criticPath ?? (existsSync(join(dir, 'critic', 'config.json')) ? join(dir, 'critic') : dir);
}

async function loadValueHead(dir: string, model: Transformer, seed: number): Promise<ValueHead> {
  const path = join(dir, VALUE_HEAD_FILE);
  if (!existsSync(path)) return ValueHead.init(model.config.hiddenSize, seed);
  return ValueHead.fromWeights(await readSafetensors(path), model.config.hiddenSize, path);
}

function selectBackend(name: 'auto' | BackendName | undefined): void {
  if (name && name !== 'auto') setBackend(name);
  else getBackend();
}

/** What `forward` computes for `options` (entropy for the policy roles when asked, values for the critic) and its zeroed outputs. */
function forwardOutputs(
  B: number,
  T: number,
  options: { role: ModelRole; entropy?: boolean },
): { want: { entropy: boolean; values: boolean }; out: ForwardResult } {
  const want = { entropy: (options.entropy ?? false) && options.role !== 'critic', values: options.role === 'critic' };
  const out: ForwardResult = { logprobs: new Float32Array(B * T) };
  if (want.entropy) out.entropy = new Float32Array(B * T);
  if (want.values) out.values = new Float32Array(B * T);
  return { want, out };
}
