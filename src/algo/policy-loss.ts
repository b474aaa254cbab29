// PPO's clipped policy loss with asymmetric ("clip-higher") and dual clipping, the entropy bonus, and the
// combined actor loss, each with its closed-form gradient w.r.t. per-token log-probs (and entropies).
import { assertNever } from '../util/index.js';
import { aggWeights, maskedMean, type AggNorm, type LossAggMode } from './aggregate.js';
import { klLoss, type KLEstimator } from './kl.js';
import { checkTokens, type Nums, type TokenMask } from './shape.js';
import { cispoPolicyLoss, gspoPolicyLoss, type SeqClipConfig } from './policy-loss-variants.js';
import {
  clipSide,
  lossWeights,
  PolicyStats,
  type PolicyLossKind,
  type PolicyLossOut,
  type PolicyTokens,
  type PPOClipConfig,
  type PPOStats,
} from './policy-types.js';

export type { PolicyLossKind, PolicyTokens, PPOClipConfig, PPOStats } from './policy-types.js';
export { POLICY_LOSSES, parsePolicyLoss } from './policy-types.js';

/**
 * PPO clipped surrogate (Schulman et al. 2017, eq. 7) per token, as veRL's `compute_policy_loss`:
 * r = exp(clamp(logπ − logπ_old, ±20)); L1 = −A·r; L2 = −A·clip(r, 1−ε_low, 1+ε_high) (asymmetric,
 * DAPO's clip-higher, Yu et al. 2025); Lc = max(L1, L2); dual clip (Ye et al. 2020): for A < 0 the loss is
 * min(Lc, −A·c). The loss is agg(L) and its gradient w.r.t. logπ is w_t·(dL_t/dlogπ_t), where
 * dL/dlogπ = −A·r when the unclipped term is active and 0 when a clip (or the log-ratio clamp) binds.
 */
export function ppoPolicyLoss(a: PolicyTokens & { lossAgg: LossAggMode } & PPOClipConfig): PolicyLossOut {
  const { logprobs, oldLogprobs, advantages, mask, B, T } = a;
  const { clipRatioLow: epsLow, clipRatioHigh: epsHigh, clipRatioC: c } = a;
  const clamp = a.logRatioClamp ?? 20;
  const w = lossWeights(a);
  if (!(c > 1)) throw new RangeError(`clipRatioC must be > 1 (or Infinity to disable dual clip), got ${c}.`);
  const grad = new Float64Array(B * T);
  const stats = new PolicyStats();
  let loss = 0;
  for (let i = 0; i < B * T; i++) {
    if (!mask[i]) continue;
    const A = advantages[i]!;
    const d = logprobs[i]! - oldLogprobs[i]!;
    const dc = Math.min(clamp, Math.max(-clamp, d));
    const r = Math.exp(dc);
    const rc = Math.min(1 + epsHigh, Math.max(1 - epsLow, r));
    const L1 = -A * r;
    const L2 = -A * rc;
    let L = Math.max(L1, L2);
    // dL/dlogπ: the unclipped branch carries −A·r (times 0 when the clamp binds); a binding clip carries 0.
    let g = L2 > L1 ? 0 : Math.abs(d) > clamp ? 0 : -A * r;
    const dual = A < 0 && -A * c < L;
    if (dual) {
      L = -A * c;
      g = 0;
    }
    loss += w[i]! * L;
    grad[i] = w[i]! * g;
    // veRL takes ppo_kl from the clamped log-ratio
    stats.token({ clipped: clipSide(L2 > L1, A), dual, logRatio: dc, k3: r - 1 - dc });
  }
  return { loss, grad: { logprobs: grad }, stats: stats.stats() };
}

/**
 * Entropy bonus `−coef · agg(H_t)` (veRL: pg_loss − entropy_coeff·agg(entropy)), with its gradient
 * w.r.t. the per-token entropies H_t (the engine chains it through dH/dlogits). Stats: masked mean H.
 */
export function entropyBonus(a: {
  entropy: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  coef: number;
  lossAgg: LossAggMode;
  norm?: AggNorm;
}): { loss: number; grad: { entropy: Float64Array }; stats: { entropy: number } } {
  const { entropy, mask, B, T, coef, lossAgg, norm } = a;
  checkTokens('entropy', entropy, B, T);
  const w = aggWeights(mask, B, T, lossAgg, norm);
  const g = new Float64Array(B * T);
  let loss = 0;
  for (let i = 0; i < B * T; i++) {
    if (w[i] === 0) continue;
    loss -= coef * w[i]! * entropy[i]!;
    g[i] = -coef * w[i]!;
  }
  return { loss, grad: { entropy: g }, stats: { entropy: maskedMean(entropy, mask) } };
}

/**
 * Settings of the full actor loss (PPO clip + entropy bonus + optional KL loss); the config's `algo.*` holds the
 * defaults.
 */
