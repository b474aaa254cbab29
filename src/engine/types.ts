// The Engine seam (DESIGN.md): what the agent loop and the trainer ask of any policy backend.
// Implementations: `local` (in-process, src/model), later `torch` (a PyTorch worker) and `openai` (generation only).

import type { SamplingParams } from '../model/index.js';

export type { SamplingParams };

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
 * Per-token outputs of a teacher-forced forward pass over `sequences`: entry t of a sequence's arrays
 * belongs to token t+1 (length - 1 entries), scored from the prefix up to token t.
 */
export interface ForwardResult {
  /** log p(token t+1 | tokens <= t) at temperature 1; empty arrays for role 'critic'. */
  logprobs: Float32Array[];
  entropy?: Float32Array[];
  values?: Float32Array[];
}

export interface Engine {
  /** e.g. 'local', 'torch', 'openai'. */
  readonly kind: string;
  generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]>;
  forward(sequences: readonly (readonly number[])[], options: { role: ModelRole; entropy?: boolean }): Promise<ForwardResult>;
}

/** A role that has trainable parameters. */
export type TrainableRole = 'policy' | 'critic';

/** d loss / d output per token, laid out like `ForwardResult` (one array per sequence, length - 1 entries). */
export interface OutputGradients {
  logprobs?: ArrayLike<number>[];
  entropy?: ArrayLike<number>[];
  values?: ArrayLike<number>[];
}

/** What a `backward` pass computes and differentiates. */
export interface BackwardOptions {
  role: TrainableRole;
  /** Also compute per-token entropy (and accept its gradient). */
  entropy?: boolean;
  /** With a shared-trunk critic and role 'policy': also compute values in the same pass. */
  values?: boolean;
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
 * An engine that can train (local, torch). The trainer runs each micro-batch through `backward`, whose
 * `lossGrad` callback receives the per-token outputs and returns d loss / d output (closed forms from
 * src/algo); gradients accumulate until `optimizerStep`.
 */
export interface TrainableEngine extends Engine {
  backward(
    sequences: readonly (readonly number[])[],
    options: BackwardOptions,
    lossGrad: (out: ForwardResult) => OutputGradients,
  ): Promise<ForwardResult>;
  /** Clip, skip on non-finite gradients, AdamW update, then zero the role's gradients. */
  optimizerStep(role: TrainableRole, settings: OptimizerSettings): Promise<OptimizerStepResult>;
  /** Drop accumulated gradients of a role. */
  zeroGrad(role: TrainableRole): void;
  /** Write the models in Hugging Face layout (and, when asked, the optimiser state) into `dir`. */
  save(dir: string, options?: { optimizer?: boolean }): Promise<void>;
  /** Restore optimiser state written by `save(dir, {optimizer: true})`. */
  loadOptimizer(dir: string): Promise<void>;
  /** Free the models. */
  dispose(): void;
}
