// A checkpoint's manifest (checkpoint.json: every file of a run's checkpoints/step-N/ with its size and SHA-256) and
// the one check every reader of a run applies before it reads anything (--resume, eval --run, serve, probe-grads, the
// dashboard's play): the folder holds exactly the files its manifest lists, each with its recorded content, and the
// base model an adapter-only (LoRA) checkpoint names is still the one it was trained on.
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { isAbsolute, join, posix } from 'node:path';
import { CheckpointError, withFileErrors } from '../util/index.js';

/** The manifest written last into a checkpoint: its presence (with every listed file intact) marks it complete. */
export const MANIFEST_FILE = 'checkpoint.json';
/** The manifest's (and the trainer state's) `format`. */
export const CHECKPOINT_FORMAT = 'ragen-ts-checkpoint';
/** The version written; version 1 recorded sizes only. */
export const CHECKPOINT_VERSION = 2;
/** The command-line flag that accepts a manifest without digests (`allowUnverified`). */
export const ALLOW_UNVERIFIED_FLAG = '--allow-unverified-checkpoint';

/** One file of a checkpoint's manifest (sha256 since manifest version 2; version 1 recorded sizes only). */
export interface ManifestFile {
  /** Relative to the checkpoint directory, `/`-separated. */
  path: string;
  bytes: number;
  sha256?: string;
}

/**
 * The base model of an adapter-only checkpoint (its adapter names a directory outside it): the weight files it reads
 * there, each with its size and SHA-256 when the checkpoint was written.
 */
export interface ManifestBase {
  /** Absolute path of the base model directory. */
  dir: string;
  /** Paths relative to `dir`, `/`-separated; sha256 always set. */
  files: ManifestFile[];
}

/** A checkpoint's checkpoint.json, read and checked for shape. */
export interface CheckpointManifest {
  step: number;
  files: ManifestFile[];
  /** The base model an adapter-only checkpoint reads (absent when the checkpoint holds its own weights). */
  base?: ManifestBase;
}

/** Options of `verifyCheckpoint`. */
export interface VerifyCheckpointOptions {
  /**
   * Accept files the manifest records without a SHA-256 (the version-1 format), checked by size only
   * (`--allow-unverified-checkpoint`). @default false
   */
  allowUnverified?: boolean;
  /** Told (one line) when files were checked by size only. @default a line on stderr */
  warn?: (line: string) => void;
}

/** What `verifyCheckpoint` found. */
export interface VerifiedCheckpoint extends CheckpointManifest {
  /** Listed files without a digest, checked by size only (only ever non-empty with `allowUnverified`). */
  sizeOnly: string[];
}

/** A manifest without digests, refused without `allowUnverified` (not damage: an earlier step is no way out). */
export class UnverifiedCheckpointError extends CheckpointError {}

/**
 * The base model an adapter-only checkpoint names is not the one it was trained on (a file missing or changed): not
 * damage of the checkpoint, and every earlier step of the run names the same base.
 */
export class BaseModelChangedError extends CheckpointError {}

const DAMAGED = 'use an earlier step-N directory, or delete this one';

/**
 * A checkpoint that is not what its manifest says (a file missing, changed, unlisted; the manifest missing or not
 * one): `problem` says what, `fix` what to do. A reader that picked the checkpoint as a run's newest replaces `fix`
 * with the ways out it knows (src/train/checkpoint-read.ts `openNewest`).
 */
export class DamagedCheckpointError extends CheckpointError {
  /** `fix` undefined: the checkpoint is damaged, and the way out is an earlier step or deleting it. */
  constructor(
    readonly dir: string,
    readonly problem: string,
    readonly fix?: string,
  ) {
    super(`checkpoint \`${dir}\`: ${problem}; ${fix ?? DAMAGED}.`);
  }
}

