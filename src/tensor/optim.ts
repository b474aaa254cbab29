// AdamW with decoupled weight decay (Loshchilov & Hutter 2019, as torch.optim.AdamW), global-norm
// gradient clipping, and the non-finite gradient check. The update is one fused kernel per parameter.

import { ShapeError } from '../util/index.js';
import { Tensor, keep } from './tensor.js';

export interface AdamWOptions {
  /** Learning rate. @default 1e-3 */
  lr?: number;
  /** Decay rates of the first and second moment estimates. @default [0.9, 0.999] */
  betas?: [number, number];
  /** Added to the denominator for stability. @default 1e-8 */
  eps?: number;
  /** Decoupled weight decay: p -= lr * weightDecay * p each step. @default 0.01 */
  weightDecay?: number;
}

/** Serializable optimizer state (for checkpoints). */
export interface AdamWState {
  step: number;
  m: Float32Array[];
  v: Float32Array[];
}

export class AdamW {
  /** Settable learning rate (schedules write here). */
  lr: number;
  readonly betas: [number, number];
  readonly eps: number;
  readonly weightDecay: number;
  readonly params: readonly Tensor[];
  /** Steps taken (bias correction uses it). */
  stepCount = 0;
  private readonly m: Tensor[];
  private readonly v: Tensor[];

  constructor(params: readonly Tensor[], opts: AdamWOptions = {}) {
    this.params = [...params];
    this.lr = opts.lr ?? 1e-3;
    this.betas = opts.betas ?? [0.9, 0.999];
    this.eps = opts.eps ?? 1e-8;
    this.weightDecay = opts.weightDecay ?? 0.01;
    const makeZero = (p: Tensor): Tensor => {
      const t = keep(Tensor.empty(p.shape, p.backend));
      p.backend.fill(t.buf, 0);
      return t;
    };
    this.m = this.params.map(makeZero);
    this.v = this.params.map(makeZero);
  }

  /** One update of every parameter that has a gradient. */
  step(): void {
    this.stepCount++;
    const [beta1, beta2] = this.betas;
    const h = {
      lr: this.lr,
      beta1,
      beta2,
      eps: this.eps,
      weightDecay: this.weightDecay,
      bc1: 1 - beta1 ** this.stepCount,
      bc2: 1 - beta2 ** this.stepCount,
    };
    this.params.forEach((p, i) => {
      if (!p.grad) return;
      p.backend.adamw(p.buf, p.grad.buf, this.m[i]!.buf, this.v[i]!.buf, p.size, h);
    });
  }

  /** Drop every parameter's gradient (frees its storage). */
  zeroGrad(): void {
    for (const p of this.params) {
      p.grad?.dispose();
      p.grad = null;
    }
  }

  getState(): AdamWState {
    return { step: this.stepCount, m: this.m.map((t) => t.toFloat32Array()), v: this.v.map((t) => t.toFloat32Array()) };
  }

  setState(state: AdamWState): void {
    if (state.m.length !== this.params.length || state.v.length !== this.params.length)
      throw new ShapeError(
        `AdamW.setState: state has ${state.m.length} moment tensors for ${this.params.length} parameters`,
      );
    this.params.forEach((p, i) => {
      if (state.m[i]!.length !== p.size || state.v[i]!.length !== p.size)
        throw new ShapeError(
          `AdamW.setState: moment ${i} has ${state.m[i]!.length} values for a parameter of ${p.size}`,
        );
      p.backend.write(this.m[i]!.buf, state.m[i]!);
      p.backend.write(this.v[i]!.buf, state.v[i]!);
    });
    this.stepCount = state.step;
  }

  /** Free the moment buffers. */
  dispose(): void {
    for (const t of [...this.m, ...this.v]) t.dispose();
  }
}

/** The global L2 norm of all gradients (params without a gradient are skipped). */
export function gradNorm(params: readonly Tensor[]): number {
  let ss = 0;
  for (const p of params) if (p.grad) ss += p.backend.sumSquares(p.grad.buf, p.size);
  return Math.sqrt(ss);
}

/**
 * Scale gradients so their global norm is at most maxNorm (as torch's clip_grad_norm_). Returns the norm before
 * clipping; `total`: that norm when the caller has it already (`gradNorm` of the same gradients).
 */
export function clipGradNorm(params: readonly Tensor[], maxNorm: number, total = gradNorm(params)): number {
  const coef = maxNorm / (total + 1e-6);
  if (coef < 1) for (const p of params) if (p.grad) p.backend.affine(p.grad.buf, p.grad.buf, p.size, coef, 0);
  return total;
}

/** False when any gradient holds a NaN or an infinity. */
export function gradsAreFinite(params: readonly Tensor[]): boolean {
  for (const p of params) if (p.grad && !p.backend.allFinite(p.grad.buf, p.size)) return false;
  return true;
}
