// safetensors read/write (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length,
// a JSON header {name: {dtype, shape, data_offsets}}, then raw little-endian data. We read F32/BF16/F16 into
// float32 and write F32; sharded checkpoints use `model.safetensors.index.json` ({metadata, weight_map}).
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointError } from '../util/index.js';

/** One named float32 array with its row-major shape. */
export interface WeightData {
  shape: number[];
  data: Float32Array;
}

/** Named weights, in insertion order (the order they are written). */
export type WeightMap = Map<string, WeightData>;

const SUPPORTED = ['F32', 'BF16', 'F16'] as const;
const BYTES: Record<string, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 };

/** Parse a safetensors buffer. `source` names the file in error messages. */
export function parseSafetensors(bytes: Uint8Array, source = '<buffer>'): { weights: WeightMap; metadata: Record<string, string> } {
  if (bytes.byteLength < 8) throw new CheckpointError(`${source}: truncated safetensors file (${bytes.byteLength} bytes, the 8-byte header length is missing)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = Number(view.getBigUint64(0, true));
  if (8 + headerLen > bytes.byteLength) {
    throw new CheckpointError(`${source}: truncated safetensors file (header says ${headerLen} bytes of JSON, file has ${bytes.byteLength - 8} after the length)`);
  }
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen))) as Record<string, unknown>;
  } catch (err) {
    throw new CheckpointError(`${source}: the safetensors header is not valid JSON (${(err as Error).message})`);
  }
  const dataStart = 8 + headerLen;
  const dataLen = bytes.byteLength - dataStart;
  const weights: WeightMap = new Map();
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = (entry ?? {}) as Record<string, string>;
      continue;
    }
    const { dtype, shape, data_offsets: offsets } = entry as { dtype: string; shape: number[]; data_offsets: [number, number] };
    if (!(dtype in BYTES)) throw new CheckpointError(`${source}: tensor \`${name}\` has unknown dtype ${dtype}`);
    if (!(SUPPORTED as readonly string[]).includes(dtype)) {
      throw new CheckpointError(`${source}: tensor \`${name}\` has dtype ${dtype}; supported: ${SUPPORTED.join(', ')} (convert the checkpoint to float32/bfloat16/float16)`);
    }
    const numel = shape.reduce((a, b) => a * b, 1);
    const [begin, end] = offsets;
    if (end - begin !== numel * BYTES[dtype]!) {
      throw new CheckpointError(`${source}: tensor \`${name}\` spans ${end - begin} bytes but shape [${shape}] of ${dtype} needs ${numel * BYTES[dtype]!}`);
    }
    if (end > dataLen) throw new CheckpointError(`${source}: truncated safetensors file (tensor \`${name}\` ends at byte ${end} of a ${dataLen}-byte data section)`);
    weights.set(name, { shape: [...shape], data: decode(bytes.subarray(dataStart + begin, dataStart + end), dtype, numel) });
  }
  return { weights, metadata };
}

