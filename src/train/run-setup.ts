// Opening a run: a fresh run directory named from the config (with config.yaml saved), or an interrupted run
// resumed from its latest complete checkpoint, with metrics and rollouts rolled back to that step.
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunDir, runPaths, type RunPaths } from '../metrics/index.js';
import { CheckpointError, withFileErrors } from '../util/index.js';
import { checkResumeOverrides, entryTags, loadSavedConfig, saveConfig, type RagenConfig } from '../config/index.js';
import type { VerifyCheckpointOptions } from '../metrics/index.js';
import {
  checkpointDirs,
  checkpointMetrics,
  metricsUpTo,
  readCheckpoint,
  type CheckpointRef,
  type CheckpointState,
  MANIFEST_FILE,
  METRICS_COPY,
} from './checkpoint-io.js';
import { openNewest } from './checkpoint-read.js';

/** The env part of a run's directory name: `name`, else the training tags joined by `+`. */
export function runEnvName(config: RagenConfig): string {
  return config.name ?? [...new Set(entryTags(config, 'train'))].join('+');
}

/** Create `runs/<env>__<algo>__<seed>__<timestamp>/` (or `logging.runDir`) and save the config in it. */
export function createRun(config: RagenConfig, options: { time?: Date } = {}): RunPaths {
  const paths = createRunDir({
    runsDir: config.logging.runsDir,
    root: config.logging.runDir,
    env: runEnvName(config),
    algo: config.algo.advEstimator,
    seed: config.seed.train,
    ...(options.time ? { time: options.time } : {}),
  });
  saveConfig(config, paths.root);
  return paths;
}

/**
 * Undo a fresh run that failed before its first step (W&B refused it, a gateway did not open): remove what
 * `createRun` made (config.yaml, the empty sub-folders, an empty metrics.jsonl), keeping console.log, which records
 * the failure and which a new run appends to. The folder then holds no run, so the same command can run again.
 * Returns a sentence for the error. Anything the run did write (a non-empty file, a checkpoint) is left alone.
 */
export function abandonRun(paths: RunPaths): string {
  const emptyDir = (d: string) => existsSync(d) && readdirSync(d).length === 0;
  withFileErrors('remove the unstarted run', paths.root, () => {
    if (existsSync(paths.metrics) && readFileSync(paths.metrics, 'utf8') === '') rmSync(paths.metrics);
    for (const d of [paths.checkpoints, paths.rollouts, paths.eval]) if (emptyDir(d)) rmSync(d, { recursive: true });
    if (!existsSync(paths.metrics) && !existsSync(paths.checkpoints) && !existsSync(paths.rollouts))
      rmSync(paths.config, { force: true });
  });
  return `\`${paths.root}\` keeps only its console.log, so the same command can run again.`;
}

/** A folder beside `dir` that does not exist yet: `dir-2`, `dir-3`, ... */
function freshSibling(dir: string): string {
  let n = 2;
  while (existsSync(`${dir}-${n}`)) n++;
  return `${dir}-${n}`;
}

/** What a resumed run continues from. */
export interface ResumedRun {
  config: RagenConfig;
  paths: RunPaths;
  checkpoint: CheckpointRef;
  state: CheckpointState;
}

/**
 * Reopen `runDir` at its newest checkpoint, verified first (`opts`: see verifyCheckpoint; a damaged one is named, not
 * skipped): the saved config (plus `overrides`), the checkpoint's trainer state, metrics.jsonl cut back to the
 * checkpoint's step, and rollout files of later steps removed, so the continued run writes exactly what an
 * uninterrupted one would have.
 */
export function resumeRun(
  runDir: string,
  overrides: readonly string[] = [],
  opts: VerifyCheckpointOptions = {},
): ResumedRun {
  checkResumeOverrides(overrides);
  const paths = runPaths(runDir);
  if (!existsSync(paths.config)) throw new CheckpointError(`\`${runDir}\` is not a run directory (no config.yaml).`);
  const checkpoint = checkpointDirs(paths.checkpoints).pop(); // the newest, checked below rather than skipped when damaged
  if (!checkpoint) {
    throw new CheckpointError(
      `\`${runDir}\` has no checkpoint under checkpoints/ (a step-N/ with ${MANIFEST_FILE}): nothing to resume. Start it again from its config into a new folder with \`ragen train --config ${paths.config} logging.runDir=${freshSibling(runDir)}\` (or delete \`${runDir}\` and rerun the command that started it).`,
    );
  }
  const wayOut = (older: CheckpointRef | undefined) =>
    older
      ? `the newest intact-looking one before it is ${older.dir}: delete ${checkpoint.dir} to resume from step ${older.step}`
      : 'no complete checkpoint comes before it to resume from';
  const state = openNewest(runDir, checkpoint, wayOut, () => readCheckpoint(checkpoint.dir, opts));
  const config = loadSavedConfig(checkpoint.dir, overrides);
  const saved = existsSync(join(checkpoint.dir, METRICS_COPY))
    ? checkpointMetrics(checkpoint.dir)
    : existsSync(paths.metrics)
      ? metricsUpTo(readFileSync(paths.metrics, 'utf8'), checkpoint.step)
      : '';
  writeFileSync(paths.metrics, saved);
  if (existsSync(paths.rollouts)) {
    for (const f of readdirSync(paths.rollouts)) {
      const m = /^step-(\d+)\.jsonl$/.exec(f);
      if (m && Number(m[1]) > checkpoint.step) rmSync(join(paths.rollouts, f));
    }
  }
  return { config, paths, checkpoint, state };
}

/** The run directory's log of its resumes: one JSON line each (see `recordResume`). */
export const RESUME_LOG = 'resumes.jsonl';

/**
 * Say in the run directory what a resume changed, once it is sure to continue: config.yaml becomes the config now in
 * effect (overrides applied) and `resumes.jsonl` gains a line with the step resumed after, the overrides, and whether
 * AdamW restarted from fresh moments. The checkpoints keep the config each was written with.
 */
export function recordResume(
  paths: RunPaths,
  config: RagenConfig,
  entry: { afterStep: number; overrides: readonly string[]; freshOptimizer: boolean },
): void {
  saveConfig(config, paths.root);
  const file = join(paths.root, RESUME_LOG);
  const line = JSON.stringify({
    after_step: entry.afterStep,
    overrides: entry.overrides,
    fresh_optimizer: entry.freshOptimizer,
    time: new Date().toISOString(),
  });
  withFileErrors('write the resume log', file, () => appendFileSync(file, `${line}\n`));
}
