// The torch engine: the Engine seam served by a PyTorch worker process (python/ragen_torch) that holds the policy,
// reference and critic (Hugging Face checkpoints, LoRA, value head), samples with a KV cache, back-propagates the
// trainer's output gradients and runs AdamW. The loss stays in TypeScript (src/algo), as for the local engine.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  contextPastPositions,
  NonFiniteLogitsError,
  refuseImages,
  isVisionLanguageConfig,
  refuseStrayVisionToken,
  visionTokenIdsFromHF,
  type LoraConfig,
  type VisionTokenIds,
} from '../model/index.js';
import { pixelValues, qwen25PreprocessorConfig, type VisionProcessor } from '../tokenizer/index.js';
import { ConfigError, writeFileAt, type RgbImage } from '../util/index.js';
import { loadVisionProcessor } from './local-vision.js';
import { findTorchPython, TORCH_MISSING } from './python.js';
import type { FrameArray } from './torch-protocol.js';
import {
  TORCH_TOKEN_BUDGET,
  TorchRequestError,
  TorchWorker,
  type TorchHello,
  type TorchWorkerOptions,
} from './torch-worker.js';
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
  TokenBudget,
  TrainableEngine,
  TrainableRole,
} from './types.js';

/** How `TorchEngine.fromPretrained` sets up the worker and its models. */
export interface TorchEngineOptions extends Partial<Omit<TorchWorkerOptions, 'python'>> {
  /** Interpreter with torch; default: the first of $RAGEN_PYTHON, python3, /usr/bin/python3 that imports it. */
  python?: string;
  /** LoRA adapters to attach (ignored when the checkpoint already holds an adapter). */
  lora?: LoraConfig | null;
  /**
   * Critic layout; a separate critic starts from `criticPath` (default: `dir/critic`, else the policy's checkpoint).
   * @default null
   */
  critic?: 'shared' | 'separate' | null;
  criticPath?: string;
  /** Keep a frozen reference policy (with LoRA: the base weights, no copy). @default false */
  reference?: boolean;
  /** Where the reference of a full fine-tune is loaded from. @default the policy's checkpoint */
  referencePath?: string;
  /** Token ids -> text, for stop strings. */
  decode?: (ids: number[]) => string;
  /** tokenizer.json copied into saved checkpoints. */
  tokenizerPath?: string;
  /**
   * Recompute each layer's activations in backward instead of keeping them (less memory, ~1/3 more compute). @default
   * false
   */
  gradientCheckpointing?: boolean;
  /** The bf16 rollout copy of the policy (`model.torch.rolloutCopy`). @default "auto" */
  rolloutCopy?: 'auto' | 'bf16' | 'none';
  /**
   * torch.compile each decoder layer for the teacher-forced passes (`model.torch.compile`, experimental). @default
   * false
   */
  compile?: boolean;
  /**
   * Train a vision-language model's vision tower (`model.vision.train`); the worker refuses it for a text-only model.
   * @default false
   */
  visionTrain?: boolean;
  /** Seed of fresh LoRA adapters, a fresh value head and LoRA dropout. @default 0 */
  seed?: number;
  /**
   * Pack each chunk's rows padding-free (positions reset per row, attention kept inside each row) and budget chunks by
   * bins x longest instead of rows x longest. @default false
   */
  packing?: boolean;
  /**
   * Most tokens of graphs one backward call keeps when its rows span several chunks; chunks past it are recomputed in
   * the backward. @default tokenBudget
   */
  graphTokenBudget?: number;
}

/** The worker's counters (`TorchEngine.stats`). */
export interface TorchWorkerStats {
  /** Chunks run through a model so far (forward, backward and recomputation alike). */
  forwardPasses: number;
  /** Of those, the chunks a backward ran a second time because their graph was not kept. */
  recomputedPasses: number;
}

/** The PyTorch engine (`model.engine: torch`). */
export class TorchEngine implements TrainableEngine {
  readonly kind = 'torch';
  private vocabSent = false;

  readonly tokenBudget: TokenBudget;

