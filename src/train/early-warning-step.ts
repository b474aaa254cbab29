// The echo-trap early warnings of a training run: the per-step series that src/algo/early-warning.ts reads,
// kept from the step's metrics, and its report as `early_warning/*` metrics (a warning only warns: stopping
// is early-stop.ts's).
import {
  earlyWarnings,
  type EarlyWarning,
  type EarlyWarningConfig,
  type EarlyWarningKind,
  type MetricHistory,
} from '../algo/index.js';
import type { MetricValues } from '../metrics/index.js';

/** The monitor's series and active warnings (plain JSON, saved in checkpoints for an exact resume). */
export interface EarlyWarningState {
  rewardStd: number[];
  entropy: number[];
  gradNorm: number[];
  miZscore: number[];
  /** Ĥ(Z|X) per diagnostic step (absent in checkpoints written before it was tracked). */
  conditionalEntropy?: number[];
  /** Warnings active after the last step (a warning's message is printed when it starts). */
  active: EarlyWarningKind[];
}

/** Which step metric feeds which series. */
const SOURCES = [
  ['rewardStd', 'rollout/in_group_reward_std'],
  ['entropy', 'actor/entropy'],
  ['gradNorm', 'actor/grad_norm'],
  ['miZscore', 'collapse/mi_zscore'],
  ['conditionalEntropy', 'collapse/conditional_entropy'],
] as const satisfies readonly (readonly [keyof MetricHistory, keyof MetricValues])[];

/** The stat of each warning and the keys it is logged under. */
const REPORTS = [
  ['reward_std_collapse', 'rewardStdRatio', 'early_warning/reward_std_collapse', 'early_warning/reward_std_ratio'],
  ['entropy_drop', 'entropyRatio', 'early_warning/entropy_drop', 'early_warning/entropy_ratio'],
  ['grad_norm_spike', 'gradNormZ', 'early_warning/grad_norm_spike', 'early_warning/grad_norm_z'],
  ['mi_collapse', 'miZscoreRatio', 'early_warning/mi_collapse', 'early_warning/mi_zscore_ratio'],
] as const;

/**
 * Feeds each step's metrics to `earlyWarnings`. Only finite values enter a series (the MI z-score exists on
 * collapse-diagnostic steps only; a skipped update has no grad norm). A series keeps its first `baselineSteps`
 * values and its latest ones (enough for the recent window and the grad-norm window), so the state stays small.
 */
export class EarlyWarningMonitor {
  state: EarlyWarningState = {
    rewardStd: [],
    entropy: [],
    gradNorm: [],
    miZscore: [],
    conditionalEntropy: [],
    active: [],
  };
  private readonly head: number;
  private readonly tail: number;

  constructor(private readonly cfg: EarlyWarningConfig = {}) {
    this.head = cfg.baselineSteps ?? 10;
    this.tail = Math.max(cfg.window ?? 5, (cfg.gradWindow ?? 20) + 1);
  }

  /** After a step: its `early_warning/*` metrics, and the warnings that started at this step. */
  afterStep(step: MetricValues): { metrics: MetricValues; started: EarlyWarning[] } {
    for (const [series, key] of SOURCES) {
      const v = step[key];
      if (v === undefined || !Number.isFinite(v)) continue;
      const xs = (this.state[series] ??= []);
      xs.push(v);
      if (xs.length > this.head + this.tail) xs.splice(this.head, xs.length - this.head - this.tail);
    }
    const { rewardStd, entropy, gradNorm, miZscore, conditionalEntropy } = this.state;
    const report = earlyWarnings(
      { rewardStd, entropy, gradNorm, miZscore, ...(conditionalEntropy ? { conditionalEntropy } : {}) },
      this.cfg,
    );
    const metrics: MetricValues = {};
    const firing = new Set(report.warnings.map((w) => w.kind));
    for (const [kind, stat, flagKey, statKey] of REPORTS) {
      const value = report.stats[stat];
      if (value === undefined) continue; // the series is still too short to judge
      metrics[statKey] = value;
      metrics[flagKey] = firing.has(kind) ? 1 : 0;
    }
    if (report.stats.condEntropyRatio !== undefined)
      metrics['early_warning/cond_entropy_ratio'] = report.stats.condEntropyRatio;
    const started = report.warnings.filter((w) => !this.state.active.includes(w.kind));
    this.state.active = [...firing];
    return { metrics, started };
  }
}
