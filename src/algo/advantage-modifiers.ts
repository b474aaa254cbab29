// Post-advantage modifiers RAGEN applies after the estimator, in this order in `fit()`: soft reweighting
// by group reward std, loss scaling by the filter's kept ratio, GRPO length weighting.
import { assertNever } from '../util/index.js';
import { checkLength, checkTokens, parseName, seqLengths, type TokenMask, type Nums } from './shape.js';

/** Per-sequence weight scaling of a (B, T) array. */
function scaleRows(x: Nums, B: number, T: number, w: Nums): Float64Array {
  const out = new Float64Array(B * T);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) out[b * T + t] = x[b * T + t]! * w[b]!;
  return out;
}

/**
 * Soft advantage reweighting (RAGEN `algorithm.soft_advantage_reweight`, GRPO only): each sequence's
 * advantage is multiplied by σ_g / (max_g σ_g + 1e-6), where σ_g is its group's reward std, so
 * low-signal groups count less without being dropped (a soft version of the StarPO-S filter).
 * Returns the new advantages and the per-sequence weights.
 */
export function softReweightByGroupStd(a: { advantages: Nums; groupStd: Nums; B: number; T: number }): {
  advantages: Float64Array;
  weights: Float64Array;
} {
  const { advantages, groupStd, B, T } = a;
  checkTokens('advantages', advantages, B, T);
  checkLength('groupStd', groupStd, B);
  let max = 0;
  for (let b = 0; b < B; b++) max = Math.max(max, groupStd[b]!);
  const weights = new Float64Array(B);
  for (let b = 0; b < B; b++) weights[b] = groupStd[b]! / (max + 1e-6);
  return { advantages: scaleRows(advantages, B, T, weights), weights };
}

/** How the filter's kept ratio scales the loss (RAGEN `actor.filter_loss_scaling`). */
export type FilterLossScaling = 'none' | 'linear' | 'sqrt';

/** Every FilterLossScaling, for config validation. */
export const FILTER_LOSS_SCALINGS: readonly FilterLossScaling[] = ['none', 'linear', 'sqrt'];

/** Parses a filter loss scaling mode. */
export function parseFilterLossScaling(name: string): FilterLossScaling {
  return parseName('filter loss scaling', name, FILTER_LOSS_SCALINGS);
}

/**
 * Scales advantages by the rollout filter's kept ratio ρ (RAGEN `actor.filter_loss_scaling`):
 * none → A, linear → ρ·A, sqrt → √ρ·A. Keeps the update size proportional to how much of the
 * batch survived filtering.
 */
export function scaleByKeptRatio(advantages: Nums, keptRatio: number, mode: FilterLossScaling): Float64Array {
  let f: number;
  switch (mode) {
    case 'none':
      f = 1;
      break;
    case 'linear':
      f = keptRatio;
      break;
    case 'sqrt':
      f = Math.sqrt(keptRatio);
      break;
    default:
      return assertNever(mode, 'filter loss scaling');
  }
  const out = new Float64Array(advantages.length);
  for (let i = 0; i < out.length; i++) out[i] = advantages[i]! * f;
  return out;
}

/**
 * GRPO length weighting (RAGEN `grpo_advantage_length_weight`): A_i ← A_i / ((len_i + 1e-6) / mean_len),
 * with len_i the sequence's loss-token count and mean_len the batch mean, so that under a token-mean
 * loss every sequence carries about the same total weight regardless of its length.
 */
export function lengthWeightAdvantages(a: { advantages: Nums; mask: TokenMask; B: number; T: number }): Float64Array {
  const { advantages, mask, B, T } = a;
  checkTokens('advantages', advantages, B, T);
  const lens = seqLengths(mask, B, T);
  let mean = 0;
  for (let b = 0; b < B; b++) mean += lens[b]! / B;
  const w = new Float64Array(B);
  for (let b = 0; b < B; b++) w[b] = mean > 0 ? mean / (lens[b]! + 1e-6) : 1;
  return scaleRows(advantages, B, T, w);
}
