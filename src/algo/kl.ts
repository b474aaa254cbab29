// KL estimators between the policy and the reference (k1, k2, k3, abs, and straight-through "+" forms),
// the KL loss term with its gradient, KL as a reward penalty, and the fixed / adaptive KL controllers.
import { assertNever } from '../util/index.js';
import { aggWeights, maskedMean, type AggNorm, type LossAggMode } from './aggregate.js';
import { checkTokens, parseName, type TokenMask, type Nums } from './shape.js';

/**
 * KL estimators of Schulman, "Approximating KL Divergence" (2020), with Δ = logπ − logπ_ref:
 * k1 = Δ; k2 = ½Δ²; k3 = e^{−Δ} + Δ − 1 (unbiased, low variance, ≥ 0); abs = |Δ|.
 * The "+" forms (`k1+`, `k3+`, ...) are straight-through: the value of the estimator with the gradient
 * of k2 (veRL: unbiased value, low-variance gradient).
 */
export type KLEstimator = 'k1' | 'k2' | 'k3' | 'abs' | 'k1+' | 'k2+' | 'k3+' | 'abs+';

export const KL_ESTIMATORS: readonly KLEstimator[] = ['k1', 'k2', 'k3', 'abs', 'k1+', 'k2+', 'k3+', 'abs+'];

/**
 * Parses a KL estimator name; accepts veRL's `kl`, `mse`, `low_var_kl` (and their `+` forms). RAGEN's
 * run scripts pass `low-var-kl`, which is not a valid key in veRL either: it is rejected here with a
 * did-you-mean instead of lying dormant until KL is switched on.
 */
export function parseKLEstimator(name: string): KLEstimator {
  return parseName('KL estimator', name, KL_ESTIMATORS, {
    kl: 'k1',
    mse: 'k2',
    low_var_kl: 'k3',
    'kl+': 'k1+',
    'mse+': 'k2+',
    'low_var_kl+': 'k3+',
  });
}

/** Per-token KL values and their derivatives with respect to logπ. */
export interface KLTokens {
  kl: Float64Array;
  /** d kl_t / d logπ_t. */
  grad: Float64Array;
}

/**
 * Per-token KL estimate and its derivative w.r.t. logπ (veRL `kl_penalty`). For k3 the inner
 * difference ref − logπ is clamped to ±20 and the result to ±10, as veRL (derivative 0 where clamped).
 * Computed on every token; mask it yourself or use `klLoss`.
 */
export function klPenalty(logprobs: Nums, refLogprobs: Nums, estimator: KLEstimator): KLTokens {
  const n = logprobs.length;
  if (refLogprobs.length !== n)
    throw new RangeError(`klPenalty: logprobs has ${n} entries but refLogprobs has ${refLogprobs.length}.`);
  const kl = new Float64Array(n);
  const grad = new Float64Array(n);
  const straightThrough = estimator.endsWith('+');
  const base = (straightThrough ? estimator.slice(0, -1) : estimator) as 'k1' | 'k2' | 'k3' | 'abs';
  for (let i = 0; i < n; i++) {
    const d = logprobs[i]! - refLogprobs[i]!;
    let v: number;
    let g: number;
    switch (base) {
      case 'k1':
        v = d;
        g = 1;
        break;
      case 'k2':
        v = 0.5 * d * d;
        g = d;
        break;
      case 'k3': {
        const x = -d; // ref − logπ
        const xc = Math.min(20, Math.max(-20, x));
        const raw = Math.exp(xc) - xc - 1;
        v = Math.min(10, Math.max(-10, raw));
        g = Math.abs(x) > 20 || Math.abs(raw) > 10 ? 0 : 1 - Math.exp(xc);
        break;
      }
      case 'abs':
        v = Math.abs(d);
        g = Math.sign(d);
        break;
      default:
        return assertNever(base, 'KL estimator');
    }
    kl[i] = v;
    grad[i] = straightThrough ? d : g;
  }
  return { kl, grad };
}

/**
 * The KL loss term `coef · agg(kl_t)` (veRL `use_kl_loss`, GRPO's in-loss KL, Shao et al. 2024 eq. 3)
 * with its gradient w.r.t. the per-token log-probs. Stats: masked mean KL over this batch.
 */
