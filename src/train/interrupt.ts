// Ctrl-C (SIGINT) or SIGTERM while `train` runs: say what was kept (the newest complete checkpoint) and the command
// that
// continues the run, on stderr (and so in the run's console.log), then stop as the signal would have.
import { stopTorchWorkers } from '../engine/index.js';
import { latestCheckpoint } from './checkpoint-io.js';

/** What the interrupt message needs to know about the run, read when the signal arrives. */
export interface InterruptedRun {
  /** The run directory (`--resume` takes it). */
  runDir: string;
  /** Its `checkpoints/` folder. */
  checkpoints: string;
  totalSteps: number;
  /** The step being trained (the last one begun), or the step resumed after while none has begun. */
  step(): number;
  /** The step the run started after (0 for a fresh run). */
  startStep: number;
}

/** The lines printed on `signal`: what was interrupted, the checkpoint kept, and the resume command. */
export function interruptMessage(signal: NodeJS.Signals, run: InterruptedRun): string {
  const step = run.step();
  const when =
    step > run.startStep
      ? `during step ${step} of ${run.totalSteps}`
      : `before step ${run.startStep + 1} of ${run.totalSteps}`;
  const kept = latestCheckpoint(run.checkpoints);
  if (!kept) {
    return `ragen: interrupted by ${signal} ${when}, before the first checkpoint: nothing was kept to resume from (trainer.checkpointEvery sets how often one is written). Start the run again (remove ${run.runDir} first if logging.runDir names it).`;
  }
  return `ragen: interrupted by ${signal} ${when}. Kept: the checkpoint of step ${kept.step}, ${kept.dir}.\nContinue with: ragen train --resume ${run.runDir}`;
}

/**
 * Until the returned undo is called, SIGINT and SIGTERM print `interruptMessage` on stderr, stop the torch engine's
 * workers (waiting for their exit, a few seconds at most), then stop the process: with
 * `exit` (agent programs may run) through `process.exit(130 / 143)`, whose exit hook (src/gateway/runner.ts) kills the
 * programs' process groups; otherwise by raising the signal again with this handler gone, so the process ends as it
 * would have without it (unless the embedding program listens for the signal itself: then it decides).
 */
export function sayOnInterrupt(run: InterruptedRun, opts: { exit: boolean }): () => void {
  const undo = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  function onSignal(signal: NodeJS.Signals): void {
    undo();
    let message: string;
    try {
      message = interruptMessage(signal, run);
    } catch (err) {
      message = `ragen: interrupted by ${signal}; the checkpoints under ${run.checkpoints} could not be listed (${(err as Error).message}). Continue with: ragen train --resume ${run.runDir}`;
    }
    process.stderr.write(`\n${message}\n`); // synchronous on a terminal, a file and (on Linux) a pipe
    // The torch engine's workers first (a step may be running there): stopped and reaped before this process ends, so
    // none is left running or defunct (issue 38 item 5).
    void stopTorchWorkers().then(() => {
      if (opts.exit) process.exit(signal === 'SIGINT' ? 130 : 143);
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return undo;
}
