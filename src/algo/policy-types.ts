// What every policy loss shares (PPO's clip in policy-loss.ts, GSPO and CISPO in policy-loss-variants.ts): the
// per-token inputs, the clip settings, the statistics and the loop scaffolding around the loss's own formula.
import { aggWeights, type AggNorm, type LossAggMode } from './aggregate.js';
import { checkTokens, parseName, type Nums, type TokenMask } from './shape.js';

/** The policy-gradient losses `algo.policyLoss` chooses from. */
export type PolicyLossKind = 'ppo' | 'gspo' | 'cispo';

/** Every PolicyLossKind, for config validation. */
export const POLICY_LOSSES: readonly PolicyLossKind[] = ['ppo', 'gspo', 'cispo'];

/** Parses a policy loss name; throws ConfigError with did-you-mean on an unknown name. */
export function parsePolicyLoss(name: string): PolicyLossKind {
  return parseName('policy loss', name, POLICY_LOSSES);
}

/** Settings of the PPO clipped loss, named as the config's `algo.*` keys, which hold their defaults (src/config). */
export interface PPOClipConfig {
  /** ε_low: the ratio is clipped below at 1 − ε_low. */
  clipRatioLow: number;
  /** ε_high: the ratio is clipped above at 1 + ε_high (DAPO's clip-higher). */
  clipRatioHigh: number;
  /** Dual-clip constant c > 1 bounding the loss of negative-advantage tokens at −A·c; Infinity disables it. */
  clipRatioC: number;
  /** logπ − logπ_old is clamped to ±this before exp, for numerical safety. @default 20 */
  logRatioClamp?: number;
}

/** Statistics of the PPO loss, as masked means over this batch's loss tokens. */
export interface PPOStats {
  /** veRL `pg_clipfrac`: fraction of tokens where the clipped term is the larger (= clipHigh + clipLow). */
  clipfrac: number;
  /** Fraction with A > 0 and r > 1 + ε_high (the upper clip binds). */
  clipfracHigh: number;
  /** Fraction with A < 0 and r < 1 − ε_low (the lower clip binds). */
  clipfracLow: number;
  /** veRL `pg_clipfrac_lower`: fraction with A < 0 where the dual clip binds (r > c). */
  clipfracDual: number;
  /** veRL `ppo_kl`: mean of logπ_old − logπ (k1), with the log-ratio clamped to ±logRatioClamp as veRL. */
  ppoKl: number;
  /** Mean of (r − 1) − log r with the clamped r (k3 of old vs new; ≥ 0). */
  approxKl: number;
  /** Number of loss tokens the means are over (to weight micro-batch stats). */
  tokens: number;
}

/** The per-token inputs of a policy loss over a padded (B, T) batch (src/algo/shape.ts). */
export interface PolicyTokens {
  logprobs: Nums;
  oldLogprobs: Nums;
  advantages: Nums;
  mask: TokenMask;
  B: number;
  T: number;
  /** The mini-batch's normaliser (`aggNorm`), for exact gradient accumulation over micro-batches. */
  norm?: AggNorm;
}

/** A policy loss's value, its gradient w.r.t. the per-token log-probs, and its statistics. */
export type PolicyLossOut = { loss: number; grad: { logprobs: Float64Array }; stats: PPOStats };

/** Checks the per-token inputs' shapes and returns each token's aggregation weight (`lossAgg` over the batch). */
export function lossWeights(a: PolicyTokens & { lossAgg: LossAggMode }): Float64Array {
  checkTokens('logprobs', a.logprobs, a.B, a.T);
  checkTokens('oldLogprobs', a.oldLogprobs, a.B, a.T);
  checkTokens('advantages', a.advantages, a.B, a.T);
  return aggWeights(a.mask, a.B, a.T, a.lossAgg, a.norm);
}

/** Accumulates PPOStats over a loss's tokens: which clip bound each, and the k1 / k3 estimates of old vs new. */
export class PolicyStats {
  private n = 0;
  private high = 0;
  private low = 0;
  private dual = 0;
  private kl = 0;
  private k3 = 0;

  /**
   * One loss token: which clip bound it (`clipSide` for a ratio clip, the bound itself for a clipped weight) and
   * whether the dual clip did; its `logRatio` (logπ − logπ_old, clamped as the loss clamped it) and its k3 term.
   */
  token(t: { clipped: 'high' | 'low' | null; dual?: boolean; logRatio: number; k3: number }): void {
    this.n++;
    if (t.clipped === 'high') this.high++;
    if (t.clipped === 'low') this.low++;
    if (t.dual) this.dual++;
    this.kl -= t.logRatio;
    this.k3 += t.k3;
  }

  stats(): PPOStats {
    const mean = (x: number): number => (this.n > 0 ? x / this.n : 0);
    return {
      clipfrac: mean(this.high + this.low),
      clipfracHigh: mean(this.high),
      clipfracLow: mean(this.low),
      clipfracDual: mean(this.dual),
      ppoKl: mean(this.kl),
      approxKl: mean(this.k3),
      tokens: this.n,
    };
  }
}

/** Which clip bound a token: by its advantage's sign when the clipped term was the larger, else none. */
export const clipSide = (clipped: boolean, advantage: number): 'high' | 'low' | null =>
  clipped && advantage > 0 ? 'high' : clipped && advantage < 0 ? 'low' : null;