export interface ActorLossConfig extends PPOClipConfig {
  lossAgg: LossAggMode;
  /** The policy-gradient term (`algo.policyLoss`): PPO's clip (this config's clip ratios), GSPO or CISPO. @default "ppo" */
  policyLoss?: PolicyLossKind;
  /** GSPO's sequence-ratio clip range (`algo.gspo`); needed when policyLoss is `gspo`. */
  gspo?: SeqClipConfig;
  /** CISPO's weight clip range (`algo.cispo`); needed when policyLoss is `cispo`. */
  cispo?: SeqClipConfig;
  /** Entropy bonus coefficient (`algo.entropyCoeff`, veRL's `entropy_coeff`); 0 disables the entropy term. */
  entropyCoeff: number;
  /** KL loss coefficient (`algo.kl.coef` when `algo.kl.useKlLoss`, veRL's `kl_loss_coef`); 0 disables the KL term. */
  klCoef: number;
  /** KL estimator of the loss term (`algo.kl.estimator`, veRL's `kl_loss_type`). */
  klEstimator: KLEstimator;
}

/** The policy-gradient term `cfg.policyLoss` names, over one (micro-)batch. */
export function policyGradientLoss(a: PolicyTokens, cfg: ActorLossConfig): PolicyLossOut {
  const kind = cfg.policyLoss ?? 'ppo';
  const need = (c: SeqClipConfig | undefined): SeqClipConfig => {
    if (c === undefined) throw new TypeError(`actorLoss: policyLoss \`${kind}\` needs its clip range (\`${kind}\`).`);
    return c;
  };
  switch (kind) {
    case 'ppo':
      return ppoPolicyLoss({ ...a, ...cfg });
    case 'gspo':
      return gspoPolicyLoss({ ...a, lossAgg: cfg.lossAgg, ...need(cfg.gspo) });
    case 'cispo':
      return cispoPolicyLoss({ ...a, lossAgg: cfg.lossAgg, ...need(cfg.cispo) });
    default:
      return assertNever(kind, 'policy loss');
  }
}

/**
 * The actor's loss of one (micro-)batch: pg_loss − entropyCoeff·agg(H) + klCoef·agg(KL(π‖π_ref)), as
 * RAGEN's dp_actor, with gradients w.r.t. logπ and H; pg_loss is PPO's, GSPO's or CISPO's (`cfg.policyLoss`). `entropy` is needed when entropyCoeff ≠ 0 and
 * `refLogprobs` when klCoef ≠ 0. Pass the mini-batch's `norm` for exact gradient accumulation.
 */
export function actorLoss(
  a: PolicyTokens & { entropy?: Nums; refLogprobs?: Nums },
  cfg: ActorLossConfig,
): {
  loss: number;
  grad: { logprobs: Float64Array; entropy?: Float64Array };
  stats: PPOStats & { pgLoss: number; entropyLoss: number; entropy: number; klLoss: number; kl: number };
} {
  const { B, T, mask, norm } = a;
  const { entropyCoeff, klCoef } = cfg;
  const pg = policyGradientLoss({ ...a, ...(norm !== undefined ? { norm } : {}) }, cfg);
  const grad: { logprobs: Float64Array; entropy?: Float64Array } = { logprobs: pg.grad.logprobs };
  let entropyLoss = 0;
  let entropy = 0;
  if (entropyCoeff !== 0) {
    if (a.entropy === undefined)
      throw new TypeError('actorLoss: entropyCoeff is non-zero but no per-token `entropy` was given.');
    const e = entropyBonus({
      entropy: a.entropy,
      mask,
      B,
      T,
      coef: entropyCoeff,
      lossAgg: cfg.lossAgg,
      ...(norm !== undefined ? { norm } : {}),
    });
    entropyLoss = e.loss;
    entropy = e.stats.entropy;
    grad.entropy = e.grad.entropy;
  } else if (a.entropy !== undefined) {
    entropy = maskedMean(a.entropy, mask);
  }
  let kLoss = 0;
  let kl = 0;
  if (klCoef !== 0) {
    if (a.refLogprobs === undefined)
      throw new TypeError('actorLoss: klCoef is non-zero but no `refLogprobs` were given.');
    const k = klLoss({
      logprobs: a.logprobs,
      refLogprobs: a.refLogprobs,
      mask,
      B,
      T,
      estimator: cfg.klEstimator,
      coef: klCoef,
      lossAgg: cfg.lossAgg,
      ...(norm !== undefined ? { norm } : {}),
    });
    kLoss = k.loss;
    kl = k.stats.kl;
    for (let i = 0; i < B * T; i++) grad.logprobs[i]! += k.grad.logprobs[i]!;
  }
  return {
    loss: pg.loss + entropyLoss + kLoss,
    grad,
    stats: { ...pg.stats, pgLoss: pg.loss, entropyLoss, entropy, klLoss: kLoss, kl },
  };
}
