// Checkpoint directories written atomically (step-N.tmp/, fsync, rename to step-N/), with trainer state for an exact
// resume: data position, trainer bookkeeping, metrics so far. Model weights and optimizer state are written into
// the same directory by the engine (Hugging Face layout, its own optimizer/ folder) through `writeModel`.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, relative } from 'node:path';
import { CheckpointError, fileSystemError, withFileErrors } from '../util/index.js';
import { saveConfig, type RagenConfig } from '../config/index.js';

/** The manifest written last into a checkpoint: its presence (with every listed file intact) marks it complete. */
export const MANIFEST_FILE = 'checkpoint.json';
/** Trainer state: step, data position, free-form trainer bookkeeping. */
export const STATE_FILE = 'trainer-state.json';
/** Metrics of the run up to the checkpoint's step (a copy of metrics.jsonl). */
export const METRICS_COPY = 'metrics.jsonl';
const FORMAT = 'ragen-ts-checkpoint';
const VERSION = 2;

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
export async function writeCheckpoint(root: string, state: CheckpointState, options: WriteCheckpointOptions = {}): Promise<string> {
  if (!Number.isInteger(state.step) || state.step < 0) throw new CheckpointError(`checkpoint step must be an integer >= 0, got ${state.step}`);
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

    const files: ManifestFile[] = listFiles(tmp).map((path) => ({ path, bytes: statSync(join(tmp, path)).size, sha256: sha256File(join(tmp, path)) }));
    for (const f of files) fsyncFile(join(tmp, f.path));
    writeFileSync(join(tmp, MANIFEST_FILE), JSON.stringify({ format: FORMAT, version: VERSION, step: state.step, files }, null, 1));
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

/** One file of a checkpoint's manifest (sha256 since manifest version 2; version 1 recorded sizes only). */
interface ManifestFile {
  path: string;
  bytes: number;
  sha256?: string;
}

function readManifest(dir: string): { step: number; files: ManifestFile[] } {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path)) throw new CheckpointError(`\`${dir}\` is not a complete checkpoint: its ${MANIFEST_FILE} is missing (it was not finished, or was edited by hand); use an earlier step-N directory.`);
  let m: { format?: unknown; step?: unknown; files?: unknown };
  try {
    m = JSON.parse(readFileSync(path, 'utf8')) as typeof m;
  } catch (err) {
    throw new CheckpointError(`${path} is not valid JSON (${(err as Error).message}); the checkpoint is damaged, use an earlier step-N directory.`);
  }
  if (m.format !== FORMAT || !Array.isArray(m.files)) throw new CheckpointError(`${path} is not a ragen-ts checkpoint manifest (format ${JSON.stringify(m.format)}); use an earlier step-N directory.`);
  return { step: Number(m.step), files: m.files as ManifestFile[] };
}

/**
 * Check a checkpoint by content: every file its manifest lists exists with its recorded size and SHA-256. Throws a
 * CheckpointError naming the first file that does not (missing, truncated, changed) and what to do.
 */
export function verifyCheckpoint(dir: string): void {
  const { files } = readManifest(dir);
  for (const f of files) {
    const path = join(dir, f.path);
    const fix = 'the checkpoint is damaged; use an earlier step-N directory (or delete this one to resume from the one before)';
    if (!existsSync(path)) throw new CheckpointError(`checkpoint \`${dir}\`: ${f.path} is missing (listed in ${MANIFEST_FILE}); ${fix}.`);
    const bytes = statSync(path).size;
    if (bytes !== f.bytes) throw new CheckpointError(`checkpoint \`${dir}\`: ${f.path} has ${bytes} bytes, ${MANIFEST_FILE} records ${f.bytes}; ${fix}.`);
    if (f.sha256 !== undefined && withFileErrors('verify the checkpoint', path, () => sha256File(path)) !== f.sha256) throw new CheckpointError(`checkpoint \`${dir}\`: ${f.path} does not match its SHA-256 in ${MANIFEST_FILE} (its content changed); ${fix}.`);
  }
}

/** Whether `dir` has a manifest whose every file exists with its recorded size (a cheap check; `verifyCheckpoint` reads content). */
export function isCompleteCheckpoint(dir: string): boolean {
  try {
    return readManifest(dir).files.every((f) => statSync(join(dir, f.path)).size === f.bytes);
  } catch {
    return false; // no manifest, unreadable, or a listed file missing: incomplete by definition
  }
}

/** Every `step-N/` folder under `root` (a run's `checkpoints/`), complete or not, oldest first; `.tmp` folders are skipped. */
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

/** Read the trainer state of a checkpoint, after verifying every file by content (`verifyCheckpoint`). */
export function readCheckpoint(dir: string): CheckpointState {
  verifyCheckpoint(dir);
  const path = join(dir, STATE_FILE);
  let raw: CheckpointState & { format?: unknown; version?: unknown; rng?: unknown };
  try {
    raw = JSON.parse(readFileSync(path, 'utf8')) as typeof raw;
  } catch (err) {
    throw new CheckpointError(`${path} is not valid JSON (${(err as Error).message}); the checkpoint is damaged, use an earlier step-N directory.`);
  }
  if (raw === null || typeof raw !== 'object' || raw.format !== FORMAT) throw new CheckpointError(`${path} is not a ragen-ts trainer state; use an earlier step-N directory.`);
  if (raw.version !== 1 && raw.version !== VERSION) throw new CheckpointError(`\`${dir}\`: checkpoint format version ${String(raw.version)}, this ragen-ts reads versions 1 and ${VERSION}.`);
  if (!Number.isInteger(raw.step) || raw.step < 0 || typeof raw.data !== 'object' || raw.data === null) {
    throw new CheckpointError(`${path}: \`step\` must be an integer >= 0 and \`data\` an object (got step ${JSON.stringify(raw.step)}); the checkpoint is damaged, use an earlier step-N directory.`);
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

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(join(dir, e.name), base) : [relative(base, join(dir, e.name))],
  );
}

/** SHA-256 of a file read in 4 MiB pieces: checkpoints hold files of any size (Node reads no whole file past 2 GiB). */
export function sha256File(path: string): string {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(4 * 2 ** 20);
  const fd = openSync(path, 'r');
  try {
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) hash.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
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