  private constructor(
    private readonly worker: TorchWorker,
    private readonly options: TorchEngineOptions,
    readonly vocabSize: number,
    /** The model's position table (config.json's max_position_embeddings; Infinity where it names none). */
    readonly maxPositions: number,
    /** A Qwen2.5-VL's or Qwen3-VL's image processor settings: rows and prompts then carry their images to the worker. */
    readonly vision?: VisionProcessor,
    /** A VLM's vision token ids, whose stray uses are refused before the worker sees them. */
    private readonly vlConfig?: VisionTokenIds,
    /** The checkpoint's preprocessor_config.json as read, which `save` writes back. */
    private readonly preprocessorJson?: string,
  ) {
    // The worker's rows are split over its ranks, every node's (python/ragen_torch/dist.py), as its handshake counts
    // them.
    this.tokenBudget = {
      tokens: options.tokenBudget ?? TORCH_TOKEN_BUDGET,
      packing: options.packing ?? false,
      ranks: worker.info.ranks,
    };
  }

  /**
   * Start a worker and load the Hugging Face checkpoint `dir` (with `dir/adapter`, `dir/value_head.safetensors`,
   * `dir/critic`).
   */
  static async fromPretrained(dir: string, opts: TorchEngineOptions = {}): Promise<TorchEngine> {
    if (!existsSync(join(dir, 'config.json')))
      throw new ConfigError(
        `\`${dir}\` is not a model directory: ${join(dir, 'config.json')} is missing (a Hugging Face checkpoint has config.json + model.safetensors).`,
      );
    const python = opts.python ?? findTorchPython()?.python;
    if (!python) throw new ConfigError(`model.engine torch needs PyTorch. ${TORCH_MISSING}`);
    const worker = await TorchWorker.start({ ...opts, python });
    try {
      const r = await worker.request('load', {
        path: resolve(dir),
        lora: opts.lora ?? null,
        critic: opts.critic ?? null,
        reference: opts.reference ?? false,
        seed: opts.seed ?? 0,
        tokenBudget: opts.tokenBudget ?? TORCH_TOKEN_BUDGET,
        graphTokenBudget: opts.graphTokenBudget ?? opts.tokenBudget ?? TORCH_TOKEN_BUDGET,
        packing: opts.packing ?? false,
        gradientCheckpointing: opts.gradientCheckpointing ?? false,
        rolloutCopy: opts.rolloutCopy ?? 'auto',
        compile: opts.compile ?? false,
        vision: { train: opts.visionTrain ?? false },
        ...(opts.criticPath ? { criticPath: resolve(opts.criticPath) } : {}),
        ...(opts.referencePath ? { referencePath: resolve(opts.referencePath) } : {}),
      });
      // a Qwen2.5-VL or Qwen3-VL: its processor settings and vision token ids
      const path = join(dir, 'config.json');
      const hf = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : {};
      const vl = isVisionLanguageConfig(hf);
      const vision = vl ? await loadVisionProcessor(dir) : undefined;
      const pre = join(dir, 'preprocessor_config.json');
      return new TorchEngine(
        worker,
        opts,
        Number(r.header.vocabSize),
        configPositions(dir),
        vision,
        vl ? visionTokenIdsFromHF(hf, path) : undefined,
        vl && existsSync(pre) ? readFileSync(pre, 'utf8') : undefined,
      );
    } catch (e) {
      worker.close(0);
      throw e;
    }
  }

  /** Torch / CUDA versions, device and precision the worker reported. */
  get info(): TorchHello {
    return this.worker.info;
  }

  /** One line for the run's console: torch's version, the device, the precision and how the ranks hold the models. */
  describe(): string {
    const i = this.info;
    const device = i.deviceName && i.deviceName !== i.device ? `${i.device} (${i.deviceName})` : i.device;
    const ranks =
      i.ranks === 1
        ? ''
        : `, ${i.ranks} ranks ${i.sharded ? 'sharding the models with FSDP2' : 'each holding the whole model'}`;
    return `torch engine: torch ${i.torch}${i.cuda ? ` (CUDA ${i.cuda})` : ''} on ${device}, ${i.precision}${ranks}`;
  }

  /** The worker's process id. */
  get pid(): number {
    return this.worker.pid;
  }