/** Read `dir`'s checkpoint.json; a CheckpointError naming the file when it is missing or not a manifest. */
export function readManifest(dir: string): CheckpointManifest {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path))
    throw new DamagedCheckpointError(
      dir,
      `its ${MANIFEST_FILE} is missing, so it is not a complete checkpoint (it was not finished, or was edited by hand)`,
    );
  let m: { format?: unknown; step?: unknown; files?: unknown; base?: unknown };
  try {
    m = JSON.parse(withFileErrors('read the checkpoint manifest', path, () => readFileSync(path, 'utf8'))) as typeof m;
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    throw new DamagedCheckpointError(dir, `its ${MANIFEST_FILE} is not valid JSON (${err.message})`);
  }
  if (m === null || typeof m !== 'object' || m.format !== CHECKPOINT_FORMAT || !Array.isArray(m.files)) {
    throw new DamagedCheckpointError(
      dir,
      `its ${MANIFEST_FILE} is not a ragen-ts checkpoint manifest (format ${JSON.stringify(m?.format)})`,
    );
  }
  const files = manifestFiles(dir, m.files, 'files');
  if (m.base === undefined) return { step: Number(m.step), files };
  const b = (m.base ?? {}) as { dir?: unknown; files?: unknown };
  if (typeof b.dir !== 'string' || !isAbsolute(b.dir) || !Array.isArray(b.files))
    throw new DamagedCheckpointError(
      dir,
      `its ${MANIFEST_FILE}'s base is not {dir: an absolute path, files: [...]} (dir ${JSON.stringify(b.dir)})`,
    );
  const baseFiles = manifestFiles(dir, b.files, 'base.files');
  if (baseFiles.some((f) => f.sha256 === undefined))
    throw new DamagedCheckpointError(dir, `its ${MANIFEST_FILE}'s base.files record a file without its SHA-256`);
  return { step: Number(m.step), files, base: { dir: b.dir, files: baseFiles } };
}

/** The checked entries of a manifest's file list (`key`: where it sits, for the error). */
function manifestFiles(dir: string, list: unknown[], key: string): ManifestFile[] {
  const seen = new Set<string>();
  return list.map((f: unknown, i) => {
    const e = (f ?? {}) as Partial<ManifestFile>;
    const bad = (what: string) => new DamagedCheckpointError(dir, `its ${MANIFEST_FILE}'s ${key}[${i}] ${what}`);
    const p = e.path;
    if (
      typeof p !== 'string' ||
      p === '' ||
      isAbsolute(p) ||
      p.includes('\\') ||
      posix.normalize(p) !== p ||
      p.startsWith('../') ||
      p === MANIFEST_FILE
    ) {
      throw bad(`has path ${JSON.stringify(p)}, not a file inside the checkpoint`);
    }
    if (seen.has(p)) throw bad(`lists \`${p}\` a second time`);
    seen.add(p);
    if (!Number.isSafeInteger(e.bytes) || e.bytes! < 0)
      throw bad(`(\`${p}\`) has bytes ${JSON.stringify(e.bytes)}, not an integer >= 0`);
    if (e.sha256 !== undefined && !(typeof e.sha256 === 'string' && /^[0-9a-f]{64}$/.test(e.sha256)))
      throw bad(`(\`${p}\`) has sha256 ${JSON.stringify(e.sha256)}, not 64 hex digits`);
    return { path: p, bytes: e.bytes!, ...(e.sha256 !== undefined ? { sha256: e.sha256 } : {}) };
  });
}

/**
 * Check that `dir` is exactly its manifest: checkpoint.json is well-formed, records a SHA-256 for every file (unless
 * `allowUnverified`), the folder holds no file it does not list, and every listed file exists with its recorded size
 * and digest. Throws a CheckpointError naming the checkpoint, the first problem and the fix. Every reader of a run
 * calls this before it reads any other file of the checkpoint.
 */
