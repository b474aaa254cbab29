// The whole model against PyTorch (src/bench/tools/torch_ref.py, a plain-torch implementation in float64): logits,
// loss and every trainable parameter's gradient, for Qwen2 / Qwen3 / Llama variants with GQA, tied and untied
// heads, LoRA and a value head. Requires torch (Debian: apt-get install python3-torch); fails without it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { findTorchPython, TORCH_MISSING } from '../engine/python.js';
import { add, mul, noGrad, setBackend, square, sum, tensor, type BackendName, type Tensor } from '../tensor/index.js';
import { testBackend } from '../tensor/testing.js';
import { Rng } from '../util/index.js';
import { saveModel } from './checkpoint.js';
import { modelConfig, type ModelConfig } from './config.js';
import { tokenForward, ValueHead, type PackedBatch } from './forward.js';
import { LoraAdapters, type LoraConfig } from './lora.js';
import { readSafetensors, type WeightMap } from './safetensors.js';
import { Transformer } from './transformer.js';

interface Variant {
  name: string;
  config: ModelConfig;
  lora?: LoraConfig;
  valueHead: boolean;
}

const base = { vocabSize: 37, hiddenSize: 32, intermediateSize: 40, numLayers: 2, numHeads: 4, numKvHeads: 2 };
const VARIANTS: Variant[] = [
  {
    name: 'qwen2, GQA, tied embeddings, value head',
    config: modelConfig({ ...base, modelType: 'qwen2' }),
    valueHead: true,
  },
  {
    name: 'qwen2 with LoRA (all-linear) and value head',
    config: modelConfig({ ...base, modelType: 'qwen2' }),
    lora: { r: 4, alpha: 8 },
    valueHead: true,
  },
  {
    name: 'qwen3, q/k norm, head_dim 16, untied',
    config: modelConfig({ ...base, modelType: 'qwen3', headDim: 16, tieWordEmbeddings: false }),
    valueHead: false,
  },
  {
    name: 'llama, attention bias, untied, LoRA on q_proj/v_proj',
    config: modelConfig({
      ...base,
      modelType: 'llama',
      numKvHeads: 1,
      qkvBias: true,
      oBias: true,
      tieWordEmbeddings: false,
    }),
    lora: { r: 2, alpha: 3, targetModules: ['q_proj', 'v_proj'] },
    valueHead: false,
  },
];

// Batch 2 x T 7; the second sequence is 5 tokens long, right-padded (mask 0 there).
const IDS = [
  [3, 17, 5, 30, 2, 9, 11],
  [8, 1, 36, 4, 22, 0, 0],
];
const TARGETS = [
  [17, 5, 30, 2, 9, 11, 6],
  [1, 36, 4, 22, 13, 0, 0],
];
const MASK = [
  [1, 1, 1, 1, 1, 1, 1],
  [1, 1, 1, 1, 1, 0, 0],
];
const VALUE_COEF = 0.5;

/** Non-trivial weights everywhere: norms != 1, biases != 0, LoRA B != 0 (else A's gradient is zero). */
function perturb(model: Transformer, seed: number): void {
  const rng = new Rng(seed);
  noGrad(() => {
    for (const [name, t] of [...model.weights, ...(model.lora?.parameters() ?? [])]) {
      const data = t.toFloat32Array();
      for (let i = 0; i < data.length; i++) {
        const r = rng.normal();
        data[i] = name.endsWith('norm.weight')
          ? 1 + 0.2 * r
          : name.endsWith('.bias') || name.includes('lora_B')
            ? 0.2 * r
            : data[i]!;
      }
      t.backend.write(t.buf, data);
    }
  });
}

function relError(ours: Float32Array, ref: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < ref.length; i++) {
    num = Math.max(num, Math.abs(ours[i]! - ref[i]!));
    den = Math.max(den, Math.abs(ref[i]!));
  }
  return num / Math.max(den, 1e-30);
}

