// safetensors read/write (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length,
// a JSON header {name: {dtype, shape, data_offsets}}, then raw little-endian data. We read F32/BF16/F16 into
// float32 and write F32, by parts (header, then tensor by tensor: files of any size); sharded checkpoints use
// `model.safetensors.index.json` ({metadata: {total_size}, weight_map}). Headers are checked as network input.
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { CheckpointError, fileSystemError } from '../util/index.js';

/** One named float32 array with its row-major shape. */
export interface WeightData {
  shape: number[];
  data: Float32Array;
}

/** Named weights, in insertion order (the order they are written). */
export type WeightMap = Map<string, WeightData>;

const SUPPORTED = ['F32', 'BF16', 'F16'] as const;
const BYTES: Record<string, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
};

/** One tensor's entry in a safetensors header, checked against the data section's size. */
interface HeaderEntry {
  name: string;
  dtype: string;
  shape: number[];
  numel: number;
  /** Byte range within the data section. */
  begin: number;
  end: number;
}

/** The largest header we read, as the reference implementation (safetensors' MAX_HEADER_SIZE, 100 MB). */
export const MAX_HEADER_BYTES = 100_000_000;

// A header is network input: every field typed before any is used (a `null` entry, a string shape, a missing
// data_offsets are each one sentence naming the file, the tensor and the field, never a TypeError).
const count = z.int().min(0);
const EntrySchema = z.object({ dtype: z.string(), shape: z.array(count), data_offsets: z.tuple([count, count]) });
const MetadataSchema = z.record(z.string(), z.string()).nullable();
const EXPECTED: Record<string, string> = {
  dtype: `a dtype name (${Object.keys(BYTES).join(', ')})`,
  shape: 'an array of non-negative integers',
  data_offsets: 'a pair [begin, end] of non-negative integers',
};

function show(v: unknown): string {
  if (v === undefined) return '(missing)';
  const s = JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** The entry of tensor `name`, typed; a CheckpointError naming the file, the tensor and the field otherwise. */
function typedEntry(name: string, entry: unknown, source: string): z.infer<typeof EntrySchema> {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new CheckpointError(
      `${source}: tensor \`${name}\` has header entry ${show(entry)}; expected an object {dtype, shape, data_offsets}: the file is damaged or not a safetensors file.`,
    );
  }
  const r = EntrySchema.safeParse(entry);
  if (r.success) return r.data;
  const field = String(r.error.issues[0]!.path[0]);
  const got = (entry as Record<string, unknown>)[field];
  throw new CheckpointError(
    `${source}: tensor \`${name}\` has ${got === undefined ? `no \`${field}\`` : `\`${field}\` = ${show(got)}`}; expected ${EXPECTED[field]}: the file is damaged or not a safetensors file.`,
  );
}

/**
 * Check a parsed header against a data section of `dataLen` bytes, as the reference implementation does: every field
 * typed, known dtypes, spans that match the shapes, and the tensors tiling the data section exactly (sorted by offset,
 * each begins where the previous ended, the last ends at `dataLen`): no overlap, no gap, nothing past the end (a
 * truncated file) and no bytes after the last tensor (a file with a tail of something else).
 */
function checkHeader(
  header: unknown,
  dataLen: number,
  source: string,
): { entries: HeaderEntry[]; metadata: Record<string, string> } {
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    throw new CheckpointError(
      `${source}: the safetensors header is ${show(header)}, not a JSON object of tensors: the file is damaged or not a safetensors file.`,
    );
  }
  const entries: HeaderEntry[] = [];
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      const m = MetadataSchema.safeParse(entry);
      if (!m.success)
        throw new CheckpointError(
          `${source}: the header's \`__metadata__\` = ${show(entry)} is not an object of strings to strings: the file is damaged or not a safetensors file.`,
        );
      metadata = m.data ?? {};
      continue;
    }
    const {
      dtype,
      shape,
      data_offsets: [begin, end],
    } = typedEntry(name, entry, source);
    if (!(dtype in BYTES))
      throw new CheckpointError(
        `${source}: tensor \`${name}\` has unknown dtype ${show(dtype)}; expected ${EXPECTED['dtype']}.`,
      );
    if (!(SUPPORTED as readonly string[]).includes(dtype)) {
      throw new CheckpointError(
        `${source}: tensor \`${name}\` has dtype ${dtype}; supported: ${SUPPORTED.join(', ')} (convert the checkpoint to float32/bfloat16/float16)`,
      );
    }
    const numel = shape.reduce((a, b) => a * b, 1);
    const need = numel * BYTES[dtype]!;
    if (!Number.isSafeInteger(need) || end - begin !== need) {
      throw new CheckpointError(
        `${source}: tensor \`${name}\` spans ${end - begin} bytes but shape [${shape}] of ${dtype} needs ${need} (data_offsets [${begin}, ${end}])`,
      );
    }
    if (end > dataLen)
      throw new CheckpointError(
        `${source}: truncated safetensors file (tensor \`${name}\` ends at byte ${end} of a ${dataLen}-byte data section)`,
      );
    entries.push({ name, dtype, shape: [...shape], numel, begin, end });
  }
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  let prev: HeaderEntry | undefined;
  for (const e of sorted) {
    if (e.begin < at) {
      throw new CheckpointError(
        `${source}: tensor \`${e.name}\`'s data_offsets [${e.begin}, ${e.end}] overlap tensor \`${prev!.name}\`'s [${prev!.begin}, ${prev!.end}]: the file is damaged or was edited; use an earlier checkpoint or the original file.`,
      );
    }
    if (e.begin > at) {
      throw new CheckpointError(
        `${source}: bytes [${at}, ${e.begin}) of the data section belong to no tensor (tensor \`${e.name}\`'s data_offsets begin at ${e.begin}): the file is damaged or was edited; use an earlier checkpoint or the original file.`,
      );
    }
    at = e.end;
    prev = e;
  }
  if (at < dataLen) {
    throw new CheckpointError(
      `${source}: ${dataLen - at} trailing bytes after the last tensor (its tensors end at byte ${at} of a ${dataLen}-byte data section); the file is damaged or not one safetensors file: use an earlier checkpoint.`,
    );
  }
  return { entries, metadata };
}

