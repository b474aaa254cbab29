import { beforeAll, describe, expect, it } from 'vitest';
import {
  backendAvailable,
  memoryStats,
  mul,
  nativeAllocatedBytes,
  setBackend,
  sum,
  tensor,
  tidy,
} from '../tensor/index.js';
import { ConfigError, Rng } from '../util/index.js';
import { modelConfig } from './config.js';
import { generate } from './generate.js';
import { LoraAdapters } from './lora.js';
import { Transformer } from './transformer.js';

const config = modelConfig({
  vocabSize: 50,
  hiddenSize: 64,
  intermediateSize: 96,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  qkvBias: true,
});
const B = 2,
  T = 7;
const ids = Int32Array.from({ length: B * T }, (_, i) => (i * 7 + 3) % config.vocabSize);

/** A LoRA model whose adapters' B is non-zero (so the adapters change the output). */
function loraModel(): Transformer {
  const m = Transformer.init(config, 11);
  const lora = LoraAdapters.attach(m, { r: 4, alpha: 8 }, 12);
  const rng = new Rng(13);
  for (const [, t] of lora.parameters())
    if (t.shape[1] === 4)
      t.backend.write(
        t.buf,
        Float32Array.from({ length: t.size }, () => rng.normal() * 0.05),
      );
  return m;
}

/** Logits of the model on `ids`, and the adapters' gradients of sum(logits * probe). */
function run(m: Transformer) {
  const probe = Float32Array.from({ length: B * T * config.vocabSize }, (_, i) => Math.sin(i));
  const logits = tidy(() => {
    const l = m.logits(m.hidden(ids, B, T));
    sum(mul(l, tensor(probe, l.shape))).backward();
    return l.toFloat32Array();
  });
  const grads = m.parameters().map(([name, t]) => [name, t.grad!.toFloat32Array()] as const);
  return { logits, grads };
}

describe.runIf(backendAvailable('native'))('bf16 frozen weights on a LoRA model', () => {
  beforeAll(() => void setBackend('native'));

  it('gives logits and adapter gradients within bf16 rounding of the float32 model', () => {
    const f32 = loraModel(),
      bf = loraModel();
    const arenaBefore = memoryStats().arenaInUse!;
    const nativeBefore = nativeAllocatedBytes();
    bf.storeFrozenAsBf16();
    expect(bf.hasBf16Weights).toBe(true);
    // the projections left the arena and sit in native memory at 2 bytes a weight
    const proj = 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 64 * 96);
    expect(nativeAllocatedBytes() - nativeBefore).toBeGreaterThanOrEqual(2 * proj);
    expect(arenaBefore - memoryStats().arenaInUse!).toBeGreaterThanOrEqual(4 * proj);

    const a = run(f32),
      b = run(bf);
    const scale = Math.max(...a.logits.map(Math.abs));
    let worst = 0;
    for (let i = 0; i < a.logits.length; i++) worst = Math.max(worst, Math.abs(a.logits[i]! - b.logits[i]!));
    // a handful of bf16 weight roundings (2^-8 relative) through two layers: well under 2 % of the logit scale,
    // and not float32-equal (the bf16 path was taken)
    expect(worst).toBeLessThan(0.02 * scale);
    expect(worst).toBeGreaterThan(1e-6 * scale);
    for (const [i, [name, g]] of a.grads.entries()) {
      const h = b.grads[i]![1];
      const gs = Math.max(...g.map(Math.abs));
      expect(name).toBe(b.grads[i]![0]);
      expect(g.every((v, j) => Math.abs(v - h[j]!) <= 0.03 * gs)).toBe(true);
    }
    f32.dispose();
    bf.dispose();
    expect(nativeAllocatedBytes()).toBe(nativeBefore);
  });

  it('exports the bf16 projections widened exactly, in the transformers order', () => {
    const f32 = loraModel(),
      bf = loraModel();
    bf.storeFrozenAsBf16();
    const want = f32.exportWeights(),
      got = bf.exportWeights();
    expect([...got.keys()]).toEqual([...want.keys()]);
    const q = 'model.layers.1.self_attn.q_proj.weight';
    const w = want.get(q)!.data,
      g = got.get(q)!.data;
    // bf16 keeps 8 significant bits: each value within 2^-8 relative, and the values are bf16 (low 16 bits zero)
    expect(g.every((v, i) => Math.abs(v - w[i]!) <= 2 ** -8 * Math.abs(w[i]!))).toBe(true);
    expect(new Uint32Array(Float32Array.from(g).buffer).every((u) => (u & 0xffff) === 0)).toBe(true);
    expect(got.get('model.embed_tokens.weight')!.data).toEqual(want.get('model.embed_tokens.weight')!.data);
    f32.dispose();
    bf.dispose();
  });

  it('samples with a bf16 base (decoding op by op) and scores its tokens as the float32 model within bf16 rounding', () => {
    const f32 = loraModel(),
      bf = loraModel();
    bf.storeFrozenAsBf16();
    const params = { maxNewTokens: 6, temperature: 0, seed: 1 };
    const prompts = [
      [1, 2, 3],
      [4, 5],
    ];
    const a = generate(f32, prompts, params),
      b = generate(bf, prompts, params);
    for (const [i, c] of b.entries()) {
      expect(c.tokens).toHaveLength(6);
      // greedy picks can differ only where two logits are within rounding; their log-probs agree closely
      if (c.tokens.join() === a[i]!.tokens.join())
        c.logprobs.forEach((lp, t) => expect(Math.abs(lp - a[i]!.logprobs[t]!)).toBeLessThan(0.05));
    }
    f32.dispose();
    bf.dispose();
  });

  it('loads projections straight to bf16 (never as float32 in the arena), the same model as converting after', () => {
    const src = loraModel();
    const saved = src.exportWeights();
    const converted = loraModel();
    converted.storeFrozenAsBf16();
    const arena = memoryStats().arenaInUse!;
    const loaded = Transformer.fromWeights(config, saved, 'test', { frozenBf16: true });
    // only embeddings, norms and biases entered the arena
    expect(memoryStats().arenaInUse! - arena).toBeLessThan(4 * (50 * 64 + 2 * 4 * 64 + 4 * 64 + 2 * 64) * 2);
    expect(loaded.hasBf16Weights).toBe(true);
    LoraAdapters.attach(loaded, { r: 4, alpha: 8 }, 12); // shapes of bf16 projections
    for (const [name, t] of converted.lora!.parameters()) {
      const own = loaded.lora!.parameters().find(([n]) => n === name)![1];
      own.backend.write(own.buf, t.toFloat32Array());
    }
    expect(run(loaded).logits).toEqual(run(converted).logits);
    for (const m of [src, converted, loaded]) m.dispose();
  });

  it('refuses to train or merge a bf16 base, and a model whose base still trains', () => {
    const bf = loraModel();
    bf.storeFrozenAsBf16();
    expect(() => bf.setBaseTrainable(true)).toThrow(ConfigError);
    expect(() => bf.lora!.merge(bf)).toThrow(/stored as bf16 for a frozen base and cannot train/);
    const full = Transformer.init(config, 1);
    expect(() => full.storeFrozenAsBf16()).toThrow(/this model trains its base weights/);
    bf.dispose();
    full.dispose();
  });
});
