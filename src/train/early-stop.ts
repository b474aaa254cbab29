// RAGEN's early stops (inventory 3.6), each with a reason and its `early_stopped/*` key: too many consecutive
// empty batches after filtering, in-group reward-std collapse, and validation-success collapse; plus ours: an
// echo-trap warning the config lists in `trainer.earlyStop.onWarnings`.
import type { EarlyWarning } from '../algo/index.js';
import type { FixedMetricKey } from '../metrics/index.js';
import type { RagenConfig } from '../config/index.js';

/** Why a run stopped early. */
export interface EarlyStop {
  key: Extract<FixedMetricKey, `early_stopped/${string}`>;
  reason: string;
}

/** The tracker's counters (plain JSON, saved in checkpoints so a resumed run stops where the original would). */
export interface EarlyStopState {
  emptyStreak: number;
  /** In-group reward std of the first `baselineSteps` non-empty steps. */
  stdHistory: number[];
  lowStdStreak: number;
  lowValStreak: number;
}

/** Counts toward each configured early stop. */
export class EarlyStopTracker {
  state: EarlyStopState = { emptyStreak: 0, stdHistory: [], lowStdStreak: 0, lowValStreak: 0 };

  constructor(private readonly cfg: RagenConfig['trainer']['earlyStop']) {}

  /** After a training step: `empty` when the filter kept nothing; `inGroupStd` = `rollout/in_group_reward_std`. */
  afterStep(empty: boolean, inGroupStd: number): EarlyStop | null {
    const s = this.state;
    s.emptyStreak = empty ? s.emptyStreak + 1 : 0;
    const patience = this.cfg.emptyBatchPatience;
    if (patience > 0 && s.emptyStreak >= patience) {
      return {
        key: 'early_stopped/empty_filtered_steps',
        reason: `the rollout filter emptied the batch ${s.emptyStreak} steps in a row (trainer.earlyStop.emptyBatchPatience = ${patience})`,
      };
    }
    const c = this.cfg.rewardStdCollapse;
    if (!c.enabled) return null;
    if (s.stdHistory.length < c.baselineSteps) {
      s.stdHistory.push(inGroupStd);
      return null;
    }
    const base = s.stdHistory.reduce((a, b) => a + b, 0) / s.stdHistory.length;
    s.lowStdStreak = inGroupStd < c.ratio * base ? s.lowStdStreak + 1 : 0;
    if (s.lowStdStreak >= c.patience) {
      return {
        key: 'early_stopped/reward_std_collapse',
        reason: `the in-group reward std stayed below ${c.ratio} x its baseline ${base.toFixed(4)} (mean of the first ${c.baselineSteps} steps) for ${s.lowStdStreak} steps (trainer.earlyStop.rewardStdCollapse)`,
      };
    }
    return null;
  }

  /** After a step's warnings: stop when one that started is listed in `onWarnings`. */
  afterWarnings(started: readonly EarlyWarning[]): EarlyStop | null {
    const hit = started.find((w) => this.cfg.onWarnings.includes(w.kind));
    if (!hit) return null;
    return {
      key: 'early_stopped/early_warning',
      reason: `the ${hit.kind} warning started (trainer.earlyStop.onWarnings = [${this.cfg.onWarnings.join(', ')}]): ${hit.message}`,
    };
  }

  /** After a validation (not the one before training): `success` per val tag. */
  afterValidation(success: Record<string, number>): EarlyStop | null {
    const c = this.cfg.valSuccessCollapse;
    if (!c.enabled) return null;
    const low = Object.entries(success).filter(([, v]) => v < c.threshold);
    this.state.lowValStreak = low.length > 0 ? this.state.lowValStreak + 1 : 0;
    if (this.state.lowValStreak >= c.patience) {
      return {
        key: 'early_stopped/low_val_success',
        reason: `validation success of ${low.map(([t, v]) => `${t} (${v.toFixed(3)})`).join(', ')} stayed below ${c.threshold} for ${this.state.lowValStreak} validations (trainer.earlyStop.valSuccessCollapse)`,
      };
    }
    return null;
  }
}
