// Loss aggregation over a padded (B, T) batch: token-mean and the seq-mean-* modes of veRL/DAPO/Dr. GRPO,
// normalised by mini-batch totals so that gradient accumulation over micro-batches is exact.
import { assertNever } from '../util/index.js';
import { parseName, checkTokens, type TokenMask, type Nums } from './shape.js';

/** The literature's loss aggregation modes (veRL `loss_agg_mode`). */
export type LossAggMode = 'token-mean' | 'seq-mean-token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-sum-norm';

/** Every LossAggMode, for config validation. */
export const LOSS_AGG_MODES: readonly LossAggMode[] = [
  'token-mean',
  'seq-mean-token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-sum-norm',
];

/** Parses a loss aggregation mode; throws ConfigError with did-you-mean on an unknown name. */
export function parseLossAggMode(name: string): LossAggMode {
  return parseName('loss aggregation mode', name, LOSS_AGG_MODES);
}

/**
 * The normalisers of one optimizer step's mini-batch. Compute them once over the whole mini-batch
 * (`aggNorm`) and pass them to the loss of every micro-batch: the micro-batch losses and gradients
 * then add up exactly to the mini-batch's.
 */
export interface AggNorm {
  /** Loss tokens in the mini-batch (token-mean's denominator). */
  tokens: number;
  /** Sequences with at least one loss token in the mini-batch (seq-mean-*'s denominator). */
  seqs: number;
  /** The constant per-sequence horizon of seq-mean-token-sum-norm (Dr. GRPO's max length). */
  horizon: number;
}

/** Counts the normalisers of a (mini-)batch; `horizon` defaults to its padded length T. */
export function aggNorm(mask: TokenMask, B: number, T: number, horizon: number = T): AggNorm {
  checkTokens('mask', mask, B, T);
  let tokens = 0;
  let seqs = 0;
  for (let b = 0; b < B; b++) {
    let n = 0;
    for (let t = 0; t < T; t++) if (mask[b * T + t]) n++;
    tokens += n;
    if (n > 0) seqs++;
  }
  return { tokens, seqs, horizon };
}

/** Adds the counts of two micro-batches (same horizon), e.g. when micro-batches arrive one by one. */
export function addAggNorm(a: AggNorm, b: AggNorm): AggNorm {
  return { tokens: a.tokens + b.tokens, seqs: a.seqs + b.seqs, horizon: Math.max(a.horizon, b.horizon) };
}

/**
 * d(aggregate)/d(per-token loss): the weight of every token in the aggregated loss, so that
 * `agg = Σ_t w_t L_t` and any per-token gradient g_t becomes `w_t g_t`. Length B*T, 0 off the mask.
 *
 * - token-mean: w = m / N_tokens (DAPO's token-level policy-gradient loss, Yu et al. 2025; veRL default).
 * - seq-mean-token-mean: w = m / (len_b · N_seqs) (GRPO's 1/G Σ_i 1/|o_i| Σ_t, Shao et al. 2024, eq. 3).
 * - seq-mean-token-sum: w = m / N_seqs (RAGEN's Dr. GRPO runs).
 * - seq-mean-token-sum-norm: w = m / (horizon · N_seqs) (Dr. GRPO, Liu et al. 2025: a constant
 *   divisor, the generation budget, instead of |o_i|).
 *
 * Difference from veRL: veRL aggregates per micro-batch and divides by the accumulation count, so
 * its token-mean weighs tokens unequally when micro-batches differ in token count, and its
 * seq-mean-token-sum-norm divides the batch sum by T without dividing by the sequence count. Here
 * the normalisers come from `norm` (the mini-batch totals; default: this batch alone).
 */
export function aggWeights(mask: TokenMask, B: number, T: number, mode: LossAggMode, norm?: AggNorm): Float64Array {
  checkTokens('mask', mask, B, T);
  const n = norm ?? aggNorm(mask, B, T);
  const w = new Float64Array(B * T);
  for (let b = 0; b < B; b++) {
    let len = 0;
    for (let t = 0; t < T; t++) if (mask[b * T + t]) len++;
    if (len === 0) continue;
    if (!(n.tokens > 0 && n.seqs > 0 && n.horizon > 0)) {
      throw new RangeError(
        `aggWeights: the normaliser ${JSON.stringify(n)} has a zero count but row ${b} has ${len} loss tokens; compute it with aggNorm over the mini-batch that contains this micro-batch.`,
      );
    }
    let wb: number;
    switch (mode) {
      case 'token-mean':
        wb = 1 / n.tokens;
        break;
      case 'seq-mean-token-mean':
        wb = 1 / (len * n.seqs);
        break;
      case 'seq-mean-token-sum':
        wb = 1 / n.seqs;
        break;
      case 'seq-mean-token-sum-norm':
        wb = 1 / (n.horizon * n.seqs);
        break;
      default:
        assertNever(mode, 'loss aggregation mode');
    }
    for (let t = 0; t < T; t++) if (mask[b * T + t]) w[b * T + t] = wb;
  }
  return w;
}

/** Aggregates a per-token loss: `Σ_t w_t L_t` with the weights of `aggWeights`. 0 on an empty mask. */
export function aggLoss(
  perToken: Nums,
  mask: TokenMask,
  B: number,
  T: number,
  mode: LossAggMode,
  norm?: AggNorm,
): number {
  checkTokens('perToken', perToken, B, T);
  const w = aggWeights(mask, B, T, mode, norm);
  let s = 0;
  for (let i = 0; i < w.length; i++) if (w[i] !== 0) s += w[i]! * perToken[i]!;
  return s;
}

/** Masked mean over all loss tokens (for statistics, not losses): Σ m x / Σ m, 0 on an empty mask. */
export function maskedMean(x: Nums, mask: TokenMask): number {
  let s = 0;
  let n = 0;
  for (let i = 0; i < x.length; i++) {
    if (mask[i]) {
      s += x[i]!;
      n++;
    }
  }
  return n > 0 ? s / n : 0;
}
