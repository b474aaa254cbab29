// The run directory (DESIGN.md): runs/<env>__<algo>__<seed>__<timestamp>/ with config.yaml, metrics.jsonl,
// rollouts/step-N.jsonl, checkpoints/step-N/ and eval/. The dashboard and `ragen eval` read only these files.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

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

/**
 * Create a fresh run directory with its sub-folders. `root` is used as given; otherwise the name is
 * built under `runsDir`, with `-2`, `-3`... appended if a run of the same name and second exists.
 */
export function createRunDir(options: { runsDir: string; env: string; algo: string; seed: number; time?: Date; root?: string | null }): RunPaths {
  let root = options.root ?? undefined;
  if (!root) {
    const base = join(options.runsDir, runDirName({ ...options, time: options.time ?? new Date() }));
    root = base;
    for (let i = 2; existsSync(root); i++) root = `${base}-${i}`;
  }
  const paths = runPaths(root);
  for (const dir of [paths.root, paths.rollouts, paths.checkpoints, paths.eval]) mkdirSync(dir, { recursive: true });
  return paths;
}

/** `rollouts/step-N.jsonl` of a run (its lines: src/agent/trajectories.ts `EpisodeRecord`). */
export function rolloutFile(paths: RunPaths, step: number): string {
  return join(paths.rollouts, `step-${step}.jsonl`);
}
