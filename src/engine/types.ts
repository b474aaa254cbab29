// The Engine seam (DESIGN.md): what the agent loop and the trainer ask of any policy backend.
// Implementations: `local` (in-process, src/model), `torch` (a PyTorch worker, torch.ts), later `openai` (generation
// only).

import type { SampledToken, SamplingParams } from '../model/index.js';
import type { VisionProcessor } from '../tokenizer/index.js';
import type { RgbImage } from '../util/index.js';

export type { SampledToken, SamplingParams };

/** One sampled completion: the exact ids sampled, their log-probs under the sampling policy. */
export interface Generation {
  tokens: number[];
  /** log p(token) under the model's distribution at temperature 1 (what the trainer's ratio uses). */
  logprobs: number[];
  finishReason: 'stop' | 'length';
}

/** Which model a forward pass uses. */
export type ModelRole = 'policy' | 'reference' | 'critic';

/**
 * The batch every teacher-forced pass takes: B right-padded sequences of T token ids (row-major, element (b, t)
 * at b*T + t), their lengths, and the attention mask (1 on the first `lengths[b]` tokens of row b, 0 on padding).
 * The trainer's `TokenBatch` (src/agent) is one; `sequenceBatch` builds one from plain id lists.
 */
export interface SequenceBatch {
  B: number;
  T: number;
  ids: Int32Array;
  attentionMask: Uint8Array;
  lengths: Int32Array;
  /**
   * A vision-language model's rows: per row, the images its `<|image_pad|>` runs stand for (every turn's, in order;
   * undefined or empty for a row without any). Absent when no row holds an image.
   */
  images?: readonly (readonly RgbImage[] | undefined)[];
}

/**
 * Per-token outputs of a teacher-forced pass, token-aligned (B, T) like the batch: entry (b, t) describes token t
 * of row b, scored from the tokens before it. `logprobs`: log p(token t | tokens < t) at temperature 1; `entropy`:
 * the entropy of that next-token distribution; `values`: the critic's value of the prefix before token t. Entry
 * (b, 0) (nothing precedes the first token) and entries at padding are 0.
 */
export interface ForwardResult {
  /** All zeros for role 'critic'. */
  logprobs: Float32Array;
  entropy?: Float32Array;
  values?: Float32Array;
}

/**
 * What the agent loop and the trainer ask of any policy backend: batched sampling that keeps the exact ids and their
 * log-probs, and teacher-forced per-token outputs of a role's model on a token batch.
 */
/** Options of `Engine.save`. */
export interface EngineSaveOptions {
  /** Also write the optimiser state (`optimizer/<role>.safetensors`), needed for an exact resume. @default false */
  optimizer?: boolean;
  /** Shard weights and optimiser state past this many bytes per file (Hugging Face's index layout). @default 1 GiB */
  maxShardBytes?: number;
}

export interface Engine {
  /** e.g. 'local', 'torch', 'openai'. */
  readonly kind: string;
  /**
   * The image processor of a vision-language model (how many tokens each image takes); absent for text-only models.
   * Rollouts then show observation images as vision tokens and pass them in `SamplingParams.images`.
   */
  readonly vision?: VisionProcessor;
  generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]>;
  /** Per-token outputs of `role`; `entropy` also computes the entropy (roles 'policy' and 'reference'). */
  forward(batch: SequenceBatch, options: { role: ModelRole; entropy?: boolean }): Promise<ForwardResult>;
}

/** A role that has trainable parameters. */
export type TrainableRole = 'policy' | 'critic';

/**
 * d loss / d output per token, token-aligned (B, T) like `ForwardResult`; entries at t = 0 and at padding are ignored.
 */
export interface OutputGradients {
  logprobs?: ArrayLike<number>;
  entropy?: ArrayLike<number>;
  values?: ArrayLike<number>;
}

/** What a `backward` pass computes and differentiates. */
export interface BackwardOptions {
  role: TrainableRole;
  /** Also compute per-token entropy (and accept its gradient). */
  entropy?: boolean;
  /** With a shared-trunk critic and role 'policy': also compute values in the same pass. */
  values?: boolean;
  /**
   * A diagnostic pass (gradient analysis): no dropout, so the training passes' dropout noise stream is not
   * advanced and turning a diagnostic on leaves training bit-identical. @default false
   */
  diagnostic?: boolean;
}

/** Optimiser settings of one step (AdamW, decoupled weight decay). */
export interface OptimizerSettings {
  lr: number;
  /** @default 0.01 */
  weightDecay?: number;
  /** @default [0.9, 0.999] */
  betas?: [number, number];
  /** @default 1e-8 */
  eps?: number;
  /** Global gradient-norm clip; 0 or absent = no clipping. */
  maxGradNorm?: number;
}

/** Outcome of one optimiser step. */
export interface OptimizerStepResult {
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** True when a gradient was NaN/Inf: the update was skipped and the gradients dropped. */
  skipped: boolean;
}

/**
 * How an engine groups a backward call's rows into passes (the torch worker's `model.torch.tokenBudget`): rows longest
 * first, a pass holding rows while rows x longest (with `packing`, bins x longest, see src/engine/token-budget.ts)
 * stays within `tokens`, on each of `ranks` data-parallel ranks (rank k takes rows k, k + ranks, ...). A backward call
 * that is one pass keeps its graph: the forward runs once.
 */
export interface TokenBudget {
  tokens: number;
  packing: boolean;
  ranks: number;
}

/**
 * An engine that can train (local, torch). The trainer runs each micro-batch through `backward`, whose
 * `lossGrad` callback receives the per-token outputs and returns d loss / d output in the same (B, T) layout
 * (closed forms from src/algo); the engine back-propagates the surrogate sum(grad * output), and gradients
 * accumulate until `optimizerStep`. The loss formulas live in the trainer only, for every engine.
 */
export interface TrainableEngine extends Engine {
  /**
   * Present when the engine runs a backward call's rows in passes of at most a token budget (torch): the trainer then
   * cuts micro-batches that are one pass each.
   */
  readonly tokenBudget?: TokenBudget;
  backward(
    batch: SequenceBatch,
    options: BackwardOptions,
    lossGrad: (out: ForwardResult) => OutputGradients,
  ): Promise<ForwardResult>;
  /** Clip, skip on non-finite gradients, AdamW update, then zero the role's gradients. */
  optimizerStep(role: TrainableRole, settings: OptimizerSettings): Promise<OptimizerStepResult>;
  /** Drop accumulated gradients of a role. */
  zeroGrad(role: TrainableRole): void;
  /** Global L2 norm of the role's accumulated gradients (0 when none), without clipping or stepping. */
  gradNorm(role: TrainableRole): Promise<number>;
  /** Write the models in Hugging Face layout (and, when asked, the optimiser state) into `dir`. */
  save(dir: string, options?: EngineSaveOptions): Promise<void>;
  /** Restore optimiser state written by `save(dir, {optimizer: true})`. */
  loadOptimizer(dir: string): Promise<void>;
  /** Free the models. */
  dispose(): void;
  /**
   * One line for a run's console saying what runs the models, where that is worth saying (torch: version, device,
   * ranks).
   */
  describe?(): string;
}
