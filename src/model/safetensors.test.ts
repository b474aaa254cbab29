import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointError } from '../util/index.js';
import { expectWeight, halfToFloat, loadWeights, parseSafetensors, saveWeights, serializeSafetensors, type WeightMap } from './safetensors.js';

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
    const f16 = parseSafetensors(handMade('F16', Uint8Array.from([0x00, 0x3e, 0x00, 0xc0, 0x01, 0x00]), [3])).weights.get('w')!;
    expect([...f16.data]).toEqual([1.5, -2, Math.fround(2 ** -24)]);
    expect(halfToFloat(0x7c00)).toBe(Infinity);
    expect(halfToFloat(0x7bff)).toBe(65504);
  });

  it('names the problem for truncated files, unsupported dtypes and wrong sizes', () => {
    const good = serializeSafetensors(sample());
    expect(() => parseSafetensors(good.subarray(0, 5), 'x.safetensors')).toThrow(/x.safetensors: truncated/);
    expect(() => parseSafetensors(good.subarray(0, good.length - 4), 'x.safetensors')).toThrow(/truncated.*model.norm.weight/);
    expect(() => parseSafetensors(handMade('I64', new Uint8Array(8), [1]))).toThrow(/dtype I64; supported: F32, BF16, F16/);
    expect(() => parseSafetensors(handMade('F32', new Uint8Array(8), [3]))).toThrow(/spans 8 bytes but shape \[3\]/);
  });

  it('expectWeight names the tensor and both shapes', () => {
    expect(() => expectWeight(sample(), 'model.norm.weight', [3])).toThrow(/`model.norm.weight` has shape \[2\], the model expects \[3\]/);
    expect(() => expectWeight(sample(), 'lm_head.weight', [3, 2])).toThrow(CheckpointError);
  });

  it('saves and loads sharded checkpoints through model.safetensors.index.json', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'st-'));
    const files = await saveWeights(dir, sample(), { maxShardBytes: 24 });
    expect(files).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']);
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
});
