// Rollout correction: importance weights between the sampler's policy μ and the trainer's π_old that correct the
// update for their mismatch (TIS truncates, MIS masks; per token, per sequence or per geometric mean), and the
// rejection of whole sequences whose geometric-mean ratio leaves a bound. The weights multiply advantages.
import { parseName, checkTokens, type Nums, type TokenMask } from './shape.js';

/** Where the ratio π_old/μ is formed: per token, per sequence (product), or per sequence's geometric mean. */
export type CorrectionLevel = 'token' | 'sequence' | 'geometric';
/** `tis`: truncate the weight at the threshold; `mis`: zero it outside [lowerThreshold, threshold]; `off`: weight 1. */
export type CorrectionMode = 'off' | 'tis' | 'mis';

export const CORRECTION_LEVELS: readonly CorrectionLevel[] = ['token', 'sequence', 'geometric'];
export const CORRECTION_MODES: readonly CorrectionMode[] = ['off', 'tis', 'mis'];

/** Parses a correction level. */
export function parseCorrectionLevel(name: string): CorrectionLevel {
  return parseName('rollout correction level', name, CORRECTION_LEVELS);
}

/** Settings of `rolloutCorrection`, named as the config's `algo.rolloutCorrection.*` keys (src/config). */
export interface RolloutCorrectionConfig {
  level: CorrectionLevel;
  mode: CorrectionMode;
  /** Upper bound C > 0 of the ratio: TIS truncates to it, MIS zeroes above it. */
  threshold: number;
  /** MIS only: ratios below it are zeroed too (0: no lower bound; IcePop's α). */
  lowerThreshold: number;
  /** Reject (weight 0) every sequence whose geometric-mean ratio is outside [1/b, b]; null: no rejection. */
  rejectBound: number | null;
}

/** Per-token weights (0 off the mask) and how many tokens and sequences each mechanism touched. */
export interface RolloutCorrection {
  weights: Float64Array;
  stats: {
    /** Mean weight over loss tokens. */
    weightMean: number;
    /** Fraction of loss tokens whose weight is not their ratio (truncated or masked). */
    tokenFrac: number;
    /** Fraction of sequences (with loss tokens) with at least one such token. */
    seqFrac: number;
    /** Fraction of sequences rejected by `rejectBound`. */
    rejectedSeqFrac: number;
    /** Loss tokens and sequences counted. */
    tokens: number;
    seqs: number;
  };
}

/** Log-ratios are clamped to ±20 before exp (veRL's safety bound [e^-20, e^20] on IS weights). */
const CLAMP = 20;

/**
 * Importance weights for the sampler/trainer mismatch (veRL's rollout correction, docs/algo/rollout_corr.md; Liu, Li et
 * al. 2025, "When Speed Kills Stability"; Yao et al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy
 * RL Training" for TIS). With δ_t = log π_old − log μ on loss tokens, the ratio ρ is
 * - `token`: ρ_t = e^δ_t;
 * - `sequence`: ρ_b = e^(Σ_t δ_t) on every token of row b (the sequence's likelihood ratio);
 * - `geometric`: ρ_b = e^(mean_t δ_t) (the length-normalised ratio of veRL's geometric level);
 * each with its exponent clamped to ±20. `tis`: w = min(ρ, C) (truncated IS). `mis`: w = ρ when lowerThreshold ≤ ρ ≤ C,
 * else 0 (masked IS; at token level with lowerThreshold α and threshold β this is IcePop, Ling Team 2025, "Every Step
 * Evolves: Scaling RL for Trillion-Scale Thinking Model", whose mask keeps ρ_t inside [α, β]). `rejectBound` b then
 * zeroes every row whose geometric-mean ratio lies outside [1/b, b] (veRL's geometric rejection sampling,
 * `seq_mean_k1`); `off` gives weight 1 to every token rejection leaves. The weights are constants of the update (π_old and μ do not move with θ): multiplying a token's
 * advantage by w ≥ 0 multiplies its PPO, GSPO or CISPO loss and gradient by w.
 * Difference from veRL: rejection zeroes the weights and leaves the loss mask (and so the aggregation denominators)
 * alone, so rejecting tokens shrinks the step rather than re-normalising it over fewer tokens.
 */
export function rolloutCorrection(
  a: { behaviorLogprobs: Nums; proxLogprobs: Nums; mask: TokenMask; B: number; T: number },
  cfg: RolloutCorrectionConfig,
): RolloutCorrection {
  const { behaviorLogprobs, proxLogprobs, mask, B, T } = a;
  const { level, mode, threshold: C, lowerThreshold: L, rejectBound: R } = cfg;
  checkTokens('behaviorLogprobs', behaviorLogprobs, B, T);
  checkTokens('proxLogprobs', proxLogprobs, B, T);
  checkTokens('mask', mask, B, T);
  if (!(C > 0)) throw new RangeError(`rolloutCorrection: threshold must be > 0, got ${C}.`);
  if (!(L >= 0 && L < C))
    throw new RangeError(`rolloutCorrection: lowerThreshold must be in [0, threshold = ${C}), got ${L}.`);
  if (R !== null && !(R > 1)) throw new RangeError(`rolloutCorrection: rejectBound must be > 1 or null, got ${R}.`);
  const clamp = (x: number): number => Math.min(CLAMP, Math.max(-CLAMP, x));
  const weight = (rho: number): number =>
    mode === 'off' ? rho : mode === 'tis' ? Math.min(rho, C) : rho >= L && rho <= C ? rho : 0;
  const weights = new Float64Array(B * T);
  let tokens = 0;
  let seqs = 0;
  let touchedTokens = 0;
  let touchedSeqs = 0;
  let rejected = 0;
  let sumW = 0;
  for (let b = 0; b < B; b++) {
    let n = 0;
    let sum = 0;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (!mask[i]) continue;
      n++;
      sum += proxLogprobs[i]! - behaviorLogprobs[i]!;
    }
    if (n === 0) continue;
    seqs++;
    const reject = R !== null && Math.abs(sum / n) > Math.log(R);
    if (reject) rejected++;
    const seqRho = level === 'sequence' ? Math.exp(clamp(sum)) : Math.exp(clamp(sum / n));
    let touched = false;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (!mask[i]) continue;
      tokens++;
      const rho = level === 'token' ? Math.exp(clamp(proxLogprobs[i]! - behaviorLogprobs[i]!)) : seqRho;
      const w = reject ? 0 : weight(rho);
      if (w !== rho) {
        touchedTokens++;
        touched = true;
      }
      weights[i] = mode === 'off' && !reject ? 1 : w;
      sumW += w;
    }
    if (touched) touchedSeqs++;
  }
  return {
    weights,
    stats: {
      weightMean: tokens > 0 ? (mode === 'off' ? tokens - touchedTokens : sumW) / tokens : 0,
      tokenFrac: tokens > 0 ? touchedTokens / tokens : 0,
      seqFrac: seqs > 0 ? touchedSeqs / seqs : 0,
      rejectedSeqFrac: seqs > 0 ? rejected / seqs : 0,
      tokens,
      seqs,
    },
  };
}
