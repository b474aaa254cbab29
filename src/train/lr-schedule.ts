// Learning-rate schedules per StarPO step: constant (RAGEN's, with optional linear warmup) and warmup + cosine
// decay to a floor (as in nanoGPT's `get_lr`), and the AdamW settings of a step. Steps are 1-based, like the
// trainer's global step.
import type { RagenConfig } from '../config/index.js';
import type { OptimizerSettings } from '../engine/index.js';

/** Which schedule and its shape; `totalSteps` is the run's last step (`trainer.steps`). */
export interface LrSchedule {
  kind: 'constant' | 'warmup_cosine';
  /** Steps of linear warmup: step s <= warmupSteps gets peak * s / warmupSteps. */
  warmupSteps: number;
  /** warmup_cosine's final learning rate as a fraction of the peak. */
  minLrRatio: number;
  totalSteps: number;
}

/** The learning rate at 1-based `step` for a schedule peaking at `peak`. */
export function lrAt(step: number, peak: number, s: LrSchedule): number {
  if (!(step >= 1) || !Number.isInteger(step)) throw new RangeError(`lrAt: step must be an integer >= 1, got ${step}`);
  if (s.warmupSteps > 0 && step <= s.warmupSteps) return (peak * step) / s.warmupSteps;
  if (s.kind === 'constant') return peak;
  // Cosine from the peak (first step after warmup) down to minLrRatio * peak (the last step).
  const span = Math.max(1, s.totalSteps - s.warmupSteps - 1);
  const progress = Math.min(1, (step - s.warmupSteps - 1) / span);
  const floor = s.minLrRatio * peak;
  return floor + (peak - floor) * 0.5 * (1 + Math.cos(Math.PI * progress));
}

/** The schedule of a resolved config's `trainer` section. */
export function lrScheduleOf(trainer: {
  lrSchedule: LrSchedule['kind'];
  warmupSteps: number;
  minLrRatio: number;
  steps: number;
}): LrSchedule {
  return {
    kind: trainer.lrSchedule,
    warmupSteps: trainer.warmupSteps,
    minLrRatio: trainer.minLrRatio,
    totalSteps: trainer.steps,
  };
}

/** AdamW settings of the policy (`role: 'actor'`) or the critic at 1-based `step`, the schedule applied. */
export function optimizerSettings(config: RagenConfig, role: 'actor' | 'critic', step: number): OptimizerSettings {
  const t = config.trainer;
  return {
    lr: lrAt(step, role === 'actor' ? t.actorLr : t.criticLr, lrScheduleOf(t)),
    weightDecay: t.weightDecay,
    betas: [t.adamBetas[0]!, t.adamBetas[1]!],
    eps: t.adamEps,
    maxGradNorm: t.gradClip,
  };
}