/** The 8-byte header length, checked against the file's size and a sane bound. */
function checkHeaderLength(headerLen: number, size: number, source: string): void {
  if (headerLen > MAX_HEADER_BYTES) {
    throw new CheckpointError(
      `${source}: the safetensors header length says ${headerLen} bytes, over the ${MAX_HEADER_BYTES}-byte limit of the format: the file is damaged or not a safetensors file.`,
    );
  }
  if (8 + headerLen > size) {
    throw new CheckpointError(
      `${source}: truncated safetensors file (header says ${headerLen} bytes of JSON, file has ${size - 8} after the length)`,
    );
  }
}

function parseHeaderJson(bytes: Uint8Array, source: string): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as unknown;
  } catch (err) {
    throw new CheckpointError(`${source}: the safetensors header is not valid JSON (${(err as Error).message})`);
  }
}

/** Parse a safetensors buffer held in memory (files go through `readSafetensorsFile`). `source` names it in errors. */
export function parseSafetensors(
  bytes: Uint8Array,
  source = '<buffer>',
): { weights: WeightMap; metadata: Record<string, string> } {
  if (bytes.byteLength < 8)
    throw new CheckpointError(
      `${source}: truncated safetensors file (${bytes.byteLength} bytes, the 8-byte header length is missing)`,
    );
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = Number(view.getBigUint64(0, true));
  checkHeaderLength(headerLen, bytes.byteLength, source);
  const dataStart = 8 + headerLen;
  const { entries, metadata } = checkHeader(
    parseHeaderJson(bytes.subarray(8, dataStart), source),
    bytes.byteLength - dataStart,
    source,
  );
  const weights: WeightMap = new Map();
  for (const e of entries) {
    const raw = new Uint8Array(e.end - e.begin);
    raw.set(bytes.subarray(dataStart + e.begin, dataStart + e.end)); // a fresh, aligned copy
    weights.set(e.name, { shape: e.shape, data: decode(raw, e.dtype, e.numel) });
  }
  return { weights, metadata };
}

/** `raw` (a fresh buffer, offset 0) as float32; F32 is viewed in place, not copied. */
function decode(raw: Uint8Array, dtype: string, numel: number): Float32Array {
  if (dtype === 'F32') return new Float32Array(raw.buffer, raw.byteOffset, numel);
  const out = new Float32Array(numel);
  const u16 = new Uint16Array(raw.buffer, raw.byteOffset, numel);
  if (dtype === 'BF16') {
    const u32 = new Uint32Array(out.buffer);
    for (let i = 0; i < numel; i++) u32[i] = u16[i]! << 16;
    return out;
  }
  for (let i = 0; i < numel; i++) out[i] = halfToFloat(u16[i]!);
  return out;
}

