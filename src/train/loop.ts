// The training loop: validation before training, then per step a StarPO step (step.ts), echo-trap warnings, rollouts
// saved, early stops checked, validation every `valEvery` steps, a checkpoint every `checkpointEvery`. What it runs
// on (the opened run, its state, sinks and envs) is the session trainer.ts opens.
import { writeEpisodeRecords } from '../agent/index.js';
import { rolloutFile } from '../metrics/index.js';
import type { EarlyStop } from './early-stop.js';
import { saveCheckpoint } from './run-state.js';
import { starpoStep } from './step.js';
import { stepOrExplain } from './step-failure.js';
import type { RagenConfig } from '../config/index.js';
import type { MetricLogger, RunPaths } from '../metrics/index.js';
import type { AsyncRollouts } from './async-rollouts.js';
import type { EarlyStopTracker } from './early-stop.js';
import type { EarlyWarningMonitor } from './early-warning-step.js';
import type { RunState } from './run-state.js';
import type { StepContext } from './step.js';
import { validate } from './validate.js';

/** What the loop runs on: the opened run, its state and the objects that carry it, the logger, the step context. */
export interface Session {
  config: RagenConfig;
  paths: RunPaths;
  startStep: number;
  /** The last step this invocation trains (`trainer.steps`, or `stopAfter`). */
  end: number;
  /** The step being trained (for the interrupt message). */
  current: number;
  ctx: StepContext;
  /** Rollouts generated ahead (trainer.async), else null. */
  ahead: AsyncRollouts | null;
  logger: MetricLogger;
  tracker: EarlyStopTracker;
  warnings: EarlyWarningMonitor;
  /** Validation success per val tag: before training, and at the last validation. */
  val: { before: Record<string, number> | null; last: Record<string, number> | null };
  state: RunState;
}

/** Train steps `startStep + 1 .. end`; the last completed step and the early stop, if one ended the run. */
export async function trainLoop(s: Session): Promise<{ lastStep: number; earlyStop: EarlyStop | null }> {
  const { config, ctx, logger, tracker, warnings, paths } = s;
  const t = config.trainer;
  const validation = () => validate(config, ctx.engine, ctx.tokenizer, ctx.agent, ctx.log);
  if (s.startStep === 0 && t.valBeforeTrain) {
    const v = await validation();
    if (v) {
      s.val.before = v.success;
      logger.log(v.metrics);
      logger.flush(0);
    }
  }
  let earlyStop: EarlyStop | null = null;
  let lastStep = s.startStep;
  let lastCheckpoint = s.startStep;
  let checkpointSeconds: number | undefined;
  for (let step = s.startStep + 1; step <= s.end; step++) {
    s.current = step;
    const t0 = performance.now();
    const out = await stepOrExplain(
      s.ahead ? s.ahead.step(step) : starpoStep(ctx, step),
      step,
      lastCheckpoint,
      paths.root,
    );
    logger.log(out.metrics);
    const w = warnings.afterStep(out.metrics);
    logger.log(w.metrics);
    for (const x of w.started) logger.message(`step ${step}: ${x.message}`);
    if (checkpointSeconds !== undefined) logger.log({ 'timing_s/checkpoint': checkpointSeconds }); // the previous step's write
    if (config.logging.rolloutsEvery > 0 && step % config.logging.rolloutsEvery === 0)
      writeEpisodeRecords(rolloutFile(paths, step), out.records);
    if (out.empty) logger.message(`step ${step}: the rollout filter kept no group; no update`);
    earlyStop = tracker.afterStep(out.empty, out.inGroupStd) ?? tracker.afterWarnings(w.started);
    if (t.valEvery > 0 && (step % t.valEvery === 0 || step === t.steps || earlyStop !== null)) {
      const v = await validation();
      if (v) {
        s.val.last = v.success;
        logger.log(v.metrics);
        earlyStop ??= tracker.afterValidation(v.success);
      }
    }
    if (earlyStop) {
      logger.log({ [earlyStop.key]: 1 });
      logger.message(`early stop after step ${step}: ${earlyStop.reason}`);
    }
    logger.log({ 'timing_s/step': (performance.now() - t0) / 1000 }); // once per step: the step does not time itself
    if (earlyStop || step === t.steps)
      logger.flush(step); // a stop before the end keeps the interval pending
    else logger.endStep(step);
    lastStep = step;
    if ((t.checkpointEvery > 0 && step % t.checkpointEvery === 0) || step === s.end || earlyStop) {
      const c0 = performance.now();
      await saveCheckpoint(s.state, { step, engine: ctx.engine, config, paths });
      checkpointSeconds = (performance.now() - c0) / 1000;
      lastCheckpoint = step;
    }
    if (earlyStop) break;
  }
  return { lastStep, earlyStop };
}
