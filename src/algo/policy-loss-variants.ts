// The sequence-level and clipped-weight alternatives to PPO's token clip: GSPO (Zheng et al. 2025) and CISPO
// (MiniMax 2025), each with its closed-form gradient w.r.t. per-token log-probs and the mini-batch's AggNorm.
import type { LossAggMode } from './aggregate.js';
import { clipSide, lossWeights, PolicyStats, type PolicyLossOut, type PolicyTokens } from './policy-types.js';

/** The clip range of GSPO's sequence ratio or CISPO's weight (their own config keys, `algo.gspo` / `algo.cispo`). */
export interface SeqClipConfig {
  /** The ratio (or weight) is clipped below at 1 − clipRatioLow. */
  clipRatioLow: number;
  /** ... and above at 1 + clipRatioHigh. */
  clipRatioHigh: number;
}

/**
 * GSPO (Zheng et al. 2025, "Group Sequence Policy Optimization", eq. 5-7 and GSPO-token, eq. 13): one importance
 * ratio per sequence, the length-normalised likelihood ratio s_b = exp((1/|y_b|) Σ_t (logπ − logπ_old)) over the
 * row's loss tokens (its exponent clamped above at 10, as veRL), clipped with its own, much narrower range (the paper:
 * 3e-4 / 4e-4). Per token L_t = max(−A_t·s_b, −A_t·clip(s_b, 1−ε_low, 1+ε_high)), aggregated by `lossAgg` (the paper
 * and veRL: seq-mean-token-mean). The gradient is GSPO-token's: dL_t/dlogπ_t = −A_t·s_b when unclipped, 0 when the clip
 * binds, i.e. s_{b,t} = sg[s_b]·π_t/sg[π_t]. With one advantage per sequence (GRPO, RLOO, ...) it is the exact gradient
 * of the GSPO objective (tested against finite differences); with per-token advantages (GAE) it is GSPO-token's.
 * Stats as PPO's (clip fractions count tokens; ppo_kl and k3 are per token, as veRL).
 */
export function gspoPolicyLoss(a: PolicyTokens & { lossAgg: LossAggMode } & SeqClipConfig): PolicyLossOut {
  const { logprobs, oldLogprobs, advantages, mask, B, T } = a;
  const { clipRatioLow: epsLow, clipRatioHigh: epsHigh } = a;
  const w = lossWeights(a);
  const grad = new Float64Array(B * T);
  const stats = new PolicyStats();
  let loss = 0;
  for (let b = 0; b < B; b++) {
    let len = 0;
    let sum = 0;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (!mask[i]) continue;
      len++;
      sum += logprobs[i]! - oldLogprobs[i]!;
    }
    if (len === 0) continue;
    const logS = sum / len;
    const clamped = logS > 10;
    const s = Math.exp(Math.min(logS, 10));
    const sc = Math.min(1 + epsHigh, Math.max(1 - epsLow, s));
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (!mask[i]) continue;
      const A = advantages[i]!;
      const L1 = -A * s;
      const L2 = -A * sc;
      const clipped = L2 > L1;
      loss += w[i]! * Math.max(L1, L2);
      grad[i] = clipped || clamped ? 0 : w[i]! * L1;
      const d = logprobs[i]! - oldLogprobs[i]!;
      stats.token({ clipped: clipSide(clipped, A), logRatio: d, k3: Math.expm1(d) - d });
    }
  }
  return { loss, grad: { logprobs: grad }, stats: stats.stats() };
}

/**
 * CISPO (MiniMax 2025, "MiniMax-M1: Scaling Test-Time Compute Efficiently with Lightning Attention", eq. 4-5): REINFORCE
 * on every token with a clipped, stop-gradient importance weight, L_t = −sg(clip(r_t, 1−ε_low, 1+ε_high))·A_t·logπ_t
 * with r_t = exp(clamp(logπ − logπ_old, ±20)). Unlike PPO's clip, no token's gradient is ever dropped: the weight is
 * bounded instead, dL_t/dlogπ_t = −clip(r_t)·A_t. The reported loss is that surrogate (as veRL's `cispo`), whose value
 * depends on logπ's scale; its gradient is what matters. The paper sets no lower bound (ε_low ≥ 1) and tunes ε_high.
 * clipfrac counts tokens whose weight was clipped (high: r > 1+ε_high, low: r < 1−ε_low).
 */
export function cispoPolicyLoss(a: PolicyTokens & { lossAgg: LossAggMode } & SeqClipConfig): PolicyLossOut {
  const { logprobs, oldLogprobs, advantages, mask, B, T } = a;
  const { clipRatioLow: epsLow, clipRatioHigh: epsHigh } = a;
  const w = lossWeights(a);
  const grad = new Float64Array(B * T);
  const stats = new PolicyStats();
  let loss = 0;
  for (let i = 0; i < B * T; i++) {
    if (!mask[i]) continue;
    const d = Math.min(20, Math.max(-20, logprobs[i]! - oldLogprobs[i]!));
    const r = Math.exp(d);
    const rc = Math.min(1 + epsHigh, Math.max(1 - epsLow, r));
    const A = advantages[i]!;
    loss += w[i]! * -rc * A * logprobs[i]!;
    grad[i] = w[i]! * -rc * A;
    // CISPO's clip is on the weight, whichever the advantage's sign: high and low name the bound that held
    stats.token({ clipped: r > 1 + epsHigh ? 'high' : r < 1 - epsLow ? 'low' : null, logRatio: d, k3: r - 1 - d });
  }
  return { loss, grad: { logprobs: grad }, stats: stats.stats() };
}
