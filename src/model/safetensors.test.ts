import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointError } from '../util/index.js';
import {
  expectWeight,
  halfToFloat,
  loadWeightFiles,
  loadWeights,
  parseSafetensors,
  readSafetensors,
  readSafetensorsFile,
  saveWeights,
  serializeSafetensors,
  writeSafetensors,
  type WeightMap,
} from './safetensors.js';

function sample(): WeightMap {
  return new Map([
    ['model.embed_tokens.weight', { shape: [3, 2], data: Float32Array.from([1, -2, 3.5, 1e-30, -0, 7]) }],
    ['model.norm.weight', { shape: [2], data: Float32Array.from([Math.PI, Number.MAX_VALUE]) }],
  ]);
}

/** A safetensors file written by hand, the way the format spec lays it out. */
function handMade(dtype: string, raw: Uint8Array, shape: number[]): Uint8Array {
  const json = JSON.stringify({ w: { dtype, shape, data_offsets: [0, raw.length] } });
  const out = new Uint8Array(8 + json.length + raw.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(new TextEncoder().encode(json), 8);
  out.set(raw, 8 + json.length);
  return out;
}

describe('safetensors', () => {
  it('round-trips float32 bit-exactly, with an 8-byte aligned header', () => {
    const bytes = serializeSafetensors(sample());
    const headerLen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect((8 + headerLen) % 8).toBe(0);
    const { weights, metadata } = parseSafetensors(bytes);
    expect(metadata).toEqual({ format: 'pt' });
    for (const [name, w] of sample()) {
      expect(weights.get(name)!.shape).toEqual(w.shape);
      expect(new Uint32Array(weights.get(name)!.data.buffer)).toEqual(new Uint32Array(w.data.buffer));
    }
  });

  it('reads bf16 and f16', () => {
    // bf16 of 1.5 = 0x3fc0, of -2 = 0xc000; f16 of 1.5 = 0x3e00, of -2 = 0xc000, smallest subnormal 0x0001
    const bf = parseSafetensors(handMade('BF16', Uint8Array.from([0xc0, 0x3f, 0x00, 0xc0]), [2])).weights.get('w')!;
    expect([...bf.data]).toEqual([1.5, -2]);
    const f16 = parseSafetensors(
      handMade('F16', Uint8Array.from([0x00, 0x3e, 0x00, 0xc0, 0x01, 0x00]), [3]),
    ).weights.get('w')!;
    expect([...f16.data]).toEqual([1.5, -2, Math.fround(2 ** -24)]);
    expect(halfToFloat(0x7c00)).toBe(Infinity);
    expect(halfToFloat(0x7bff)).toBe(65504);
  });

  it('names the problem for truncated files, unsupported dtypes and wrong sizes', () => {
    const good = serializeSafetensors(sample());
    expect(() => parseSafetensors(good.subarray(0, 5), 'x.safetensors')).toThrow(/x.safetensors: truncated/);
    expect(() => parseSafetensors(good.subarray(0, good.length - 4), 'x.safetensors')).toThrow(
      /truncated.*model.norm.weight/,
    );
    expect(() => parseSafetensors(handMade('I64', new Uint8Array(8), [1]))).toThrow(
      /dtype I64; supported: F32, BF16, F16/,
    );
    expect(() => parseSafetensors(handMade('F32', new Uint8Array(8), [3]))).toThrow(/spans 8 bytes but shape \[3\]/);
  });

  it('expectWeight names the tensor and both shapes', () => {
    expect(() => expectWeight(sample(), 'model.norm.weight', [3])).toThrow(
      /`model.norm.weight` has shape \[2\], the model expects \[3\]/,
    );
    expect(() => expectWeight(sample(), 'lm_head.weight', [3, 2])).toThrow(CheckpointError);
  });

  it('saves and loads sharded checkpoints through model.safetensors.index.json', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'st-'));
    const files = await saveWeights(dir, sample(), { maxShardBytes: 24 });
    expect(files).toEqual([
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
      'model.safetensors.index.json',
    ]);
    const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8'));
    expect(index.weight_map['model.norm.weight']).toBe('model-00002-of-00002.safetensors');
    const back = await loadWeights(dir);
    expect([...back.keys()]).toEqual([...sample().keys()]);
    expect([...back.get('model.norm.weight')!.data]).toEqual([...sample().get('model.norm.weight')!.data]);
  });

  it('reports a missing checkpoint and a missing shard', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'st-'));
    await expect(loadWeights(dir)).rejects.toThrow(/no weights in .*model.safetensors or model.safetensors.index.json/);
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { a: 'gone.safetensors' } }));
    await expect(loadWeights(dir)).rejects.toThrow(/safetensors file not found: .*gone.safetensors/);
    expect(existsSync(join(dir, 'gone.safetensors'))).toBe(false);
  });

  it('refuses a file with bytes after its last tensor, in memory and on disk, naming the file and the byte counts', async () => {
    const good = serializeSafetensors(sample());
    const bad = new Uint8Array(good.length + 3);
    bad.set(good);
    expect(() => parseSafetensors(bad, 'x.safetensors')).toThrow(
      /x.safetensors: 3 trailing bytes after the last tensor \(its tensors end at byte 32 of a 35-byte data section\)/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'st-'));
    writeFileSync(join(dir, 'model.safetensors'), bad);
    await expect(loadWeights(dir)).rejects.toThrow(CheckpointError);
    await expect(readSafetensors(join(dir, 'model.safetensors'))).rejects.toThrow(
      /model.safetensors: 3 trailing bytes .* 35-byte data section/,
    );
    writeFileSync(join(dir, 'model.safetensors'), good.subarray(0, good.length - 4));
    await expect(readSafetensors(join(dir, 'model.safetensors'))).rejects.toThrow(
      /model.safetensors: truncated safetensors file \(tensor `model.norm.weight` ends at byte 32 of a 28-byte data section\)/,
    );
  });

  it('writes files byte for byte as the format lays them out, and reads them back by parts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'st-'));
    const path = join(dir, 'w.safetensors');
    await writeSafetensors(path, sample(), { step: '7' });
    expect(readFileSync(path).equals(Buffer.from(serializeSafetensors(sample(), { step: '7' })))).toBe(true);
    const { weights, metadata } = await readSafetensorsFile(path);
    expect(metadata).toEqual({ step: '7' });
    expect([...weights.get('model.embed_tokens.weight')!.data]).toEqual([
      ...sample().get('model.embed_tokens.weight')!.data,
    ]);
  });

  it('writes the same metadata into every shard, and a later unsharded save replaces the index', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'st-'));
    const files = await saveWeights(dir, sample(), {
      maxShardBytes: 24,
      file: 'policy.safetensors',
      metadata: { step: '3' },
    });
    expect(files).toEqual([
      'policy-00001-of-00002.safetensors',
      'policy-00002-of-00002.safetensors',
      'policy.safetensors.index.json',
    ]);
    expect(JSON.parse(readFileSync(join(dir, 'policy.safetensors.index.json'), 'utf8')).metadata.total_size).toBe(
      6 * 4 + 2 * 4,
    );
    const back = await loadWeightFiles(dir, 'policy.safetensors');
    expect(back.metadata).toEqual({ step: '3' });
    expect(back.path).toBe(join(dir, 'policy.safetensors.index.json'));
    expect((await readSafetensorsFile(join(dir, 'policy-00002-of-00002.safetensors'))).metadata).toEqual({ step: '3' });
    await saveWeights(dir, sample(), { file: 'policy.safetensors' });
    expect(existsSync(join(dir, 'policy.safetensors.index.json'))).toBe(false);
    await saveWeights(dir, sample(), { maxShardBytes: 24, file: 'policy.safetensors' });
    expect(existsSync(join(dir, 'policy.safetensors'))).toBe(false); // would shadow the new shards
  });
});