  async generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]> {
    const stops = (params.stopStrings ?? []).filter((s) => s.length > 0);
    const decode = this.options.decode;
    if (stops.length > 0 && !decode)
      throw new ConfigError('stopStrings need a tokenizer: pass `decode` to the torch engine');
    checkSampling(params);
    if (!this.vision) refuseImages(params, 'torch worker model');
    prompts.forEach((p, i) => {
      if (p.length === 0) throw new ConfigError(`prompt ${i} is empty; every prompt needs at least one token`);
      if (p.length + params.maxNewTokens > this.maxPositions)
        throw new ConfigError(contextPastPositions(p.length, params.maxNewTokens, this.maxPositions, `prompt ${i}`));
      checkIds(p, this.vocabSize, `prompt ${i}`);
      if (this.vlConfig) refuseStrayVisionToken(p, this.vlConfig, `Prompt ${i}`);
    });
    if (stops.length > 0 && !this.vocabSent) {
      // The worker stops a row early on the concatenated texts of its tokens; the exact check below decides.
      const pieces = Array.from({ length: this.vocabSize }, (_, i) => decode!([i]));
      await this.worker.request('vocab', { pieces });
      this.vocabSent = true;
    }
    const lengths = Int32Array.from(prompts, (p) => p.length);
    const flat = new Int32Array(lengths.reduce((a, b) => a + b, 0));
    let off = 0;
    for (const p of prompts) {
      flat.set(p, off);
      off += p.length;
    }
    // The worker returns whole generations: `onTokens` (per-step streaming) and `cancelled` are not sent, not called.
    const { onTokens: _perStep, cancelled: _cancelled, images, ...wire } = params;
    const r = await this.worker
      .request(
        'generate',
        { params: { ...wire, stopStrings: stops } },
        { prompts: flat, lengths, ...this.imageBuffers(images, prompts.length) },
      )
      .catch((e: unknown) => {
        throw nonFiniteFromWorker(e) ?? e;
      });
    const tokens = r.buffers.tokens as Int32Array;
    const logprobs = r.buffers.logprobs as Float32Array;
    const lens = r.buffers.lengths as Int32Array;
    const stopped = r.buffers.stopped as Uint8Array;
    const out: Generation[] = [];
    off = 0;
    for (let i = 0; i < prompts.length; i++) {
      const n = lens[i]!;
      const g: Generation = {
        tokens: Array.from(tokens.subarray(off, off + n)),
        logprobs: Array.from(logprobs.subarray(off, off + n)),
        finishReason: stopped[i] ? 'stop' : 'length',
      };
      off += n;
      if (stops.length > 0) truncateAtStop(g, stops, decode!);
      out.push(g);
    }
    return out;
  }

  async forward(batch: SequenceBatch, options: { role: ModelRole; entropy?: boolean }): Promise<ForwardResult> {
    const r = await this.worker.request(
      'forward',
      { role: options.role, entropy: options.entropy ?? false, B: batch.B, T: batch.T },
      this.batchBuffers(batch),
    );
    return result(r.buffers);
  }

  async backward(
    batch: SequenceBatch,
    options: BackwardOptions,
    lossGrad: (out: ForwardResult) => OutputGradients,
  ): Promise<ForwardResult> {
    const head = {
      role: options.role,
      entropy: options.entropy ?? false,
      values: options.values ?? false,
      diagnostic: options.diagnostic ?? false,
      B: batch.B,
      T: batch.T,
    };
    const out = result((await this.worker.request('backward_begin', head, this.batchBuffers(batch))).buffers);
    let grads: OutputGradients;
    try {
      grads = lossGrad(out);
    } catch (e) {
      await this.worker.request('backward_end', { B: batch.B, T: batch.T }); // drop the pending graph
      throw e;
    }
    const bufs: Record<string, FrameArray> = {};
    for (const key of ['logprobs', 'entropy', 'values'] as const) {
      const g = grads[key];
      if (!g || !out[key]) continue;
      if (g.length !== batch.B * batch.T)
        throw new RangeError(
          `${key} gradient: ${g.length} entries for a (B, T) = (${batch.B}, ${batch.T}) batch; expected ${batch.B * batch.T}`,
        );
      bufs[key] = g instanceof Float32Array ? g : Float32Array.from(g);
    }
    await this.worker.request('backward_end', { B: batch.B, T: batch.T }, bufs);
    return out;
  }

  async optimizerStep(role: TrainableRole, settings: OptimizerSettings): Promise<OptimizerStepResult> {
    const r = await this.worker.request('optimizer_step', { role, settings });
    return { gradNorm: wireNumber(r.header.gradNorm), skipped: Boolean(r.header.skipped) };
  }

  async gradNorm(role: TrainableRole): Promise<number> {
    return wireNumber((await this.worker.request('grad_norm', { role })).header.gradNorm);
  }

  /**
   * The worker's counters of model passes (tests and benchmarks: a backward that keeps its graph runs each chunk once).
   */
  async stats(): Promise<TorchWorkerStats> {
    const h = (await this.worker.request('stats', {})).header;
    return { forwardPasses: Number(h.forwardPasses), recomputedPasses: Number(h.recomputedPasses) };
  }

  zeroGrad(role: TrainableRole): void {
    this.worker.post('zero_grad', { role });
  }

  /** A role's trainable parameters (`what: 'param'`) or their gradients (`'grad'`, zeros where none), by name. */
  async tensors(role: TrainableRole, what: 'param' | 'grad' = 'param'): Promise<Map<string, Float32Array>> {
    const r = await this.worker.request('tensors', { role, what });
    return new Map(Object.entries(r.buffers).map(([k, v]) => [k, v as Float32Array]));
  }

  async save(dir: string, options: EngineSaveOptions = {}): Promise<void> {
    await this.worker.request('save', {
      dir: resolve(dir),
      optimizer: options.optimizer ?? false,
      ...(options.maxShardBytes === undefined ? {} : { maxShardBytes: options.maxShardBytes }),
      ...(this.options.tokenizerPath ? { tokenizerPath: resolve(this.options.tokenizerPath) } : {}),
    });
    // the processor settings this engine read (the file as it was, else as saveVision writes them), else a reload
    // would take the defaults
    if (this.vision)
      writeFileAt(
        join(dir, 'preprocessor_config.json'),
        this.preprocessorJson ?? JSON.stringify(qwen25PreprocessorConfig(this.vision), null, 2) + '\n',
        'write the processor settings',
      );
  }

  async loadOptimizer(dir: string): Promise<void> {
    await this.worker.request('load_optimizer', { dir: resolve(dir) });
  }

  dispose(): void {
    this.worker.close();
  }

  /** The batch's arrays, checked here so that a bad batch is named rather than failing inside torch. */
  private batchBuffers(batch: SequenceBatch): Record<string, FrameArray> {
    if (batch.ids.length !== batch.B * batch.T)
      throw new RangeError(`SequenceBatch: ${batch.ids.length} ids for (B, T) = (${batch.B}, ${batch.T})`);
    for (let b = 0; b < batch.B; b++) {
      const L = batch.lengths[b]!;
      if (!(L >= 1 && L <= batch.T))
        throw new RangeError(`SequenceBatch: row ${b} has length ${L}; each row needs 1..T = ${batch.T} tokens`);
      const row = batch.ids.subarray(b * batch.T, b * batch.T + L);
      checkIds(row, this.vocabSize, `batch row ${b}`);
      if (this.vlConfig) refuseStrayVisionToken(row, this.vlConfig, `Row ${b} of the batch`);
    }
    return { ids: batch.ids, lengths: batch.lengths, ...this.imageBuffers(batch.images, batch.B) };
  }

  /**
   * Each row's images as the worker reads them (python/ragen_torch/vision.py `images_from_buffers`): `rowImages` (how
   * many per row), `imageGrids` ((t, h, w) per image) and `pixelValues` (every patch, in order); none without images.
   */
  private imageBuffers(
    images: readonly (readonly RgbImage[] | undefined)[] | undefined,
    rows: number,
  ): Record<string, FrameArray> {
    if (!images?.some((im) => im !== undefined && im.length > 0)) return {};
    if (images.length !== rows)
      throw new RangeError(`images has ${images.length} entries for ${rows} rows; give one per row (undefined: none)`);
    if (!this.vision) {
      const i = images.findIndex((im) => im !== undefined && im.length > 0);
      throw new ConfigError(
        `Row ${i} carries ${images[i]!.length} image(s) but the torch worker's model is text-only; load a vision-language checkpoint (model_type qwen2_5_vl or qwen3_vl), or train on the env's text observation.`,
      );
    }
    const counts = Int32Array.from(images, (im) => im?.length ?? 0);
    const all = images.flatMap((im) => im ?? []);
    const pv = pixelValues(all, this.vision);
    return { rowImages: counts, imageGrids: Int32Array.from(pv.grids.flat()), pixelValues: pv.data };
  }
}

