// Checkpoint directories written atomically (step-N.tmp/, fsync, rename to step-N/), with trainer state for an exact
// resume: data position, trainer bookkeeping, metrics so far. Model weights and optimizer state are written into
// the same directory by the engine (Hugging Face layout, its own optimizer/ folder) through `writeModel`; an
// adapter-only (LoRA) model's manifest records the base it names.
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { CheckpointError, fileSystemError } from '../util/index.js';
import { saveConfig, type RagenConfig } from '../config/index.js';
import { baseWeightFiles } from '../model/index.js';
import {
  CHECKPOINT_FORMAT as FORMAT,
  CHECKPOINT_VERSION as VERSION,
  filesIn,
  isCompleteCheckpoint,
  MANIFEST_FILE,
  sha256BaseFile,
  sha256File,
  verifyCheckpoint,
  type ManifestBase,
  type ManifestFile,
  type VerifyCheckpointOptions,
} from '../metrics/index.js';

// The manifest and its check live with the run directory's layout (src/metrics), where the dashboard reaches them too.
export { isCompleteCheckpoint, MANIFEST_FILE, sha256File, verifyCheckpoint };

/** Trainer state: step, data position, free-form trainer bookkeeping. */
export const STATE_FILE = 'trainer-state.json';
/** Metrics of the run up to the checkpoint's step (a copy of metrics.jsonl). */
export const METRICS_COPY = 'metrics.jsonl';

/** Everything the trainer needs, besides the model, to continue a run exactly. */
export interface CheckpointState {
  /** The last completed step. */
  step: number;
  /** Data position, e.g. `{trainSeedCounter: 320}`: where the next step's seeds start. */
  data: Record<string, number>;
  /** Trainer bookkeeping (early-stop counters, KL coefficient, pending metrics...), plain JSON. */
  trainer?: Record<string, unknown>;
}

/** A complete checkpoint on disk. */
export interface CheckpointRef {
  step: number;
  dir: string;
}

/** Options of `writeCheckpoint`. */
export interface WriteCheckpointOptions {
  /** The resolved config, saved as config.yaml in the checkpoint. */
  config?: RagenConfig;
  /** Writes the model (HF layout) into the given directory; called before the manifest is written. */
  writeModel?: (dir: string) => Promise<void> | void;
  /** The run's metrics.jsonl: the lines up to `state.step` are copied in. */
  metricsFile?: string;
  /** Complete checkpoints to keep (older ones are deleted after the new one is in place). @default Infinity */
  keep?: number;
}

const stepDir = (root: string, step: number) => join(root, `step-${step}`);

/**
 * Write `checkpoints/step-N/` atomically: everything goes to `step-N.tmp/`, each file is fsynced, the manifest
 * (every file's size and SHA-256) is written last, then the directory is renamed into place. A crash at any point
 * leaves either the old checkpoints or the new complete one; a failed write (disk full, ...) removes its `.tmp`
 * and throws a FileSystemError naming the path; a leftover `.tmp` is ignored and removed by the next write.
 */
export async function writeCheckpoint(
  root: string,
  state: CheckpointState,
  options: WriteCheckpointOptions = {},
): Promise<string> {
  if (!Number.isInteger(state.step) || state.step < 0)
    throw new CheckpointError(`checkpoint step must be an integer >= 0, got ${state.step}`);
  const final = stepDir(root, state.step);
  const tmp = `${final}.tmp`;
  try {
    mkdirSync(root, { recursive: true });
    for (const e of readdirSync(root)) if (e.endsWith('.tmp')) rmSync(join(root, e), { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });

    if (options.writeModel) await options.writeModel(tmp);
    if (options.config) saveConfig(options.config, tmp);
    writeFileSync(join(tmp, STATE_FILE), JSON.stringify({ format: FORMAT, version: VERSION, ...state }, null, 1));
    if (options.metricsFile && existsSync(options.metricsFile)) {
      writeFileSync(join(tmp, METRICS_COPY), metricsUpTo(readFileSync(options.metricsFile, 'utf8'), state.step));
    }

    const files: ManifestFile[] = filesIn(tmp).map((path) => ({
      path,
      bytes: statSync(join(tmp, path)).size,
      sha256: sha256File(join(tmp, path)),
    }));
    for (const f of files) fsyncFile(join(tmp, f.path));
    const base = baseRecord(tmp);
    writeFileSync(
      join(tmp, MANIFEST_FILE),
      JSON.stringify({ format: FORMAT, version: VERSION, step: state.step, files, ...(base ? { base } : {}) }, null, 1),
    );
    fsyncFile(join(tmp, MANIFEST_FILE));
    fsyncFile(tmp);

    if (existsSync(final)) {
      const old = `${final}.old.tmp`; // a `.tmp` name, so a crash between the renames leaves nothing that looks complete
      renameSync(final, old);
      renameSync(tmp, final);
      rmSync(old, { recursive: true, force: true });
    } else renameSync(tmp, final);
    fsyncFile(root);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true }); // no partial step-N.tmp left behind
    throw fileSystemError(err, `write checkpoint step ${state.step}`, tmp);
  }
  if (options.keep !== undefined) pruneCheckpoints(root, options.keep);
  return final;
}