/** IEEE 754 binary16 -> number. */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/**
 * The 8-byte length and the JSON header (padded to 8 bytes) of weights saved as F32 in map order, and the data size.
 */
function headerBytes(weights: WeightMap, metadata: Record<string, string>): { head: Uint8Array; dataBytes: number } {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const [name, w] of weights) {
    const numel = w.shape.reduce((a, b) => a * b, 1);
    if (numel !== w.data.length)
      throw new CheckpointError(
        `cannot save \`${name}\`: shape [${w.shape}] has ${numel} elements, data has ${w.data.length}`,
      );
    header[name] = { dtype: 'F32', shape: w.shape, data_offsets: [offset, offset + numel * 4] };
    offset += numel * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((json.length + 8) % 8)) % 8);
  const text = new TextEncoder().encode(json);
  const head = new Uint8Array(8 + text.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(text.length), true);
  head.set(text, 8);
  return { head, dataBytes: offset };
}

/**
 * Serialise weights as F32 safetensors into one buffer (for small in-memory uses; files go through `writeSafetensors`).
 */
export function serializeSafetensors(
  weights: WeightMap,
  metadata: Record<string, string> = { format: 'pt' },
): Uint8Array {
  const { head, dataBytes } = headerBytes(weights, metadata);
  const out = new Uint8Array(head.length + dataBytes);
  out.set(head, 0);
  let at = head.length;
  for (const w of weights.values()) {
    out.set(new Uint8Array(w.data.buffer, w.data.byteOffset, w.data.byteLength), at);
    at += w.data.byteLength;
  }
  return out;
}

// Node reads and writes at most 2 GiB - 1 per call; pieces of 256 MiB keep every call well inside that.
const PIECE = 256 * 2 ** 20;

async function readAt(fh: FileHandle, into: Uint8Array, position: number, path: string): Promise<void> {
  for (let done = 0; done < into.byteLength;) {
    const n = Math.min(PIECE, into.byteLength - done);
    const { bytesRead } = await fh.read(into, done, n, position + done);
    if (bytesRead === 0)
      throw new CheckpointError(`${path}: truncated safetensors file (ended at byte ${position + done} while reading)`);
    done += bytesRead;
  }
}

// Sequential writes in pieces; a short write (allowed by POSIX) continues where it stopped.
async function writeAll(fh: FileHandle, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;)
    at += (await fh.write(bytes, at, Math.min(PIECE, bytes.length - at))).bytesWritten;
}

/**
 * A consumer of tensors as they are read (e.g. straight into bf16 native memory): true when it took the tensor, which
 * then stays out of the returned map, so a large checkpoint is never held whole as float32.
 */
export type TakeWeight = (name: string, weight: { shape: number[]; data: Float32Array }) => boolean;

/**
 * Read one safetensors file by parts: the 8-byte length, the header, then each tensor at its offset, so files of any
 * size load (Node refuses whole-file reads past 2 GiB). `only` picks the tensors to read; the header is checked whole.
 */
export async function readSafetensorsFile(
  path: string,
  only?: (name: string) => boolean,
  take?: TakeWeight,
): Promise<{ weights: WeightMap; metadata: Record<string, string> }> {
  if (!existsSync(path)) throw new CheckpointError(`safetensors file not found: ${path}`);
  const fh = await withFileErrorsAsync('read safetensors', path, () => open(path, 'r'));
  try {
    const size = (await fh.stat()).size;
    if (size < 8)
      throw new CheckpointError(
        `${path}: truncated safetensors file (${size} bytes, the 8-byte header length is missing)`,
      );
    const len = new Uint8Array(8);
    await readAt(fh, len, 0, path);
    const headerLen = Number(new DataView(len.buffer).getBigUint64(0, true));
    checkHeaderLength(headerLen, size, path);
    const json = new Uint8Array(headerLen);
    await readAt(fh, json, 8, path);
    const dataStart = 8 + headerLen;
    const { entries, metadata } = checkHeader(parseHeaderJson(json, path), size - dataStart, path);
    const weights: WeightMap = new Map();
    for (const e of entries) {
      if (only && !only(e.name)) continue;
      const raw = new Uint8Array(e.end - e.begin);
      await readAt(fh, raw, dataStart + e.begin, path);
      const w = { shape: e.shape, data: decode(raw, e.dtype, e.numel) };
      if (!take?.(e.name, w)) weights.set(e.name, w);
    }
    return { weights, metadata };
  } catch (err) {
    throw fileSystemError(err, 'read safetensors', path);
  } finally {
    await fh.close();
  }
}

