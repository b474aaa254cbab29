// Gradients through Qwen2.5-VL on the float64 reference backend: LoRA on the language model (the vision tower frozen)
// and, when a tower weight is made trainable, through the tower too (window and full attention, 2-D rotary, merger),
// each against central finite differences of the same loss; the fast backends' gradients against the reference.
import { afterEach, describe, expect, it } from 'vitest';
import {
  backendAvailable,
  getBackend,
  logprobOfTarget,
  mul,
  noGrad,
  setBackend,
  sum,
  tensor,
  type BackendName,
  type Tensor,
} from '../tensor/index.js';
import { Rng } from '../util/index.js';
import { LoraAdapters } from './lora.js';
import { IDS, jitter, jitteredVL, visionInput } from './qwen2-vl-testing.js';
import { Qwen25VL, type VisionInput } from './qwen2-vl.js';

/** A model on the current backend with every weight moved off its init and LoRA (r 2, B random) attached. */
function model(trainVision: string | null): Qwen25VL {
  const m = jitteredVL(4);
  const lora = LoraAdapters.attach(m.lm, { r: 2, alpha: 4 }, 5);
  const rng = new Rng(9);
  for (const { B } of lora.adapters.values()) jitter(B, rng);
  if (trainVision) m.visual.weights.get(trainVision)!.requiresGrad = true;
  return m;
}

/** A weighted sum of the next-token log-probs of the prompt: every position, the image's included. */
function loss(m: Qwen25VL, input: VisionInput): Tensor {
  const logits = m.logits(m.hidden(IDS, input));
  const targets = Int32Array.from([...IDS.slice(1), 1]);
  const rng = new Rng(11);
  return sum(mul(logprobOfTarget(logits, targets), tensor(Array.from(targets, () => rng.normal()))));
}

/** A tensor's values at full precision (float64 on js64: finite differences need it). */
function values(t: Tensor): Float32Array | Float64Array {
  return t.buf instanceof Float64Array ? t.buf.slice(0, t.size) : t.toFloat32Array();
}

/** Largest |analytic - numeric| / (1e-6 + 1e-4 |numeric|) over `count` entries of `t`. */
function fdWorst(m: Qwen25VL, input: VisionInput, t: Tensor, count: number): number {
  const data = values(t);
  const grad = values(t.grad!);
  const rng = new Rng(13);
  let worst = 0;
  const eps = 1e-5;
  for (let n = 0; n < count; n++) {
    const j = rng.int(data.length);
    const at = (v: number) => {
      const d = Float64Array.from(data);
      d[j] = v;
      t.backend.write(t.buf, d);
      return noGrad(() => values(loss(m, input))[0]!);
    };
    const numeric = (at(data[j]! + eps) - at(data[j]! - eps)) / (2 * eps);
    t.backend.write(t.buf, data);
    worst = Math.max(worst, Math.abs(grad[j]! - numeric) / (1e-6 + 1e-4 * Math.abs(numeric)));
  }
  return worst;
}

describe('Qwen2.5-VL gradients', () => {
  const prev = getBackend().name;
  afterEach(() => setBackend(prev));

  it('LoRA gradients of the language model equal finite differences; the frozen tower gets none', () => {
    setBackend('js64');
    const m = model(null);
    const input = visionInput();
    loss(m, input).backward();
    const adapters = [...m.lm.lora!.adapters.entries()];
    for (const [name, { A, B }] of adapters.filter(([n]) => /layers\.(0\.self_attn\.q|1\.mlp\.down)_proj/.test(n))) {
      expect(fdWorst(m, input, A, 6), `${name} A`).toBeLessThan(1);
      expect(fdWorst(m, input, B, 6), `${name} B`).toBeLessThan(1);
    }
    expect([...m.visual.weights.values()].every((t) => t.grad === null)).toBe(true);
    expect(m.parameters().length).toBe(adapters.length * 2);
    m.dispose();
  });

  it('a trainable tower weight gets the gradient finite differences give (through windows, rotary, merger)', () => {
    setBackend('js64');
    for (const name of ['visual.blocks.0.attn.qkv.weight', 'visual.patch_embed.proj.weight']) {
      const m = model(name);
      const input = visionInput();
      loss(m, input).backward();
      const w = m.visual.weights.get(name)!;
      expect(w.grad, name).not.toBeNull();
      expect(fdWorst(m, input, w, 8), name).toBeLessThan(1);
      m.dispose();
    }
  });

  for (const backend of (['wasm', 'native'] as BackendName[]).filter((b) => backendAvailable(b)))
    it(`${backend}'s LoRA gradients equal the float64 reference's within 1e-4 of their largest`, () => {
      const grads = (b: BackendName) => {
        setBackend(b);
        const m = model(null);
        loss(m, visionInput()).backward();
        const out = m.parameters().map(([, t]) => t.grad!.toFloat32Array());
        m.dispose();
        return out;
      };
      const ref = grads('js64');
      const got = grads(backend);
      let scale = 0;
      let err = 0;
      ref.forEach((g, i) =>
        g.forEach((v, j) => {
          scale = Math.max(scale, Math.abs(v));
          err = Math.max(err, Math.abs(v - got[i]![j]!));
        }),
      );
      expect(scale).toBeGreaterThan(1e-3);
      expect(err / scale).toBeLessThan(1e-4);
    });
});
