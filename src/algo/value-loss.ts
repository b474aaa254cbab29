// The critic's clipped value loss (PPO2 / veRL `compute_value_loss`) with its gradient w.r.t. the values.
import { aggWeights, maskedMean, type AggNorm, type LossAggMode } from './aggregate.js';
import { checkTokens, type TokenMask, type Nums } from './shape.js';

/**
 * Clipped value loss, ½·agg(max((V − R)², (clip(V, V_old ± ε) − R)²)) (OpenAI baselines PPO2; veRL
 * `compute_value_loss`; ε = `valueClip`, veRL's `cliprange_value`). The gradient w.r.t. V is w_t·(V − R) when
 * the unclipped term is the larger and 0 when the clipped one is (V is then outside V_old ± ε and the
 * clipped value does not depend on it). Stats: `vfClipfrac` (fraction where the clipped term is the
 * larger) and mean predicted value, over this batch's loss tokens. `valueClip = Infinity` gives the
 * plain squared error.
 */
export function clippedValueLoss(a: {
  values: Nums;
  oldValues: Nums;
  returns: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  /** ε of the clip around the old values (the config's `algo.valueClip`). */
  valueClip: number;
  lossAgg: LossAggMode;
  norm?: AggNorm;
}): { loss: number; grad: { values: Float64Array }; stats: { vfClipfrac: number; vpredMean: number; tokens: number } } {
  const { values, oldValues, returns, mask, B, T, lossAgg, norm } = a;
  const eps = a.valueClip;
  checkTokens('values', values, B, T);
  checkTokens('oldValues', oldValues, B, T);
  checkTokens('returns', returns, B, T);
  const w = aggWeights(mask, B, T, lossAgg, norm);
  const grad = new Float64Array(B * T);
  let loss = 0;
  let n = 0;
  let nClip = 0;
  for (let i = 0; i < B * T; i++) {
    if (!mask[i]) continue;
    const v = values[i]!;
    const R = returns[i]!;
    const vc = Math.min(oldValues[i]! + eps, Math.max(oldValues[i]! - eps, v));
    const l1 = (v - R) ** 2;
    const l2 = (vc - R) ** 2;
    const clipped = l2 > l1;
    loss += w[i]! * 0.5 * (clipped ? l2 : l1);
    grad[i] = clipped ? 0 : w[i]! * (v - R);
    n++;
    if (clipped) nClip++;
  }
  return {
    loss,
    grad: { values: grad },
    stats: { vfClipfrac: n > 0 ? nClip / n : 0, vpredMean: maskedMean(values, mask), tokens: n },
  };
}