/** Read one safetensors file (by parts; see `readSafetensorsFile`). */
export async function readSafetensors(path: string): Promise<WeightMap> {
  return (await readSafetensorsFile(path)).weights;
}

/** Write one safetensors file (F32): the header, then each tensor in pieces; no buffer of the whole file is made. */
export async function writeSafetensors(
  path: string,
  weights: WeightMap,
  metadata: Record<string, string> = { format: 'pt' },
): Promise<void> {
  const { head } = headerBytes(weights, metadata);
  const fh = await withFileErrorsAsync('write safetensors', path, () => open(path, 'w'));
  try {
    await writeAll(fh, head);
    for (const w of weights.values())
      await writeAll(fh, new Uint8Array(w.data.buffer, w.data.byteOffset, w.data.byteLength));
  } catch (err) {
    throw fileSystemError(err, 'write safetensors', path);
  } finally {
    await fh.close();
  }
}

async function withFileErrorsAsync<T>(action: string, path: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw fileSystemError(err, action, path);
  }
}

/** Default shard size of `saveWeights`: well under 2 GiB, so that tools that read whole files still read ours. */
export const DEFAULT_MAX_SHARD_BYTES = 2 ** 30;

/**
 * Load a Hugging Face weights file with its metadata: `dir/<file>`, or the shards listed in `dir/<file>.index.json`
 * (metadata from the first shard; `saveWeights` writes the same metadata into every shard).
 */
export async function loadWeightFiles(
  dir: string,
  file = 'model.safetensors',
  take?: TakeWeight,
): Promise<{ weights: WeightMap; metadata: Record<string, string>; path: string }> {
  const single = join(dir, file);
  const index = join(dir, `${file}.index.json`);
  if (existsSync(single)) return { ...(await readSafetensorsFile(single, undefined, take)), path: single };
  if (!existsSync(index)) {
    throw new CheckpointError(
      `no weights in ${dir}: expected ${file} or ${file}.index.json (only safetensors checkpoints are supported; convert .bin/.pt with transformers' save_pretrained(safe_serialization=True))`,
    );
  }
  let weightMap: Record<string, string> | undefined;
  try {
    weightMap = (JSON.parse(await readFile(index, 'utf8')) as { weight_map?: Record<string, string> }).weight_map;
  } catch (err) {
    throw err instanceof SyntaxError
      ? new CheckpointError(`${index} is not valid JSON (${err.message}); the checkpoint is damaged.`)
      : fileSystemError(err, 'read the weights index', index);
  }
  if (!weightMap) throw new CheckpointError(`${index}: missing "weight_map"`);
  const out: WeightMap = new Map();
  let metadata: Record<string, string> | undefined;
  const taken = new Set<string>();
  const record: TakeWeight | undefined = take && ((name, w) => take(name, w) && (taken.add(name), true));
  for (const shard of new Set(Object.values(weightMap))) {
    const read = await readSafetensorsFile(join(dir, shard), undefined, record);
    metadata ??= read.metadata;
    for (const [name, w] of read.weights) out.set(name, w);
  }
  for (const name of Object.keys(weightMap)) {
    if (!out.has(name) && !taken.has(name))
      throw new CheckpointError(`${index} maps \`${name}\` to ${weightMap[name]}, but that shard does not hold it`);
  }
  return { weights: out, metadata: metadata ?? {}, path: index };
}

/** Load the weights of a Hugging Face checkpoint directory: `model.safetensors`, or the shards of its index. */
export async function loadWeights(dir: string, file = 'model.safetensors', take?: TakeWeight): Promise<WeightMap> {
  return (await loadWeightFiles(dir, file, take)).weights;
}

/** Options of `saveWeights`. */
export interface SaveWeightsOptions {
  /** Start a new shard past this many bytes of tensor data. @default DEFAULT_MAX_SHARD_BYTES (1 GiB) */
  maxShardBytes?: number;
  /** The file name (shards are named from its stem). @default 'model.safetensors' */
  file?: string;
  /** String metadata written into every file's header. @default {format: 'pt'} */
  metadata?: Record<string, string>;
}