/**
 * The worker's NonFiniteLogitsError (python/ragen_torch/generate.py) as the local engine's, one sentence; else
 * undefined.
 */
function nonFiniteFromWorker(e: unknown): NonFiniteLogitsError | undefined {
  if (!(e instanceof TorchRequestError) || e.type !== 'NonFiniteLogitsError' || !e.detail) return undefined;
  const d = e.detail;
  return new NonFiniteLogitsError(
    String(d['model']),
    Number(d['step']),
    Number(d['index']),
    Number(d['position']),
    Number(d['logprob']),
  );
}

function checkIds(ids: ArrayLike<number>, V: number, what: string): void {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (!(Number.isInteger(id) && id >= 0 && id < V))
      throw new ConfigError(`${what} holds token id ${id}, outside the vocabulary [0, ${V})`);
  }
}

/** The local engine's checks of SamplingParams (src/model/generate.ts), with its messages. */
function checkSampling(o: SamplingParams): void {
  if (!Number.isInteger(o.maxNewTokens) || o.maxNewTokens < 0)
    throw new ConfigError(`maxNewTokens must be a non-negative integer, got ${o.maxNewTokens}`);
  if (!(o.temperature >= 0)) throw new ConfigError(`temperature must be >= 0 (0 = greedy), got ${o.temperature}`);
  if (o.topP !== undefined && !(o.topP > 0 && o.topP <= 1))
    throw new ConfigError(`topP must be in (0, 1], got ${o.topP}`);
  if (o.topK !== undefined && !(Number.isInteger(o.topK) && o.topK >= 0))
    throw new ConfigError(`topK must be a non-negative integer (0 = off), got ${o.topK}`);
  if (!Number.isSafeInteger(o.seed)) throw new ConfigError(`seed must be an integer, got ${o.seed}`);
}

