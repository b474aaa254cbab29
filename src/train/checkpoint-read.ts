// Opening a run's checkpoint, the same way on every path that reads one (`ragen train --resume`, `ragen eval --run`,
// `ragen serve`, `ragen probe-grads`): the checkpoint is verified against its manifest (verifyCheckpoint) before any
// other file of it is read, and a run's newest step is used or named, never skipped for an older one.
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import {
  BaseModelChangedError,
  DamagedCheckpointError,
  MANIFEST_FILE,
  UnverifiedCheckpointError,
  verifyCheckpoint,
  type VerifyCheckpointOptions,
} from '../metrics/index.js';
import { shippedModels } from '../model/index.js';
import { CheckpointError, UsageError } from '../util/index.js';
import { checkpointDirs, listCheckpoints, type CheckpointRef } from './checkpoint-io.js';

/** Options of the readers of a run's checkpoints. */
export interface OpenCheckpointOptions extends VerifyCheckpointOptions {
  /** Told (one line) which checkpoint of a run directory is used. */
  say?: (line: string) => void;
}

/**
 * `open()` of `newest`, the newest `step-N/` of `run`: when it fails because the checkpoint is damaged, the error
 * names it as the run's newest and gives the ways out `wayOut` says for the complete-looking checkpoint before it (or
 * undefined), so a damaged newest step is named and never replaced silently by an older one.
 */
export function openNewest<T>(
  run: string,
  newest: CheckpointRef,
  wayOut: (older: CheckpointRef | undefined) => string,
  open: () => T,
): T {
  try {
    return open();
  } catch (err) {
    // an unverified manifest, or a changed base (which every earlier step names too): an older step is no way out
    if (
      !(err instanceof CheckpointError) ||
      err instanceof UnverifiedCheckpointError ||
      err instanceof BaseModelChangedError
    )
      throw err;
    const older = listCheckpoints(dirname(newest.dir))
      .filter((c) => c.step < newest.step)
      .pop();
    const newestOf = `the newest checkpoint of \`${run}\` and is not skipped for an older one`;
    if (err instanceof DamagedCheckpointError) {
      const fix = err.fix === undefined ? wayOut(older) : `${err.fix}, or ${wayOut(older)}`;
      throw new CheckpointError(`checkpoint \`${err.dir}\`: ${err.problem}; it is ${newestOf}: ${fix}.`);
    }
    throw new CheckpointError(`${err.message} It is ${newestOf}: ${wayOut(older)}.`);
  }
}

/**
 * A verified model directory: `dir` itself when it is a checkpoint (it holds checkpoint.json, or is a run's
 * `checkpoints/step-N/`) or a plain model directory (config.json, no manifest: a Hugging Face download, `ragen model
 * init`, which loads as it is); else the newest `checkpoints/step-N/` of the run `dir`, said through `opts.say`. A
 * checkpoint must pass `verifyCheckpoint`; a damaged newest step is refused by name with the ways out.
 */
export function openModelDir(dir: string, opts: OpenCheckpointOptions = {}): string {
  if (existsSync(join(dir, MANIFEST_FILE)) || isRunCheckpoint(dir)) {
    const { step } = verifyCheckpoint(dir, opts);
    opts.say?.(`using checkpoint \`${dir}\` (step ${step}), verified against its ${MANIFEST_FILE}.`);
    return dir;
  }
  if (existsSync(join(dir, 'config.json'))) return dir;
  const newest = checkpointDirs(join(dir, 'checkpoints')).pop();
  if (!newest)
    throw new UsageError(
      `No model in \`${dir}\`: expected config.json there, or a run directory with checkpoints/step-N/, a shipped model (${shippedModels().join(', ')}) or a Hub id (owner/name).`,
    );
  const wayOut = (older: CheckpointRef | undefined) =>
    older
      ? `give \`${older.dir}\` instead to use step ${older.step}, or delete \`${newest.dir}\``
      : `no complete checkpoint comes before it; delete \`${newest.dir}\` and train the run again`;
  openNewest(dir, newest, wayOut, () => verifyCheckpoint(newest.dir, opts));
  opts.say?.(
    `using checkpoint step ${newest.step} of \`${dir}\` (\`${newest.dir}\`), the newest, verified against its ${MANIFEST_FILE}.`,
  );
  return newest.dir;
}

/** `<run>/checkpoints/step-N` of a run directory (one with config.yaml): the trainer always wrote a manifest there. */
function isRunCheckpoint(dir: string): boolean {
  const parent = dirname(dir);
  return (
    /^step-\d+$/.test(basename(dir)) &&
    basename(parent) === 'checkpoints' &&
    existsSync(join(dirname(parent), 'config.yaml'))
  );
}