/**
 * The base model an adapter-only checkpoint `dir` names (a LoRA run's: src/model/checkpoint.ts), with each weight
 * file's size and SHA-256, so that a changed base is refused at load (verifyCheckpoint); undefined when `dir` holds its
 * own weights. The base is frozen: its files are hashed once per process (sha256BaseFile).
 */
function baseRecord(dir: string): ManifestBase | undefined {
  const found = baseWeightFiles(dir);
  if (found === null) return undefined;
  const files = found.names.map((path) => {
    const file = join(found.base, path);
    return { path, bytes: statSync(file).size, sha256: sha256BaseFile(file) };
  });
  return { dir: found.base, files };
}

/**
 * Every `step-N/` folder under `root` (a run's `checkpoints/`), complete or not, oldest first; `.tmp` folders are
 * skipped.
 */
export function checkpointDirs(root: string): CheckpointRef[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((name) => /^step-(\d+)$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ step: Number(m[1]), dir: join(root, m[0]) }))
    .sort((a, b) => a.step - b.step);
}

/** Complete checkpoints under `root`, oldest first. Temporary and partial ones are skipped. */
export function listCheckpoints(root: string): CheckpointRef[] {
  return checkpointDirs(root).filter((c) => isCompleteCheckpoint(c.dir));
}

/** The newest complete checkpoint under `root`, or undefined. */
export function latestCheckpoint(root: string): CheckpointRef | undefined {
  return listCheckpoints(root).pop();
}

/** Delete all but the newest `keep` complete checkpoints; returns the deleted directories. */
export function pruneCheckpoints(root: string, keep: number): string[] {
  const all = listCheckpoints(root);
  const drop = all.slice(0, Math.max(0, all.length - keep)).map((c) => c.dir);
  for (const dir of drop) rmSync(dir, { recursive: true, force: true });
  return drop;
}

/** Read the trainer state of a checkpoint, after verifying it is exactly its manifest (`verifyCheckpoint`). */
export function readCheckpoint(dir: string, opts: VerifyCheckpointOptions = {}): CheckpointState {
  verifyCheckpoint(dir, opts);
  const path = join(dir, STATE_FILE);
  let raw: CheckpointState & { format?: unknown; version?: unknown; rng?: unknown };
  try {
    raw = JSON.parse(readFileSync(path, 'utf8')) as typeof raw;
  } catch (err) {
    throw new CheckpointError(
      `${path} is not valid JSON (${(err as Error).message}); the checkpoint is damaged, use an earlier step-N directory.`,
    );
  }
  if (raw === null || typeof raw !== 'object' || raw.format !== FORMAT)
    throw new CheckpointError(`${path} is not a ragen-ts trainer state; use an earlier step-N directory.`);
  if (raw.version !== 1 && raw.version !== VERSION)
    throw new CheckpointError(
      `\`${dir}\`: checkpoint format version ${String(raw.version)}, this ragen-ts reads versions 1 and ${VERSION}.`,
    );
  if (!Number.isInteger(raw.step) || raw.step < 0 || typeof raw.data !== 'object' || raw.data === null) {
    throw new CheckpointError(
      `${path}: \`step\` must be an integer >= 0 and \`data\` an object (got step ${JSON.stringify(raw.step)}); the checkpoint is damaged, use an earlier step-N directory.`,
    );
  }
  // `rng` (always {}) was written by version 1; nothing reads it.
  const { format: _f, version: _v, rng: _r, ...state } = raw;
  return state;
}

/** The checkpoint's copy of the run's metrics (JSONL text; empty when none was saved). */
export function checkpointMetrics(dir: string): string {
  const f = join(dir, METRICS_COPY);
  return existsSync(f) ? readFileSync(f, 'utf8') : '';
}

/** JSONL lines whose `step` is at most `step` (lines without a step are kept). */
export function metricsUpTo(jsonl: string, step: number): string {
  const lines = jsonl.split('\n').filter((l) => l.trim() !== '');
  const kept = lines.filter((l) => {
    const s = (JSON.parse(l) as { step?: number }).step;
    return s === undefined || s <= step;
  });
  return kept.length ? `${kept.join('\n')}\n` : '';
}

// fsync a file or a directory (directories make the renames and new entries durable on Linux).
function fsyncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
