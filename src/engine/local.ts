// The local engine: the policy (with optional LoRA), a frozen reference and a critic, in this process on
// src/tensor's CPU kernels. Implements generate / forward, and backward + optimizerStep for the trainer.
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { add, getBackend, mul, noGrad, setBackend, sum, tensor, tidy, type BackendName, type Tensor } from '../tensor/index.js';
import {
  commonPrefixLength, generate, LoraAdapters, loadModel, packPerToken, packPrefixPerToken, packSequences, packSharedPrefix, prefixTokenForward, saveModel,
  tokenForward, Transformer, unpack, unpackPrefix, ValueHead, type LoraConfig, type ModelConfig, type PackedBatch, type PrefixPackedBatch,
} from '../model/index.js';
import { loadTokenizer } from '../tokenizer/index.js';
import { ConfigError, Rng } from '../util/index.js';
import { RoleOptimizer, loadOptimizerStates, saveOptimizerStates } from './local-optim.js';
import type {
  BackwardOptions, ForwardResult, Generation, ModelRole, OptimizerSettings, OptimizerStepResult, OutputGradients,
  SamplingParams, TrainableEngine, TrainableRole,
} from './types.js';

/** What the local engine holds. */
export interface LocalEngineOptions {
  policy: Transformer;
  /** Frozen reference: a model, 'base' (the policy without its LoRA adapters), or none. @default null */
  reference?: Transformer | 'base' | null;
  /** Critic: a value head on the policy's trunk ('shared'), or a separate model with its head. @default null */
  critic?: { mode: 'shared'; valueHead: ValueHead } | { mode: 'separate'; model: Transformer; valueHead: ValueHead } | null;
  /** Token ids -> text, for stop strings. */
  decode?: (ids: number[]) => string;
  /** tokenizer.json copied into saved checkpoints. */
  tokenizerPath?: string;
  /** Seed of LoRA dropout. @default 0 */
  seed?: number;
  /** Most tokens (batch x longest sequence, after the shared prefix) per no-grad forward chunk (bounds memory). @default 4096 */
  forwardTokenBudget?: number;
  /**
   * Run a prefix shared by every sequence of a batch once (batch 1) when it has at least this many tokens
   * (training sequences all start with the same system prompt); 0 turns it off. Same outputs and gradients
   * up to float rounding. @default 16
   */
  sharedPrefixMin?: number;
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
  decode?: (ids: number[]) => string;
  seed?: number;
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
}

