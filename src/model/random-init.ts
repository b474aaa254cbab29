// Random-weight Hugging Face checkpoints of any size, written tensor by tensor in chunks (a 7B model never sits in
// memory): weights N(0, 0.02) from a seeded Rng, norms 1, biases 0, as transformers' `_init_weights` does for Qwen.
import { open, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileSystemError, Rng } from '../util/index.js';
import type { ModelConfig } from './config.js';
import { weightShapes } from './transformer.js';

/** Element types `writeRandomWeights` writes (safetensors names). */
export type InitDtype = 'BF16' | 'F32';

export interface RandomWeightsOptions {
  /** Seed of the weights: same seed, same bytes. @default 0 */
  seed?: number;
  /** @default 'BF16' */
  dtype?: InitDtype;
  /**
   * Start a new shard before one would pass this many bytes of data (a larger single tensor gets a shard of its own).
   * @default 1 GiB
   */
  maxShardBytes?: number;
  /** Extra `__metadata__` entries of every shard (strings). */
  metadata?: Record<string, string>;
  /** Called after every chunk with the bytes written so far and the total. */
  onProgress?: (written: number, total: number) => void;
  /** The tensors to write, `[name, shape]` in file order, when not the decoder's of `config` (a VLM's: vl-shapes.ts). */
  shapes?: Map<string, number[]>;
}

/** Elements generated and written at a time. */
const CHUNK = 1 << 22;
const STD = 0.02;

/**
 * Write `config`'s weights into `dir` as `model.safetensors`, or as `model-0000k-of-0000n.safetensors` shards plus
 * `model.safetensors.index.json` (Hugging Face's layout) when they pass `maxShardBytes`. Returns the files written.
 */
export async function writeRandomWeights(
  dir: string,
  config: ModelConfig,
  opts: RandomWeightsOptions = {},
): Promise<{ files: string[]; parameters: number; bytes: number }> {
  const dtype = opts.dtype ?? 'BF16';
  const width = dtype === 'BF16' ? 2 : 4;
  const maxShard = opts.maxShardBytes ?? 2 ** 30;
  const shards = planShards(config, width, maxShard, opts.shapes);
  const parameters = shards.flat().reduce((a, t) => a + t.numel, 0);
  const total = parameters * width;
  const pad = (i: number): string => String(i).padStart(5, '0');
  const names =
    shards.length === 1
      ? ['model.safetensors']
      : shards.map((_, i) => `model-${pad(i + 1)}-of-${pad(shards.length)}.safetensors`);
  await mkdir(dir, { recursive: true }).catch((err: unknown) => {
    throw fileSystemError(err, 'create the model folder', dir);
  });

  const rng = new Rng(opts.seed ?? 0);
  const normal = gaussian(rng);
  const f32 = new Float32Array(CHUNK);
  const u32 = new Uint32Array(f32.buffer);
  const u16 = new Uint16Array(CHUNK);
  let written = 0;
  for (const [i, shard] of shards.entries()) {
    const path = join(dir, names[i]!);
    const header: Record<string, unknown> = { __metadata__: { format: 'pt', ...opts.metadata } };
    let offset = 0;
    for (const t of shard) {
      header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + t.numel * width] };
      offset += t.numel * width;
    }
    // The data section starts 8-byte aligned (the safetensors spec pads the JSON header with spaces).
    let json = JSON.stringify(header);
    json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
    const head = Buffer.alloc(8 + Buffer.byteLength(json));
    head.writeBigUInt64LE(BigInt(Buffer.byteLength(json)), 0);
    head.write(json, 8);
    const fh = await open(path, 'w').catch((err: unknown) => {
      throw fileSystemError(err, 'write the model weights', path);
    });
    try {
      await fh.write(head);
      for (const t of shard) {
        const fill = fillOf(t.name);
        for (let done = 0; done < t.numel; done += CHUNK) {
          const n = Math.min(CHUNK, t.numel - done);
          if (fill === undefined) for (let k = 0; k < n; k++) f32[k] = STD * normal();
          else f32.fill(fill, 0, n);
          let bytes: Uint8Array;
          if (dtype === 'F32') bytes = new Uint8Array(f32.buffer, 0, n * 4);
          else {
            for (let k = 0; k < n; k++) u16[k] = toBf16(u32[k]!);
            bytes = new Uint8Array(u16.buffer, 0, n * 2);
          }
          await fh.write(bytes);
          written += bytes.byteLength;
          opts.onProgress?.(written, total);
        }
      }
    } catch (err) {
      throw fileSystemError(err, 'write the model weights', path);
    } finally {
      await fh.close();
    }
  }
  if (shards.length === 1) return { files: names, parameters, bytes: total };
  const weightMap: Record<string, string> = {};
  for (const [i, shard] of shards.entries()) for (const t of shard) weightMap[t.name] = names[i]!;
  const index = 'model.safetensors.index.json';
  await writeFile(
    join(dir, index),
    JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2) + '\n',
  );
  return { files: [...names, index], parameters, bytes: total };
}

/** One tensor to write: its Hugging Face name, shape and element count. */
export interface PlannedTensor {
  name: string;
  shape: number[];
  numel: number;
}

/**
 * `config`'s tensors in file order, cut into shards: a new shard starts before one would pass `maxShardBytes` of data
 * (`width` bytes an element), so only a single tensor larger than the limit makes a larger shard, alone.
 */
export function planShards(
  config: ModelConfig,
  width: number,
  maxShardBytes: number,
  shapes: Map<string, number[]> = weightShapes(config),
): PlannedTensor[][] {
  const shards: PlannedTensor[][] = [[]];
  let size = 0;
  for (const [name, shape] of shapes) {
    const t = { name, shape, numel: shape.reduce((a, b) => a * b, 1) };
    if (size > 0 && size + t.numel * width > maxShardBytes) {
      shards.push([]);
      size = 0;
    }
    shards[shards.length - 1]!.push(t);
    size += t.numel * width;
  }
  return shards;
}

/** The constant of a tensor that is not random: RMSNorm scales 1, biases 0. */
function fillOf(name: string): number | undefined {
  if (/(norm|norm1|norm2|ln_q)\.weight$/.test(name)) return 1; // RMSNorm gains, the vision tower's included
  if (name.endsWith('.bias')) return 0;
  return undefined;
}

/** float32 bits -> bfloat16 bits, rounded to nearest even (as torch's `.to(torch.bfloat16)`); no NaNs arise here. */
function toBf16(bits: number): number {
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Standard normal draws by Marsaglia's polar method (no trigonometry), both values of each pair used. */
function gaussian(rng: Rng): () => number {
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const s = spare;
      spare = undefined;
      return s;
    }
    let u: number;
    let v: number;
    let s: number;
    do {
      u = 2 * rng.random() - 1;
      v = 2 * rng.random() - 1;
      s = u * u + v * v;
    } while (s >= 1 || s === 0);
    const m = Math.sqrt((-2 * Math.log(s)) / s);
    spare = v * m;
    return u * m;
  };
}