function result(bufs: Record<string, FrameArray>): ForwardResult {
  const out: ForwardResult = { logprobs: bufs.logprobs as Float32Array };
  if (bufs.entropy) out.entropy = bufs.entropy as Float32Array;
  if (bufs.values) out.values = bufs.values as Float32Array;
  return out;
}

/**
 * The local engine's stop-string rule, applied after sampling: keep tokens up to the first whose decoded tail holds a
 * stop string.
 */
function truncateAtStop(g: Generation, stops: readonly string[], decode: (ids: number[]) => string): void {
  const window = Math.max(...stops.map((s) => s.length)) + 4;
  for (let k = 1; k <= g.tokens.length; k++) {
    const text = decode(g.tokens.slice(Math.max(0, k - window), k));
    if (stops.some((s) => text.includes(s))) {
      g.tokens.length = k;
      g.logprobs.length = k;
      g.finishReason = 'stop';
      return;
    }
  }
}

/** A float the worker sent: a JSON number, or 'inf' / '-inf' / 'nan' (JSON has no non-finite numbers). */
function wireNumber(x: unknown): number {
  return typeof x === 'number' ? x : x === 'inf' ? Infinity : x === '-inf' ? -Infinity : NaN;
}

/**
 * `max_position_embeddings` of a model directory's config.json (a VLM's `text_config` too); Infinity where none is
 * given.
 */
function configPositions(dir: string): number {
  const json = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const text = (json['text_config'] ?? {}) as Record<string, unknown>;
  const n = json['max_position_embeddings'] ?? text['max_position_embeddings'];
  return typeof n === 'number' && n > 0 ? n : Infinity;
}