function build(v: Variant, seed: number): { model: Transformer; valueHead: ValueHead | null } {
  const model = Transformer.init(v.config, seed, 0.2);
  if (v.lora) LoraAdapters.attach(model, v.lora, seed + 1);
  perturb(model, seed + 2);
  const valueHead = v.valueHead ? ValueHead.init(v.config.hiddenSize, seed + 3, 0.2) : null;
  return { model, valueHead };
}

/** Our forward + backward of the same loss as torch_ref.py. */
function ours(model: Transformer, valueHead: ValueHead | null): WeightMap {
  const B = IDS.length;
  const T = IDS[0]!.length;
  const none = new Int32Array(0);
  const batch: PackedBatch = {
    B,
    T,
    ids: Int32Array.from(IDS.flat()),
    targets: Int32Array.from(TARGETS.flat()),
    lengths: Int32Array.from([T + 1, T + 1]),
    prefix: { ids: none, targets: none },
  };
  const mask = MASK.flat();
  const total = mask.reduce((a, b) => a + b, 0);
  const out = tokenForward(model, batch, valueHead ? { valueHead } : {});
  let loss: Tensor = sum(mul(out.logprobs!, tensor(mask.map((m) => -m / total))));
  if (out.values) loss = add(loss, sum(mul(square(out.values), tensor(mask.map((m) => (VALUE_COEF * m) / total)))));
  const result: WeightMap = new Map();
  result.set('logits', {
    shape: [B, T, model.config.vocabSize],
    data: noGrad(() => model.logits(out.hidden).toFloat32Array()),
  });
  result.set('loss', { shape: [1], data: loss.toFloat32Array() });
  if (out.values) result.set('values', { shape: [B, T], data: out.values.toFloat32Array() });
  loss.backward();
  for (const [name, t] of [...model.parameters(), ...(valueHead?.parameters() ?? [])]) {
    result.set(`grad.${name}`, { shape: t.shape, data: t.grad!.toFloat32Array() });
  }
  return result;
}

const backends = (['js', 'wasm', 'native'] as BackendName[]).filter(testBackend);

describe('the model matches a plain PyTorch implementation', () => {
  const refs: WeightMap[] = [];

  beforeAll(async () => {
    const torch = findTorchPython();
    if (!torch) throw new Error(TORCH_MISSING);
    setBackend('js');
    const root = mkdtempSync(join(tmpdir(), 'golden-'));
    const args: string[] = [];
    for (let i = 0; i < VARIANTS.length; i++) {
      const { model, valueHead } = build(VARIANTS[i]!, 100 + i);
      const dir = join(root, `v${i}`);
      await saveModel(dir, model, { valueHead });
      writeFileSync(
        join(dir, 'inputs.json'),
        JSON.stringify({ ids: IDS, targets: TARGETS, mask: MASK, value_coef: VALUE_COEF }),
      );
      args.push(dir, join(dir, 'inputs.json'), join(dir, 'out.safetensors'));
    }
    const r = spawnSync(torch.python, [join(import.meta.dirname, '../bench/tools/torch_ref.py'), ...args], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (r.status !== 0) throw new Error(`src/bench/tools/torch_ref.py failed (${r.status}):\n${r.stderr}`);
    for (let i = 0; i < VARIANTS.length; i++) refs.push(await readSafetensors(join(root, `v${i}`, 'out.safetensors')));
  }, 180_000);

  for (const backend of backends) {
    VARIANTS.forEach((v, i) => {
      it(`${v.name} [${backend}]: logits, loss and every gradient within 1e-4`, () => {
        setBackend(backend);
        const { model, valueHead } = build(v, 100 + i);
        const got = ours(model, valueHead);
        const ref = refs[i]!;
        const gradNames = [...ref.keys()].filter((k) => k.startsWith('grad.'));
        expect([...got.keys()].filter((k) => k.startsWith('grad.')).sort()).toEqual(gradNames.sort());
        expect(gradNames.length).toBeGreaterThan(v.lora ? 4 : 10);
        for (const [name, r] of ref) {
          const err = relError(got.get(name)!.data, r.data);
          expect(err, `${name} relative error`).toBeLessThan(1e-4);
          expect(got.get(name)!.data.length, name).toBe(r.data.length);
        }
        model.dispose();
        valueHead?.dispose();
      });
    });
  }
});
