// Early warnings of the "echo trap" (RAGEN v1 §4: reward-std cliff, entropy drop and gradient spikes
// precede the collapse of success) from a run's metric history. The trainer logs them each step
// (src/train/early-warning-step.ts); RAGEN's reward-std early stop is src/train/early-stop.ts.

/** Per-step metric series, oldest first (any may be absent). */
export interface MetricHistory {
  /** Mean in-group reward std before filtering (`rollout/in_group_reward_std`). */
  rewardStd?: ArrayLike<number>;
  /** Mean token entropy of the policy (`actor/entropy`). */
  entropy?: ArrayLike<number>;
  /** Actor gradient norm before clipping (`actor/grad_norm`). */
  gradNorm?: ArrayLike<number>;
  /** MI z-score of the reasoning (`collapse/mi_zscore`, RAGEN-2's template-collapse signal). */
  miZscore?: ArrayLike<number>;
  /** Ĥ(Z|X), the reasoning's entropy given its prompt (`collapse/conditional_entropy`). */
  conditionalEntropy?: ArrayLike<number>;
}

/** Thresholds; the baseline is RAGEN's early stop's (the first 10 steps). */
export interface EarlyWarningConfig {
  /** Steps whose mean is the baseline of reward std, entropy and MI z-score. @default 10 */
  baselineSteps?: number;
  /** Recent steps averaged and compared with the baseline. @default 5 */
  window?: number;
  /** Warn when recent reward std < this × baseline. @default 0.5 */
  rewardStdWarnRatio?: number;
  /** Warn when recent entropy < (1 − this) × baseline. @default 0.5 */
  entropyDropWarn?: number;
  /** Warn when the latest grad norm's z-score against the previous `gradWindow` steps exceeds this. @default 3 */
  gradSpikeZ?: number;
  /** @default 20 */
  gradWindow?: number;
  /** Warn when recent MI z-score < this × baseline. @default 0.5 */
  miWarnRatio?: number;
  /**
   * The MI warning is template collapse only while Ĥ(Z|X) holds: recent Ĥ(Z|X) >= this × its baseline (when the
   * series is given and long enough; without it, the MI drop alone warns). @default 0.8
   */
  condEntropyHoldRatio?: number;
}

export type EarlyWarningKind = 'reward_std_collapse' | 'entropy_drop' | 'grad_norm_spike' | 'mi_collapse';

/** One warning: what tripped, the measured value, the threshold, and a sentence for the log. */
export interface EarlyWarning {
  kind: EarlyWarningKind;
  value: number;
  threshold: number;
  message: string;
}

/** Output of `earlyWarnings`. Stats are absent when their series is missing or too short. */
export interface EarlyWarningReport {
  warnings: EarlyWarning[];
  stats: {
    /** Recent / baseline reward std. */
    rewardStdRatio?: number;
    /** Recent / baseline entropy. */
    entropyRatio?: number;
    /** z-score of the latest grad norm. */
    gradNormZ?: number;
    /** Recent / baseline MI z-score. */
    miZscoreRatio?: number;
    /** Recent / baseline Ĥ(Z|X). */
    condEntropyRatio?: number;
  };
}

const finite = (xs: ArrayLike<number>): number[] => Array.from(xs).filter(Number.isFinite);
const mean = (xs: number[]): number => xs.reduce((a, x) => a + x, 0) / xs.length;

/** [baseline mean, recent mean] when the series has baselineSteps + window values, else undefined. */
function baselineAndRecent(xs: number[], baselineSteps: number, window: number): [number, number] | undefined {
  if (xs.length < baselineSteps + window) return undefined;
  return [mean(xs.slice(0, baselineSteps)), mean(xs.slice(-window))];
}

const fmt = (x: number): string => (Math.abs(x) >= 100 || x === 0 ? x.toFixed(1) : x.toPrecision(3));

/**
 * Checks a metric history for the echo trap's precursors (RAGEN v1: the in-group reward std collapses,
 * entropy falls and gradient norms spike before success drops; RAGEN-2: MI falls in template collapse):
 * - reward std: recent mean < rewardStdWarnRatio × the mean of the first baselineSteps steps;
 * - entropy: recent mean < (1 − entropyDropWarn) × baseline;
 * - grad norm: (latest − mean) / std over the previous gradWindow steps > gradSpikeZ;
 * - MI z-score: recent mean < miWarnRatio × baseline (only for a positive baseline) while Ĥ(Z|X) holds (recent
 *   >= condEntropyHoldRatio × baseline): RAGEN-2's template collapse, reasoning that stays varied but stops
 *   depending on the input. When Ĥ(Z|X) falls too, the entropy warning is the one that speaks.
 * Non-finite entries (skipped steps) are ignored. A series needs baselineSteps + window finite values
 * (the grad norm 6) before it is judged.
 */