function decode(raw: Uint8Array, dtype: string, numel: number): Float32Array {
  const out = new Float32Array(numel);
  if (dtype === 'F32') {
    new Uint8Array(out.buffer).set(raw); // copy: `raw` may be unaligned
    return out;
  }
  const u16 = new Uint16Array(numel);
  new Uint8Array(u16.buffer).set(raw);
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

/** Serialise weights as F32 safetensors (header padded to 8 bytes, tensors in map order). */
export function serializeSafetensors(weights: WeightMap, metadata: Record<string, string> = { format: 'pt' }): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const [name, w] of weights) {
    const numel = w.shape.reduce((a, b) => a * b, 1);
    if (numel !== w.data.length) throw new CheckpointError(`cannot save \`${name}\`: shape [${w.shape}] has ${numel} elements, data has ${w.data.length}`);
    header[name] = { dtype: 'F32', shape: w.shape, data_offsets: [offset, offset + numel * 4] };
    offset += numel * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((json.length + 8) % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.length;
  for (const w of weights.values()) {
    out.set(new Uint8Array(w.data.buffer, w.data.byteOffset, w.data.byteLength), at);
    at += w.data.byteLength;
  }
  return out;
}

/** Read one safetensors file. */
export async function readSafetensors(path: string): Promise<WeightMap> {
  if (!existsSync(path)) throw new CheckpointError(`safetensors file not found: ${path}`);
  return parseSafetensors(await readFile(path), path).weights;
}

/** Write one safetensors file (F32). */
export async function writeSafetensors(path: string, weights: WeightMap, metadata?: Record<string, string>): Promise<void> {
  await writeFile(path, serializeSafetensors(weights, metadata));
}

/**
 * Load the weights of a Hugging Face checkpoint directory: `model.safetensors`, or the shards listed
 * in `model.safetensors.index.json`.
 */
export async function loadWeights(dir: string, file = 'model.safetensors'): Promise<WeightMap> {
  const single = join(dir, file);
  const index = join(dir, `${file}.index.json`);
  if (existsSync(single)) return readSafetensors(single);
  if (!existsSync(index)) {
    throw new CheckpointError(`no weights in ${dir}: expected ${file} or ${file}.index.json (only safetensors checkpoints are supported; convert .bin/.pt with transformers' save_pretrained(safe_serialization=True))`);
  }
  const { weight_map: weightMap } = JSON.parse(await readFile(index, 'utf8')) as { weight_map?: Record<string, string> };
  if (!weightMap) throw new CheckpointError(`${index}: missing "weight_map"`);
  const out: WeightMap = new Map();
  for (const shard of new Set(Object.values(weightMap))) {
    const shardWeights = await readSafetensors(join(dir, shard));
    for (const [name, w] of shardWeights) out.set(name, w);
  }
  for (const name of Object.keys(weightMap)) {
    if (!out.has(name)) throw new CheckpointError(`${index} maps \`${name}\` to ${weightMap[name]}, but that shard does not hold it`);
  }
  return out;
}

/**
 * Save weights into `dir` as `model.safetensors`, or as shards `model-0000i-of-0000n.safetensors` plus
 * `model.safetensors.index.json` when they exceed `maxShardBytes`.
 */
export async function saveWeights(dir: string, weights: WeightMap, options: { maxShardBytes?: number; file?: string } = {}): Promise<string[]> {
  const file = options.file ?? 'model.safetensors';
  const maxShard = options.maxShardBytes ?? 2 ** 31;
  await mkdir(dir, { recursive: true });
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
  if (shards.length === 1) {
    await writeSafetensors(join(dir, file), weights);
    return [file];
  }
  const stem = file.replace(/\.safetensors$/, '');
  const pad = (i: number): string => String(i).padStart(5, '0');
  const names = shards.map((_, i) => `${stem}-${pad(i + 1)}-of-${pad(shards.length)}.safetensors`);
  const weightMap: Record<string, string> = {};
  for (let i = 0; i < shards.length; i++) {
    await writeSafetensors(join(dir, names[i]!), shards[i]!);
    for (const name of shards[i]!.keys()) weightMap[name] = names[i]!;
  }
  await writeFile(join(dir, `${file}.index.json`), JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2) + '\n');
  return [...names, `${file}.index.json`];
}

/** `weights.get(name)` checked against the shape the model expects; errors name the tensor and both shapes. */
export function expectWeight(weights: WeightMap, name: string, shape: readonly number[], source = 'checkpoint'): WeightData {
  const w = weights.get(name);
  if (!w) {
    const near = [...weights.keys()].filter((k) => k.endsWith(name.split('.').slice(-2).join('.'))).slice(0, 3);
    throw new CheckpointError(`${source}: missing tensor \`${name}\` (shape [${shape}])${near.length ? `; similar names present: ${near.join(', ')}` : ''}`);
  }
  if (w.shape.length !== shape.length || w.shape.some((d, i) => d !== shape[i])) {
    throw new CheckpointError(`${source}: tensor \`${name}\` has shape [${w.shape}], the model expects [${shape}] (does config.json match the weights?)`);
  }
  const bad = w.data.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) {
    throw new CheckpointError(`${source}: tensor \`${name}\` holds ${w.data[bad]} at element ${bad}; a model with non-finite weights cannot train (a diverged run saves such checkpoints): use an earlier checkpoint.`);
  }
  return w;
}

/**
 * Throw when `weights` holds tensors the model did not take (`used`): a config.json that says 3 layers beside weights
 * of 4 is a mismatch, not something to ignore. `ignore` names tensors that are known to be harmless extras.
 */
export function rejectUnexpected(weights: WeightMap, used: ReadonlySet<string>, source: string, ignore: (name: string) => boolean = () => false): void {
  const extra = [...weights.keys()].filter((k) => !used.has(k) && !ignore(k));
  if (extra.length > 0) {
    const list = extra.slice(0, 4).join(', ') + (extra.length > 4 ? `, ... (${extra.length} in all)` : '');
    throw new CheckpointError(`${source}: tensors the model does not use: ${list}; does config.json (layers, heads, tied embeddings) match the weights?`);
  }
}