export function klLoss(a: {
  logprobs: Nums;
  refLogprobs: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  estimator: KLEstimator;
  coef: number;
  lossAgg: LossAggMode;
  norm?: AggNorm;
}): { loss: number; grad: { logprobs: Float64Array }; stats: { kl: number } } {
  const { logprobs, refLogprobs, mask, B, T, estimator, coef, lossAgg, norm } = a;
  checkTokens('logprobs', logprobs, B, T);
  checkTokens('refLogprobs', refLogprobs, B, T);
  const { kl, grad } = klPenalty(logprobs, refLogprobs, estimator);
  const w = aggWeights(mask, B, T, lossAgg, norm);
  let loss = 0;
  const g = new Float64Array(B * T);
  for (let i = 0; i < B * T; i++) {
    if (w[i] === 0) continue;
    loss += coef * w[i]! * kl[i]!;
    g[i] = coef * w[i]! * grad[i]!;
  }
  return { loss, grad: { logprobs: g }, stats: { kl: maskedMean(kl, mask) } };
}

/**
 * KL as a reward penalty (veRL `apply_kl_penalty`; Ziegler et al. 2019 §2.2, Stiennon et al. 2020):
 * r_t ← r_t − β·KL_t on loss tokens, with KL between the rollout (old) policy and the reference.
 * `currentKl` is veRL's batch KL: the mean over sequences of each sequence's masked-mean KL, to feed
 * the controller. (RAGEN calls this with a `multi_turn` argument veRL's signature lacks, so the path
 * would raise there; here it works on multi-turn batches as on any other, since it is per token.)
 */
export function applyKLPenalty(a: {
  rewards: Nums;
  logprobs: Nums;
  refLogprobs: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  beta: number;
  estimator: KLEstimator;
}): { rewards: Float64Array; kl: Float64Array; currentKl: number } {
  const { rewards, logprobs, refLogprobs, mask, B, T, beta, estimator } = a;
  checkTokens('rewards', rewards, B, T);
  checkTokens('logprobs', logprobs, B, T);
  checkTokens('refLogprobs', refLogprobs, B, T);
  checkTokens('mask', mask, B, T);
  const pen = klPenalty(logprobs, refLogprobs, estimator).kl;
  const out = Float64Array.from(rewards);
  const kl = new Float64Array(B * T);
  let sum = 0;
  let rows = 0;
  for (let b = 0; b < B; b++) {
    let s = 0;
    let n = 0;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (!mask[i]) continue;
      kl[i] = pen[i]!;
      out[i] = rewards[i]! - beta * pen[i]!;
      s += pen[i]!;
      n++;
    }
    if (n > 0) {
      sum += s / n;
      rows++;
    }
  }
  return { rewards: out, kl, currentKl: rows > 0 ? sum / rows : 0 };
}

/** KL coefficient controller settings (veRL `algorithm.kl_ctrl`). */
export type KLControllerConfig =
  | { type: 'fixed'; klCoef: number }
  | {
      type: 'adaptive';
      /** Initial β. */
      klCoef: number;
      /** Target KL per token. */
      targetKl: number;
      /** Horizon in samples over which β adapts (Ziegler et al. use 10 000). */
      horizon: number;
    };

/**
 * Next KL coefficient. fixed: unchanged. adaptive (Ziegler et al. 2019 §2.2, as veRL's
 * AdaptiveKLController): e = clip(KL/target − 1, −0.2, 0.2), β ← β·(1 + e·nSteps/horizon), where nSteps
 * is the number of samples in the batch that produced `currentKl`.
 */
export function updateKLCoef(ctrl: KLControllerConfig, coef: number, currentKl: number, nSteps: number): number {
  switch (ctrl.type) {
    case 'fixed':
      return coef;
    case 'adaptive': {
      const e = Math.min(0.2, Math.max(-0.2, currentKl / ctrl.targetKl - 1));
      return coef * (1 + (e * nSteps) / ctrl.horizon);
    }
    default:
      return assertNever(ctrl, 'KL controller');
  }
}

/** Stateful wrapper of `updateKLCoef`: `value` is the current β; save/restore it with checkpoints. */
export class KLController {
  value: number;
  constructor(readonly config: KLControllerConfig) {
    this.value = config.klCoef;
  }
  /** Updates β from the batch KL of `nSteps` samples; returns the new β. */
  update(currentKl: number, nSteps: number): number {
    this.value = updateKLCoef(this.config, this.value, currentKl, nSteps);
    return this.value;
  }
}
