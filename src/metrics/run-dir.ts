// The run directory (DESIGN.md): runs/<env>__<algo>__<seed>__<timestamp>/ with config.yaml, metrics.jsonl,
// rollouts/step-N.jsonl, checkpoints/step-N/ and eval/. The dashboard and `ragen eval` read only these files.
import { existsSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { checkCreatable, makeDir, UsageError } from '../util/index.js';

/** The paths inside one run directory. */
export interface RunPaths {
  root: string;
  /** The resolved config. */
  config: string;
  /** One averaged record per logged step. */
  metrics: string;
  /** `step-N.jsonl`: sampled trajectories of step N. */
  rollouts: string;
  /** `step-N/`: complete checkpoints (see src/train/checkpoint-io.ts). */
  checkpoints: string;
  /** `ragen eval` outputs. */
  eval: string;
  /** TensorBoard event files (`logging.sinks` with `tensorboard`). */
  tensorboard: string;
  /** Everything the run printed (progress bars as one plain line per record). */
  consoleLog: string;
}

/** The paths of the run directory `root` (nothing is created). */
export function runPaths(root: string): RunPaths {
  return {
    root,
    config: join(root, 'config.yaml'),
    metrics: join(root, 'metrics.jsonl'),
    rollouts: join(root, 'rollouts'),
    checkpoints: join(root, 'checkpoints'),
    eval: join(root, 'eval'),
    tensorboard: join(root, 'tensorboard'),
    consoleLog: join(root, 'console.log'),
  };
}

/** `YYYYMMDD-HHMMSS` in UTC. */
export function timestamp(date: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${date.getUTCFullYear()}${p(date.getUTCMonth() + 1)}${p(date.getUTCDate())}-${p(date.getUTCHours())}${p(date.getUTCMinutes())}${p(date.getUTCSeconds())}`;
}

const safe = (s: string) => s.replace(/[^\w.+-]+/g, '-');

/** `<env>__<algo>__<seed>__<timestamp>`; characters unsafe in file names become `-`. */
export function runDirName(parts: { env: string; algo: string; seed: number; time: Date }): string {
  return [safe(parts.env), safe(parts.algo), String(parts.seed), timestamp(parts.time)].join('__');
}

/** The files of `root` that make it a run directory (empty when it holds none, or does not exist). */
function runFilesIn(root: string): string[] {
  const p = runPaths(root);
  return [p.config, p.metrics, p.checkpoints, p.rollouts].filter((f) => existsSync(f));
}

/**
 * Throw unless a new run may be created at `root`: it must not exist, or be a folder that holds no run (no
 * config.yaml, metrics.jsonl, checkpoints/ or rollouts/). A new run never writes into an old one's files.
 */
export function assertNewRunDir(root: string): void {
  if (!existsSync(root)) {
    checkCreatable(root, 'create the run directory', 'logging.runDir'); // a bad place fails now, not after the model loads
    return;
  }
  if (!statSync(root).isDirectory())
    throw new UsageError(`logging.runDir \`${root}\` is a file, not a folder; choose another path.`);
  const found = runFilesIn(root);
  if (found.length > 0) {
    throw new UsageError(
      `logging.runDir \`${root}\` already holds a run (${found.map((f) => basename(f)).join(', ')}); continue it with \`ragen train --resume ${root}\`, or choose a new logging.runDir (or leave it unset for a fresh runs/<name>/).`,
    );
  }
}

/**
 * Create a fresh run directory with its sub-folders. `root` is used as given (refused when it holds a run, see
 * `assertNewRunDir`); otherwise the name is built under `runsDir`, with `-2`, `-3`... appended if a run of the same
 * name and second exists.
 */
export function createRunDir(options: {
  runsDir: string;
  env: string;
  algo: string;
  seed: number;
  time?: Date;
  root?: string | null;
}): RunPaths {
  let root = options.root ?? undefined;
  if (!root) {
    const base = join(options.runsDir, runDirName({ ...options, time: options.time ?? new Date() }));
    root = base;
    for (let i = 2; existsSync(root); i++) root = `${base}-${i}`;
  } else assertNewRunDir(root);
  const paths = runPaths(root);
  const setting = options.root ? 'logging.runDir' : 'logging.runsDir';
  for (const dir of [paths.root, paths.rollouts, paths.checkpoints, paths.eval])
    makeDir(dir, 'create the run directory', setting); // never hangs under /proc
  return paths;
}

/** `rollouts/step-N.jsonl` of a run (its lines: src/agent/trajectories.ts `EpisodeRecord`). */
export function rolloutFile(paths: RunPaths, step: number): string {
  return join(paths.rollouts, `step-${step}.jsonl`);
}
