// The local engine against the torch worker on the same tiny Qwen2.5-VL checkpoint (the local engine's own save, so the
// worker reads what it writes), rows and prompts with images: per-token log-probs, entropy, values and reference
// log-probs, every trainable parameter's gradient (the language model and the tower with model.vision.train; LoRA
// adapters), and greedy generations, within 1e-4 as for the text models (torch.test.ts).
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VisualFrozenLakeEnv } from '../envs/frozen-lake/visual.js';
import { readSafetensors, writeSafetensors, type WeightMap } from '../model/index.js';
import { IMAGE, jitteredVL, TINY_VL_JSON } from '../model/qwen2-vl-testing.js';
import { setBackend } from '../tensor/index.js';
import { Rng, type RgbImage } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { LocalEngine } from './local.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';
import type { ForwardResult, OutputGradients, SequenceBatch, TrainableRole } from './types.js';

const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-torch-vl-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** 56 x 56 and 84 x 84 lakes: 4 and 9 <|image_pad|> tokens (the 84 one's 3 x 3 merged grid cuts a window). */
const small = new VisualFrozenLakeEnv({ size: 4, tileSize: 14 }).reset({ seed: 2 }).images![0]!;
const large = new VisualFrozenLakeEnv({ size: 3, tileSize: 28 }).reset({ seed: 5 }).images![0]!;
const vision = (n: number) => [20, ...new Array<number>(n).fill(IMAGE), 23];
const rows = [
  [3, 7, ...vision(4), 5, 9, 11, 4, ...vision(9), 8, 2, 6, 40, 41],
  [3, 7, 5, 9, 11, 12, 13, 14, 15],
  [3, ...vision(9), 30, 31, 32, 33],
];
const images: (RgbImage[] | undefined)[] = [[small, large], undefined, [large]];
const batch = (): SequenceBatch => ({ ...sequenceBatch(rows), images });

/** A checkpoint written by the local engine's save (value head; LoRA with B moved off zero when `lora`). */
async function fixture(lora: boolean): Promise<string> {
  const base = join(root, 'base');
  mkdirSync(base, { recursive: true });
  setBackend('js');
  const m = jitteredVL(8);
  const weights: WeightMap = new Map();
  for (const [name, t] of [...m.lm.weights, ...m.visual.weights])
    weights.set(name, { shape: [...t.shape], data: t.toFloat32Array() });
  m.dispose();
  writeFileSync(join(base, 'config.json'), JSON.stringify(TINY_VL_JSON));
  await writeSafetensors(join(base, 'model.safetensors'), weights);
  const engine = await LocalEngine.fromPretrained(base, {
    backend: 'js',
    critic: 'shared',
    ...(lora ? { lora: { r: 2, alpha: 4, targetModules: 'all-linear' as const } } : {}),
  });
  // a value head of some size, so that values are compared on real numbers
  const rng = new Rng(4);
  for (const [, t] of engine.parameters('critic'))
    t.backend.write(
      t.buf,
      t.toFloat32Array().map(() => rng.normal()),
    );
  const dir = join(root, lora ? 'lora' : 'full');
  await engine.save(dir);
  engine.dispose();
  if (lora) {
    const path = join(dir, 'adapter', 'adapter_model.safetensors');
    const w = await readSafetensors(path);
    for (const [n, t] of w) if (n.includes('lora_B')) t.data.forEach((_, i) => (t.data[i] = 0.2 * rng.normal()));
    await writeSafetensors(path, w);
  }
  return dir;
}

/** Seeded output gradients for every output present. */
function gradsFor(out: ForwardResult, seed: number): OutputGradients {
  const rng = new Rng(seed);
  const g = (x?: Float32Array) => (x ? Float32Array.from(x, () => rng.random() - 0.5) : undefined);
  const r: OutputGradients = {};
  for (const k of ['logprobs', 'entropy', 'values'] as const) if (out[k]) r[k] = g(out[k]);
  return r;
}

const maxAbs = (a: ArrayLike<number>) => Array.from(a).reduce((m, x) => Math.max(m, Math.abs(x)), 0);
function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

function localGrads(engine: LocalEngine, role: TrainableRole): Map<string, Float32Array> {
  return new Map(
    engine.parameters(role).map(([n, t]) => [n, t.grad?.toFloat32Array() ?? new Float32Array(t.size)] as const),
  );
}

const CASES: [string, boolean, 'shared' | 'separate'][] = [
  ['full fine-tuning with the tower trained (model.vision.train)', false, 'shared'],
  ['LoRA on the language model, the tower frozen', true, 'shared'],
  ['a separate critic with its own tower, both towers trained', false, 'separate'],
];

describe.skipIf(!python).each(CASES)(
  'TorchEngine equals LocalEngine on a tiny Qwen2.5-VL: %s',
  (_name, lora, critic) => {
    let local: LocalEngine;
    let torch: TorchEngine;
    let dir: string;

    beforeAll(async () => {
      dir = await fixture(lora);
      const opts = { critic, reference: true, visionTrain: !lora };
      local = await LocalEngine.fromPretrained(dir, { backend: 'js', ...opts });
      torch = await TorchEngine.fromPretrained(dir, {
        python: python!,
        device: 'cpu',
        precision: 'float32',
        echoStderr: false,
        ...opts,
      });
    }, 120_000);
    afterAll(() => {
      local?.dispose();
      torch?.dispose();
    });

    it('gives the same per-token log-probs, entropy, values and reference log-probs on image rows (1e-4)', async () => {
      expect(torch.vision).toEqual(local.vision);
      for (const role of ['policy', 'reference', 'critic'] as const) {
        const a = await torch.forward(batch(), { role, entropy: true });
        const b = await local.forward(batch(), { role, entropy: true });
        for (const k of ['logprobs', 'entropy', 'values'] as const) {
          expect(Boolean(a[k]), `${role} ${k} present`).toBe(Boolean(b[k]));
          if (b[k]) expect(maxAbsDiff(a[k]!, b[k]!), `${role} ${k}`).toBeLessThan(1e-4);
        }
      }
      // real numbers were compared, and the worker read the pixels: without them its log-probs move
      const lp = (await local.forward(batch(), { role: 'policy' })).logprobs;
      expect(maxAbs(lp)).toBeGreaterThan(1);
      const blank = { ...large, data: new Uint8Array(large.data.length) };
      const other = await torch.forward(
        { ...batch(), images: [[small, blank], undefined, [blank]] },
        { role: 'policy' },
      );
      expect(maxAbsDiff(other.logprobs, lp)).toBeGreaterThan(1e-3);
    });

    it('gives the same gradient of every trainable parameter for the same output gradients (1e-4 relative)', async () => {
      // a shared critic's values come from the policy's pass; a separate one takes its own backward
      const opts = { role: 'policy' as const, entropy: true, values: critic === 'shared' };
      await torch.backward(batch(), opts, (o) => gradsFor(o, 5));
      await local.backward(batch(), opts, (o) => gradsFor(o, 5));
      if (critic === 'separate')
        for (const engine of [torch, local]) await engine.backward(batch(), { role: 'critic' }, (o) => gradsFor(o, 6));
      for (const role of ['policy', 'critic'] as const) {
        const t = await torch.tensors(role, 'grad');
        const l = localGrads(local, role);
        expect([...t.keys()].sort()).toEqual([...l.keys()].sort());
        const tower = role === 'policy' ? !lora : critic === 'separate';
        expect(
          [...l.keys()].some((n) => n.startsWith('visual.')),
          `${role} tower trained`,
        ).toBe(tower);
        for (const [name, x] of l) {
          const y = t.get(name)!;
          // (a separate critic computes no log-probs: its lm_head takes no gradient in either engine)
          if (!(role === 'critic' && name === 'lm_head.weight'))
            expect(maxAbs(y), `${name} has a gradient`).toBeGreaterThan(0);
          expect(maxAbsDiff(x, y), `${name} (largest entry ${maxAbs(y)})`).toBeLessThanOrEqual(1e-4 * maxAbs(y) + 1e-8);
        }
        torch.zeroGrad(role);
        local.zeroGrad(role);
      }
    });

    it('samples the same greedy tokens from prompts with images, with the same log-probs (1e-4)', async () => {
      const prompts = [rows[0]!.slice(0, 25), rows[2]!.slice(0, 12)];
      const params = { maxNewTokens: 6, temperature: 0, seed: 1, images: [images[0], images[2]] };
      const a = await torch.generate(prompts, params);
      const b = await local.generate(prompts, params);
      a.forEach((g, i) => {
        expect(g.tokens, `prompt ${i}`).toEqual(b[i]!.tokens);
        expect(maxAbsDiff(g.logprobs, b[i]!.logprobs), `prompt ${i}`).toBeLessThan(1e-4);
      });
    });

    it.runIf(lora)(
      'saves a checkpoint naming the base (the tower frozen: adapter-only) that the local engine loads (1e-4)',
      async () => {
        const ckpt = join(root, 'torch-saved');
        await torch.save(ckpt);
        expect(readdirSync(ckpt).filter((f) => f.startsWith('model'))).toEqual([]);
        const processor = (d: string) => readFileSync(join(d, 'preprocessor_config.json'), 'utf8');
        expect(processor(ckpt)).toBe(processor(dir)); // the settings it read, not the defaults a reload would take
        const again = await LocalEngine.fromPretrained(ckpt, { backend: 'js', critic: 'shared' });
        try {
          for (const role of ['policy', 'critic'] as const) {
            const a = await again.forward(batch(), { role });
            const b = await torch.forward(batch(), { role });
            const k = role === 'policy' ? 'logprobs' : 'values';
            expect(maxAbsDiff(a[k]!, b[k]!), `${role} ${k}`).toBeLessThan(1e-4);
          }
        } finally {
          again.dispose();
        }
      },
      60_000,
    );
  },
);

describe.skipIf(!python)('TorchEngine on a text-only model', () => {
  it('refuses rows and prompts with images, naming the row and the fix', async () => {
    const torch = await TorchEngine.fromPretrained(join(import.meta.dirname, '../../models/ragen-tiny'), {
      python: python!,
      echoStderr: false,
    });
    try {
      expect(torch.vision).toBeUndefined();
      const text = [[3, 7, 5, 9]];
      await expect(torch.forward({ ...sequenceBatch(text), images: [[small]] }, { role: 'policy' })).rejects.toThrow(
        /Row 0 carries 1 image\(s\) but the torch worker's model is text-only; load a vision-language checkpoint/,
      );
      await expect(
        torch.generate(text, { maxNewTokens: 2, temperature: 0, seed: 1, images: [[small]] }),
      ).rejects.toThrow(/is text-only and cannot read the 1 image\(s\) of prompt 0/);
    } finally {
      torch.dispose();
    }
  }, 60_000);
});