/** The in-process engine: policy (optionally LoRA), frozen reference and critic on our own kernels (src/model, src/tensor). */
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
    if (this.reference === 'base' && !this.policy.lora) throw new ConfigError("reference 'base' needs LoRA adapters on the policy (the base is then the frozen reference)");
    if (this.reference instanceof Transformer) this.reference.setBaseTrainable(false);
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
    if (opts.critic === 'separate') critic = { mode: 'separate', model: Transformer.init(config, seed + 3), valueHead: ValueHead.init(config.hiddenSize, seed + 2) };
    return new LocalEngine({ policy, reference, critic, seed, ...(opts.decode ? { decode: opts.decode } : {}) });
  }

  /** Load a Hugging Face checkpoint directory (ours or transformers'); `dir/critic` holds a separate critic. */
  static async fromPretrained(dir: string, opts: LocalPretrainedOptions = {}): Promise<LocalEngine> {
    selectBackend(opts.backend);
    const seed = opts.seed ?? 0;
    const { model: policy, valueHead } = await loadModel(dir);
    if (opts.lora && !policy.lora) LoraAdapters.attach(policy, opts.lora, seed + 1);
    let reference: Transformer | 'base' | null = null;
    if (opts.reference) reference = policy.lora ? 'base' : (await loadModel(dir, { adapters: false })).model;
    let critic: LocalEngineOptions['critic'] = null;
    if (opts.critic === 'shared') critic = { mode: 'shared', valueHead: valueHead ?? ValueHead.init(policy.config.hiddenSize, seed + 2) };
    if (opts.critic === 'separate') {
      const from = opts.criticPath ?? (existsSync(join(dir, 'critic', 'config.json')) ? join(dir, 'critic') : dir);
      const c = await loadModel(from, { adapters: false });
      critic = { mode: 'separate', model: c.model, valueHead: c.valueHead ?? ValueHead.init(c.model.config.hiddenSize, seed + 2) };
    }
    const tokenizerPath = join(dir, 'tokenizer.json');
    const hasTokenizer = existsSync(tokenizerPath);
    // Stop strings need ids -> text: the checkpoint's own tokenizer unless the caller passes one.
    const decode = opts.decode ?? (hasTokenizer ? (ids: number[]) => loadTokenizer(dir).decode(ids) : undefined);
    return new LocalEngine({ policy, reference, critic, seed, ...(decode ? { decode } : {}), ...(hasTokenizer ? { tokenizerPath } : {}) });
  }

  async generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]> {
    const decode = this.options.decode;
    return generate(this.policy, prompts, { ...params, ...(decode ? { decode } : {}) });
  }

  async forward(sequences: readonly (readonly number[])[], options: { role: ModelRole; entropy?: boolean }): Promise<ForwardResult> {
    const n = sequences.length;
    const out: ForwardResult = { logprobs: new Array<Float32Array>(n) };
    if (options.entropy) out.entropy = new Array<Float32Array>(n);
    if (options.role === 'critic') out.values = new Array<Float32Array>(n);
    for (const idx of this.chunks(sequences)) {
      const r = noGrad(() => tidy(() => this.run(idx.map((i) => sequences[i]!), options.role, { entropy: options.entropy ?? false, values: options.role === 'critic' })));
      idx.forEach((i, j) => {
        out.logprobs[i] = r.logprobs[j]!;
        if (out.entropy) out.entropy[i] = r.entropy![j]!;
        if (out.values) out.values[i] = r.values![j]!;
      });
    }
    return out;
  }

  async backward(sequences: readonly (readonly number[])[], options: BackwardOptions, lossGrad: (out: ForwardResult) => OutputGradients): Promise<ForwardResult> {
    const values = options.role === 'critic' || (options.values ?? false);
    if (values && !this.critic) throw new ConfigError('values were requested but this engine has no critic; create it with critic: "shared" or "separate"');
    if (options.values && options.role === 'policy' && this.critic?.mode !== 'shared') throw new ConfigError("values in a policy backward need critic mode 'shared'");
    return tidy(() => {
      const batch = this.pack(sequences);
      this.tokenStats.backwardReal += batch.lengths.reduce((a, L) => a + L - 1, 0);
      this.tokenStats.backwardPadded += batch.B * batch.T + ('prefix' in batch ? batch.prefix.ids.length : 0);
      const { result, outputs } = this.outputs(batch, options.role, { entropy: options.entropy ?? false, values }, this.dropoutRng);
      const grads = lossGrad(result);
      let loss: Tensor | null = null;
      const add1 = (t: Tensor, g: Float32Array): void => {
        const part = sum(mul(t, tensor(g)));
        loss = loss ? add(loss, part) : part;
      };
      const term = (key: 'logprobs' | 'entropy' | 'values'): void => {
        const t = outputs[key];
        const g = grads[key];
        if (!t || !g) return;
        if (!('prefix' in batch)) return add1(t, packPerToken(g, batch, `${key} gradient`));
        const packed = packPrefixPerToken(g, batch, `${key} gradient`);
        add1(t, packed.rows);
        add1(outputs.prefix![key]!, packed.prefix);
      };
      term('logprobs');
      term('entropy');
      term('values');
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

  /** Trainable parameters of a role, by name (LoRA: PEFT keys; critic: `value_head.*` and, when separate, its model). */
  parameters(role: TrainableRole): [string, Tensor][] {
    if (role === 'policy') return this.policy.parameters();
    if (!this.critic) throw new ConfigError('this engine has no critic');
    const head = this.critic.valueHead.parameters();
    return this.critic.mode === 'separate' ? [...this.critic.model.parameters(), ...head] : head;
  }

  async save(dir: string, options: { optimizer?: boolean } = {}): Promise<void> {
    const shared = this.critic?.mode === 'shared' ? this.critic.valueHead : null;
    await saveModel(dir, this.policy, { valueHead: shared, ...(this.options.tokenizerPath ? { tokenizerPath: this.options.tokenizerPath } : {}) });
    if (this.critic?.mode === 'separate') await saveModel(join(dir, 'critic'), this.critic.model, { valueHead: this.critic.valueHead });
    if (options.optimizer) await saveOptimizerStates(dir, this.optimizers);
  }

  async loadOptimizer(dir: string): Promise<void> {
    await loadOptimizerStates(dir, (role) => this.optimizer(role));
  }

  dispose(): void {
    for (const o of this.optimizers.values()) o.dispose();
    this.policy.dispose();
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

  /** Indices of the sequences in chunks of similar length (longest first) whose padded size fits the token budget. */
  private *chunks(sequences: readonly (readonly number[])[]): Generator<number[]> {
    const budget = this.options.forwardTokenBudget ?? 4096;
    const min = this.options.sharedPrefixMin ?? 16;
    const common = min > 0 && sequences.length > 1 ? commonPrefixLength(sequences) - 1 : 0;
    const shared = common >= min ? common : 0; // each chunk runs this prefix once, its rows the rest
    const order = sequences.map((_, i) => i).sort((a, b) => sequences[b]!.length - sequences[a]!.length || a - b);
    let cur: number[] = [];
    for (const i of order) {
      const longest = (cur.length > 0 ? sequences[cur[0]!]!.length : sequences[i]!.length) - shared;
      if (cur.length > 0 && (cur.length + 1) * longest > budget) {
        yield cur;
        cur = [];
      }
      cur.push(i);
    }
    if (cur.length > 0) yield cur;
  }

  private run(sequences: readonly (readonly number[])[], role: ModelRole, want: { entropy: boolean; values: boolean }): ForwardResult {
    const batch = this.pack(sequences);
    this.tokenStats.forwardReal += batch.lengths.reduce((a, L) => a + L - 1, 0);
    this.tokenStats.forwardPadded += batch.B * batch.T + ('prefix' in batch ? batch.prefix.ids.length : 0);
    return this.outputs(batch, role, want).result;
  }

  /** The batch with its shared prefix split off when it is long enough, else right-padded. */
  private pack(sequences: readonly (readonly number[])[]): PackedBatch | PrefixPackedBatch {
    const min = this.options.sharedPrefixMin ?? 16;
    return (min > 0 ? packSharedPrefix(sequences, min) : null) ?? packSequences(sequences);
  }

  /** Tensors of one packed batch for a role, and their per-sequence copies. */
  private outputs(batch: PackedBatch | PrefixPackedBatch, role: ModelRole, want: { entropy: boolean; values: boolean }, rng?: Rng): { result: ForwardResult; outputs: TokenTensors } {
    let model: Transformer = this.policy;
    let valueHead: ValueHead | undefined;
    let logprobs = true;
    if (role === 'reference') {
      if (!this.reference) throw new ConfigError('this engine has no reference model; create it with reference: true');
      if (this.reference instanceof Transformer) model = this.reference;
    } else if (role === 'critic') {
      if (!this.critic) throw new ConfigError('this engine has no critic; create it with critic: "shared" or "separate"');
      if (this.critic.mode === 'separate') model = this.critic.model;
      valueHead = this.critic.valueHead;
      logprobs = false;
    } else if (want.values && this.critic) {
      valueHead = this.critic.valueHead;
    }
    const adapters = model.lora;
    if (role === 'reference' && this.reference === 'base') model.lora = null; // the base weights, without adapters
    try {
      const opts = { logprobs, entropy: want.entropy && role !== 'critic', ...(valueHead ? { valueHead } : {}), ...(rng ? { dropoutRng: rng } : {}) };
      const outputs: TokenTensors = 'prefix' in batch ? prefixTokenForward(model, batch, opts) : tokenForward(model, batch, opts);
      const per = (key: 'logprobs' | 'entropy' | 'values'): Float32Array[] | undefined => {
        const t = outputs[key];
        if (!t) return undefined;
        return 'prefix' in batch ? unpackPrefix(outputs.prefix![key]!.toFloat32Array(), t.toFloat32Array(), batch) : unpack(t.toFloat32Array(), batch);
      };
      const result: ForwardResult = { logprobs: per('logprobs') ?? batch.lengths.map(() => new Float32Array(0)) };
      const entropy = per('entropy');
      const values = per('values');
      if (entropy) result.entropy = entropy;
      if (values) result.values = values;
      return { result, outputs };
    } finally {
      model.lora = adapters;
    }
  }
}

/** Output tensors of one batch (and of its shared prefix, when split off). */
interface TokenTensors {
  logprobs?: Tensor;
  entropy?: Tensor;
  values?: Tensor;
  prefix?: { logprobs?: Tensor; entropy?: Tensor; values?: Tensor };
}

function selectBackend(name: 'auto' | BackendName | undefined): void {
  if (name && name !== 'auto') setBackend(name);
  else getBackend();
}