export function earlyWarnings(history: MetricHistory, cfg: EarlyWarningConfig = {}): EarlyWarningReport {
  const baselineSteps = cfg.baselineSteps ?? 10;
  const window = cfg.window ?? 5;
  const warnings: EarlyWarning[] = [];
  const stats: EarlyWarningReport['stats'] = {};

  if (history.rewardStd !== undefined) {
    const br = baselineAndRecent(finite(history.rewardStd), baselineSteps, window);
    if (br !== undefined && br[0] > 0) {
      const [base, recent] = br;
      const ratio = recent / base;
      stats.rewardStdRatio = ratio;
      const warnRatio = cfg.rewardStdWarnRatio ?? 0.5;
      if (ratio < warnRatio) {
        warnings.push({
          kind: 'reward_std_collapse',
          value: ratio,
          threshold: warnRatio,
          message: `echo trap ahead: in-group reward std fell to ${(ratio * 100).toFixed(0)}% of its baseline (${fmt(base)} -> ${fmt(recent)} over the last ${window} steps); groups stop telling good from bad rollouts.`,
        });
      }
    }
  }

  if (history.entropy !== undefined) {
    const br = baselineAndRecent(finite(history.entropy), baselineSteps, window);
    if (br !== undefined && br[0] > 0) {
      const [base, recent] = br;
      const ratio = recent / base;
      stats.entropyRatio = ratio;
      const drop = cfg.entropyDropWarn ?? 0.5;
      if (ratio < 1 - drop) {
        warnings.push({
          kind: 'entropy_drop',
          value: 1 - ratio,
          threshold: drop,
          message: `echo trap ahead: policy entropy dropped ${((1 - ratio) * 100).toFixed(0)}% from its baseline (${fmt(base)} -> ${fmt(recent)}); the policy is becoming deterministic.`,
        });
      }
    }
  }

  if (history.gradNorm !== undefined) {
    const xs = finite(history.gradNorm);
    const gw = cfg.gradWindow ?? 20;
    if (xs.length >= 6) {
      const prev = xs.slice(Math.max(0, xs.length - 1 - gw), -1);
      const last = xs[xs.length - 1]!;
      const m = mean(prev);
      const sd = Math.sqrt(mean(prev.map((x) => (x - m) ** 2)));
      const z = (last - m) / (sd + 1e-8);
      stats.gradNormZ = z;
      const zMax = cfg.gradSpikeZ ?? 3;
      if (z > zMax) {
        warnings.push({
          kind: 'grad_norm_spike',
          value: z,
          threshold: zMax,
          message: `echo trap ahead: gradient norm spiked to ${fmt(last)} (z = ${z.toFixed(1)} against ${fmt(m)} ± ${fmt(sd)} over the previous ${prev.length} steps).`,
        });
      }
    }
  }

  let condEntropyHolds = true;
  if (history.conditionalEntropy !== undefined) {
    const br = baselineAndRecent(finite(history.conditionalEntropy), baselineSteps, window);
    if (br !== undefined && br[0] > 0) {
      stats.condEntropyRatio = br[1] / br[0];
      condEntropyHolds = stats.condEntropyRatio >= (cfg.condEntropyHoldRatio ?? 0.8);
    }
  }

  if (history.miZscore !== undefined) {
    const br = baselineAndRecent(finite(history.miZscore), baselineSteps, window);
    if (br !== undefined && br[0] > 0) {
      const [base, recent] = br;
      const ratio = recent / base;
      stats.miZscoreRatio = ratio;
      const warnRatio = cfg.miWarnRatio ?? 0.5;
      if (ratio < warnRatio && condEntropyHolds) {
        warnings.push({
          kind: 'mi_collapse',
          value: ratio,
          threshold: warnRatio,
          message: `echo trap ahead: reasoning-prompt MI z-score fell to ${(ratio * 100).toFixed(0)}% of its baseline (${fmt(base)} -> ${fmt(recent)})${stats.condEntropyRatio !== undefined ? ` while H(Z|X) held at ${(stats.condEntropyRatio * 100).toFixed(0)}% of its baseline` : ''}; reasoning is becoming input-independent (template collapse).`,
        });
      }
    }
  }

  return { warnings, stats };
}