/**
 * Save weights into `dir` as `model.safetensors`, or as shards `model-0000i-of-0000n.safetensors` plus
 * `model.safetensors.index.json` (`metadata.total_size`, `weight_map`) when they exceed `maxShardBytes`.
 * Returns the file names written.
 */
export async function saveWeights(
  dir: string,
  weights: WeightMap,
  options: SaveWeightsOptions = {},
): Promise<string[]> {
  const file = options.file ?? 'model.safetensors';
  const maxShard = options.maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES;
  if (!(maxShard > 0))
    throw new CheckpointError(
      `maxShardBytes must be > 0, got ${maxShard}; pass a shard size in bytes such as ${DEFAULT_MAX_SHARD_BYTES}.`,
    );
  await withFileErrorsAsync('create the weights folder', dir, () => mkdir(dir, { recursive: true }));
  const shards: WeightMap[] = [new Map()];
  let size = 0;
  let total = 0;
  for (const [name, w] of weights) {
    const bytes = w.data.length * 4;
    if (size > 0 && size + bytes > maxShard) {
      shards.push(new Map());
      size = 0;
    }
    shards[shards.length - 1]!.set(name, w);
    size += bytes;
    total += bytes;
  }
  const index = join(dir, `${file}.index.json`);
  if (shards.length === 1) {
    await writeSafetensors(join(dir, file), weights, options.metadata);
    await rm(index, { force: true }); // an older sharded save in the same folder must not be mistaken for this one
    return [file];
  }
  await rm(join(dir, file), { force: true }); // loaders prefer the single file: an older one would shadow the shards
  const stem = file.replace(/\.safetensors$/, '');
  const pad = (i: number): string => String(i).padStart(5, '0');
  const names = shards.map((_, i) => `${stem}-${pad(i + 1)}-of-${pad(shards.length)}.safetensors`);
  const weightMap: Record<string, string> = {};
  for (let i = 0; i < shards.length; i++) {
    await writeSafetensors(join(dir, names[i]!), shards[i]!, options.metadata);
    for (const name of shards[i]!.keys()) weightMap[name] = names[i]!;
  }
  await withFileErrorsAsync('write the weights index', index, () =>
    writeFile(index, JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2) + '\n'),
  );
  return [...names, `${file}.index.json`];
}

/** `weights.get(name)` checked against the shape the model expects; errors name the tensor and both shapes. */
export function expectWeight(
  weights: WeightMap,
  name: string,
  shape: readonly number[],
  source = 'checkpoint',
): WeightData {
  const w = weights.get(name);
  if (!w) {
    const near = [...weights.keys()].filter((k) => k.endsWith(name.split('.').slice(-2).join('.'))).slice(0, 3);
    throw new CheckpointError(
      `${source}: missing tensor \`${name}\` (shape [${shape}])${near.length ? `; similar names present: ${near.join(', ')}` : ''}`,
    );
  }
  if (w.shape.length !== shape.length || w.shape.some((d, i) => d !== shape[i])) {
    throw new CheckpointError(
      `${source}: tensor \`${name}\` has shape [${w.shape}], the model expects [${shape}] (does config.json match the weights?)`,
    );
  }
  const bad = w.data.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) {
    throw new CheckpointError(
      `${source}: tensor \`${name}\` holds ${w.data[bad]} at element ${bad}; a model with non-finite weights cannot train (a diverged run saves such checkpoints): use an earlier checkpoint.`,
    );
  }
  return w;
}

/**
 * Throw when `weights` holds tensors the model did not take (`used`): a config.json that says 3 layers beside weights
 * of 4 is a mismatch, not something to ignore. `ignore` names tensors that are known to be harmless extras.
 */
export function rejectUnexpected(
  weights: WeightMap,
  used: ReadonlySet<string>,
  source: string,
  ignore: (name: string) => boolean = () => false,
): void {
  const extra = [...weights.keys()].filter((k) => !used.has(k) && !ignore(k));
  if (extra.length > 0) {
    const list = extra.slice(0, 4).join(', ') + (extra.length > 4 ? `, ... (${extra.length} in all)` : '');
    throw new CheckpointError(
      `${source}: tensors the model does not use: ${list}; does config.json (layers, heads, tied embeddings) match the weights?`,
    );
  }
}