describe('safetensors files over 2 GiB (sparse: no disk used)', () => {
  it('reads one tensor stored past byte 2^31 without reading the file whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'st-big-'));
    try {
      const path = join(dir, 'model.safetensors');
      const big = 600_000_000; // float32 elements: 2.4 GB of zeros before the tensor we read
      const json = JSON.stringify({
        big: { dtype: 'F32', shape: [big], data_offsets: [0, 4 * big] },
        tail: { dtype: 'F32', shape: [2, 2], data_offsets: [4 * big, 4 * big + 16] },
      });
      const head = Buffer.alloc(8 + json.length);
      head.writeBigUInt64LE(BigInt(json.length), 0);
      head.write(json, 8);
      writeFileSync(path, head);
      const tailAt = 8 + json.length + 4 * big;
      truncateSync(path, tailAt + 16);
      const fd = openSync(path, 'r+');
      writeSync(fd, Buffer.from(Float32Array.from([1.5, -2, 3, 1e-3]).buffer), 0, 16, tailAt);
      closeSync(fd);
      expect(statSync(path).size).toBeGreaterThan(2 ** 31);
      expect(() => readFileSync(path)).toThrow(/greater than 2 GiB/); // what reading it whole meets
      const { weights } = await readSafetensorsFile(path, (name) => name === 'tail');
      expect([...weights.keys()]).toEqual(['tail']);
      expect(weights.get('tail')!.shape).toEqual([2, 2]);
      expect([...weights.get('tail')!.data]).toEqual([1.5, -2, 3, Math.fround(1e-3)]);
      truncateSync(path, tailAt + 12); // the same file cut short by 4 bytes is refused by its header alone
      await expect(readSafetensorsFile(path, () => false)).rejects.toThrow(
        /truncated safetensors file \(tensor `tail` ends at byte 2400000016 of a 2400000012-byte data section\)/,
      );
      expect(readdirSync(dir)).toEqual(['model.safetensors']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A safetensors file from a header written by hand (any JSON, valid or not) and `dataLen` bytes of data. */
function rawFile(header: unknown, dataLen: number): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + dataLen);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

const q = { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] };
const k = { dtype: 'F32', shape: [2, 2], data_offsets: [16, 32] };

describe('item 7: safetensors offsets are checked for range, overlap and coverage', () => {
  it('accepts tensors that tile the data section, in any header order, zero-sized ones included', () => {
    const { weights } = parseSafetensors(
      rawFile({ k, q, e: { dtype: 'F32', shape: [0], data_offsets: [16, 16] } }, 32),
      'x.safetensors',
    );
    expect([...weights.keys()]).toEqual(['k', 'q', 'e']);
  });

  it("refuses k_proj's data_offsets set equal to q_proj's, naming both tensors", () => {
    expect(() =>
      parseSafetensors(
        rawFile(
          { q, k: { ...k, data_offsets: [0, 16] }, pad: { dtype: 'F32', shape: [4], data_offsets: [16, 32] } },
          32,
        ),
        'x.safetensors',
      ),
    ).toThrow(/^x.safetensors: tensor `[qk]`'s data_offsets \[0, 16\] overlap tensor `[qk]`'s \[0, 16\]/);
  });

  it('refuses a negative begin (the header read as weights), naming the file, the tensor and the field', () => {
    expect(() => parseSafetensors(rawFile({ q: { ...q, data_offsets: [-16, 0] }, k }, 32), 'x.safetensors')).toThrow(
      /^x.safetensors: tensor `q` has `data_offsets` = \[-16,0\]; expected a pair \[begin, end\] of non-negative integers/,
    );
  });

  it('refuses a gap between tensors and offsets past the data section', () => {
    expect(() => parseSafetensors(rawFile({ q, k: { ...k, data_offsets: [20, 36] } }, 36), 'x.safetensors')).toThrow(
      /^x.safetensors: bytes \[16, 20\) of the data section belong to no tensor \(tensor `k`/,
    );
    expect(() =>
      parseSafetensors(rawFile({ q: { ...q, data_offsets: [2 ** 40, 2 ** 40 + 16] } }, 16), 'x.safetensors'),
    ).toThrow(/^x.safetensors: truncated safetensors file \(tensor `q` ends at byte/);
  });

  it('refuses a header length past the format limit before reading it', async () => {
    const bytes = rawFile({ q }, 16);
    new DataView(bytes.buffer).setBigUint64(0, 2n ** 62n, true);
    expect(() => parseSafetensors(bytes, 'x.safetensors')).toThrow(
      /^x.safetensors: the safetensors header length says \d+ bytes, over the 100000000-byte limit/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'st-'));
    writeFileSync(join(dir, 'model.safetensors'), bytes);
    await expect(readSafetensorsFile(join(dir, 'model.safetensors'))).rejects.toThrow(
      /model.safetensors: the safetensors header length says/,
    );
  });
});

describe('item 16: every safetensors header field is typed, one sentence per violation, never a TypeError', () => {
  const cases: [string, unknown, RegExp][] = [
    [
      'a null entry',
      { q: null },
      /^x.safetensors: tensor `q` has header entry null; expected an object \{dtype, shape, data_offsets\}/,
    ],
    [
      'an entry without data_offsets',
      { q: { dtype: 'F32', shape: [4] } },
      /^x.safetensors: tensor `q` has no `data_offsets`; expected a pair/,
    ],
    [
      'shape "abc"',
      { q: { ...q, shape: 'abc' } },
      /^x.safetensors: tensor `q` has `shape` = "abc"; expected an array of non-negative integers/,
    ],
    [
      'a fractional dimension',
      { q: { ...q, shape: [2.5, 2] } },
      /tensor `q` has `shape` = \[2.5,2\]; expected an array of non-negative integers/,
    ],
    ['a numeric dtype', { q: { ...q, dtype: 4 } }, /tensor `q` has `dtype` = 4; expected a dtype name/],
    [
      'a one-element data_offsets',
      { q: { ...q, data_offsets: [0] } },
      /tensor `q` has `data_offsets` = \[0\]; expected a pair/,
    ],
    [
      'metadata that is not string -> string',
      { __metadata__: { step: 3 }, q },
      /^x.safetensors: the header's `__metadata__` = \{"step":3\} is not an object of strings to strings/,
    ],
    ['a header that is an array', [q], /^x.safetensors: the safetensors header is \[.*, not a JSON object of tensors/],
  ];
  for (const [what, header, message] of cases) {
    it(`refuses ${what} with a CheckpointError naming the file and the field`, () => {
      let err: unknown;
      try {
        parseSafetensors(rawFile(header, 16), 'x.safetensors');
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CheckpointError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message.split('\n')).toHaveLength(1);
    });
  }
});

describe('loading with a consumer of tensors as they are read (take)', () => {
  const fixtures = join(import.meta.dirname, 'fixtures');
  for (const name of ['hf-qwen2', 'hf-qwen3-bf16-sharded'])
    it(`${name}: taken tensors stay out of the map, the rest load as without`, async () => {
      const dir = join(fixtures, name);
      const all = await loadWeights(dir);
      const taken = new Map<string, number[]>();
      const rest = await loadWeights(dir, undefined, (n, w) => {
        if (!n.endsWith('_proj.weight')) return false;
        expect(w.data.length).toBe(w.shape.reduce((a, b) => a * b, 1));
        expect(Array.from(w.data)).toEqual(Array.from(all.get(n)!.data));
        taken.set(n, w.shape);
        return true;
      });
      expect(taken.size).toBeGreaterThan(6);
      for (const [n, w] of all) {
        if (taken.has(n)) expect(rest.has(n), n).toBe(false);
        else expect(rest.get(n)!.data, n).toEqual(w.data);
      }
    });
});