export function verifyCheckpoint(dir: string, opts: VerifyCheckpointOptions = {}): VerifiedCheckpoint {
  const manifest = readManifest(dir);
  const sizeOnly = manifest.files.filter((f) => f.sha256 === undefined).map((f) => f.path);
  if (sizeOnly.length > 0 && !opts.allowUnverified) {
    throw new UnverifiedCheckpointError(
      `checkpoint \`${dir}\`: its ${MANIFEST_FILE} records no SHA-256 for ${listed(sizeOnly)} (the version-1 format, sizes only), so a changed byte would go unnoticed; load it anyway, checked by size only, with ${ALLOW_UNVERIFIED_FLAG}.`,
    );
  }
  const names = new Set(manifest.files.map((f) => f.path));
  const unlisted = filesIn(dir).filter((p) => p !== MANIFEST_FILE && !names.has(p));
  if (unlisted.length > 0) {
    const them = unlisted.length > 1 ? 'them' : 'it';
    throw new DamagedCheckpointError(
      dir,
      `${listed(
        unlisted.map((p) => `\`${p}\``),
        ' are',
      )} not listed in its ${MANIFEST_FILE} (added after the checkpoint was written, ${them === 'it' ? 'it' : 'they'} would be loaded unverified)`,
      `move ${them} out of the checkpoint`,
    );
  }
  for (const f of manifest.files) {
    const path = join(dir, f.path);
    if (!existsSync(path)) throw new DamagedCheckpointError(dir, `${f.path} is missing (listed in ${MANIFEST_FILE})`);
    const st = statSync(path);
    if (!st.isFile())
      throw new DamagedCheckpointError(dir, `${f.path} is not a file (listed in ${MANIFEST_FILE} as one)`);
    if (st.size !== f.bytes)
      throw new DamagedCheckpointError(dir, `${f.path} has ${st.size} bytes, ${MANIFEST_FILE} records ${f.bytes}`);
    if (f.sha256 !== undefined && withFileErrors('verify the checkpoint', path, () => sha256File(path)) !== f.sha256) {
      throw new DamagedCheckpointError(
        dir,
        `${f.path} does not match its SHA-256 in ${MANIFEST_FILE} (its content changed)`,
      );
    }
  }
  if (manifest.base) verifyBase(dir, manifest.base);
  if (sizeOnly.length > 0) {
    const line = `warning: checkpoint \`${dir}\`: ${listed(sizeOnly)} checked by size only (no SHA-256 in its ${MANIFEST_FILE}; ${ALLOW_UNVERIFIED_FLAG}).`;
    (opts.warn ?? ((l: string) => process.stderr.write(`ragen: ${l}\n`)))(line);
  }
  return { ...manifest, sizeOnly };
}

/** Check that the base model `base` records is on disk as it was when the checkpoint `dir` was written. */
function verifyBase(dir: string, base: ManifestBase): void {
  const fix = `put the base model the adapter was trained on back at \`${base.dir}\`, or set adapter/adapter_config.json's base_model_name_or_path to where it is now`;
  for (const f of base.files) {
    const path = join(base.dir, f.path);
    const problem = (what: string) =>
      new BaseModelChangedError(
        `checkpoint \`${dir}\` holds LoRA adapters over the base model \`${base.dir}\`, and its ${f.path} ${what}; ${fix}.`,
      );
    if (!existsSync(path)) throw problem(`is missing (${MANIFEST_FILE} records ${f.bytes} bytes)`);
    const size = statSync(path).size;
    if (size !== f.bytes) throw problem(`has ${size} bytes, ${MANIFEST_FILE} records ${f.bytes}: it is not that base`);
    if (withFileErrors('verify the base model', path, () => sha256BaseFile(path)) !== f.sha256)
      throw problem(
        `does not match its SHA-256 in ${MANIFEST_FILE}: the base changed since the checkpoint was written`,
      );
  }
}

// A base model's files are frozen and each checkpoint of a run names them: hashed once per process per (path, size,
// modification time).
const baseHashes = new Map<string, string>();

/** SHA-256 of a base model's weight file, cached by path, size and modification time (ns). */
export function sha256BaseFile(path: string): string {
  const st = statSync(path, { bigint: true });
  const key = `${path}\0${st.size}\0${st.mtimeNs}`;
  let h = baseHashes.get(key);
  if (h === undefined) baseHashes.set(key, (h = sha256File(path)));
  return h;
}

/**
 * Whether `dir` has a manifest whose every file exists with its recorded size (a cheap check; `verifyCheckpoint` reads
 * content).
 */
export function isCompleteCheckpoint(dir: string): boolean {
  try {
    return readManifest(dir).files.every((f) => statSync(join(dir, f.path)).size === f.bytes);
  } catch {
    return false; // no manifest, unreadable, or a listed file missing: incomplete by definition
  }
}

/** Every file under `dir` (anything that is not a folder: links and pipes too), relative and `/`-separated. */
export function filesIn(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    return e.isDirectory() ? filesIn(dir, rel) : [rel];
  });
}

/** SHA-256 of a file read in 4 MiB pieces: checkpoints hold files of any size (Node reads no whole file past 2 GiB). */
export function sha256File(path: string): string {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(4 * 2 ** 20);
  const fd = openSync(path, 'r');
  try {
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0;) hash.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/** `a`, `a and b`, `a, b and 3 more`; `verb` is added when there are several (" are" for "x is"/"x and y are"). */
function listed(items: string[], verb = ''): string {
  const single = verb === ' are' ? ' is' : '';
  if (items.length === 1) return `${items[0]}${single}`;
  const shown = items.slice(0, 3);
  const more = items.length - shown.length;
  return `${shown.slice(0, -1).join(', ')}${more > 0 ? `, ${shown.at(-1)} and ${more} more` : ` and ${shown.at(-1)}`}${verb}`;
}
