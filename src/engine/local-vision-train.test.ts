// The local engine training on rows with images (Qwen2.5-VL): teacher-forced outputs of an image row equal the model's
// own pass over it with its pixels while text rows in the same batch keep the text paths; the gradient of every kind of
// weight (language model, tower with model.vision.train, value head) equals central finite differences of the same
// surrogate; a saved VLM loads again with the same outputs (and in transformers, with the same log-probs).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VisualFrozenLakeEnv } from '../envs/frozen-lake/visual.js';
import { Qwen25VL, vlTokenOutputs, writeSafetensors, type WeightMap } from '../model/index.js';
import { IMAGE, jitteredVL, TINY_VL_JSON } from '../model/qwen2-vl-testing.js';
import { getBackend, liveTensors, noGrad, setBackend, type Tensor } from '../tensor/index.js';
import { pixelValues } from '../tokenizer/index.js';
import { Rng, type RgbImage } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { runWorkerPython, wheelPythonForTests } from './torch-testing.js';
import { LocalEngine } from './local.js';
import { loadVisionProcessor } from './local-vision.js';
import type { ForwardResult, OutputGradients, SequenceBatch } from './types.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-local-vl-train-'));
const dir = join(root, 'vl');
const prev = getBackend().name;
afterAll(() => {
  setBackend(prev);
  rmSync(root, { recursive: true, force: true });
});

/** 56 x 56 lakes: a 4 x 4 patch grid each, 4 <|image_pad|> tokens. */
const lakes: RgbImage[] = [2, 5].map(
  (seed) => new VisualFrozenLakeEnv({ size: 4, tileSize: 14 }).reset({ seed }).images![0]!,
);
const pads = [20, IMAGE, IMAGE, IMAGE, IMAGE, 23];
/** Two turns, each with its image; a text row; a row with one image. */
const rows = [
  [3, 7, ...pads, 5, 9, 11, 4, ...pads, 8, 2, 6],
  [3, 7, 5, 9, 11, 12, 13],
  [3, ...pads, 30, 31, 32],
];
const images = [[lakes[0]!, lakes[1]!], undefined, [lakes[1]!]];
const batch = (): SequenceBatch => ({ ...sequenceBatch(rows), images });

beforeAll(async () => {
  setBackend('js');
  const m = jitteredVL(8);
  const weights: WeightMap = new Map();
  for (const [name, t] of [...m.lm.weights, ...m.visual.weights])
    weights.set(name, { shape: [...t.shape], data: t.toFloat32Array() });
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(TINY_VL_JSON));
  await writeSafetensors(join(dir, 'model.safetensors'), weights);
  m.dispose();
});

const python = wheelPythonForTests();
/** transformers loads a saved directory and scores one row with its pixel values: log p(token t | < t), t >= 1. */
const TRANSFORMERS = `
import json, sys
import numpy as np, torch
from transformers import Qwen2_5_VLForConditionalGeneration
d = sys.argv[1]
args = json.load(open(d + "/args.json"))
model, info = Qwen2_5_VLForConditionalGeneration.from_pretrained(d, output_loading_info=True, dtype=torch.float32)
model.eval()
ids = torch.tensor([args["ids"]])
pv = torch.from_numpy(np.fromfile(d + "/pixels.bin", dtype=np.float32)).reshape(-1, 1176)
with torch.no_grad():
    r = model(input_ids=ids, pixel_values=pv, image_grid_thw=torch.tensor(args["grids"]),
              mm_token_type_ids=(ids == model.config.image_token_id).int())
# the policy's distribution leaves out the vision tokens (docs/vision.md); a vision target scores 0
c = json.load(open(d + "/config.json"))
off = torch.tensor([c[k] for k in ("vision_start_token_id", "vision_end_token_id", "vision_token_id", "image_token_id", "video_token_id") if c.get(k, 1 << 30) < c["vocab_size"]])
z = r.logits[0, :-1].double().index_fill(-1, off, float("-inf"))
lp = torch.log_softmax(z, -1).gather(-1, ids[0, 1:, None])[:, 0].masked_fill(torch.isin(ids[0, 1:], off), 0.0)
print(json.dumps({"logprobs": lp.tolist(), "info": {k: list(v) for k, v in info.items() if v}}))
`;

/** Row b's outputs (tokens 1..L-1) of a (B, T) result. */
const row = (x: Float32Array, b: number, T: number, L: number) => Array.from(x.subarray(b * T + 1, b * T + L));

function close(a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what: string): void {
  expect(a.length, what).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  expect(worst, what).toBeLessThan(tol);
}

/**
 * `t`'s gradient (from a backward of `surrogate`) at `count` entries (`entry(size)` picks each) equals central finite
 * differences of `surrogate` (step 1e-3), and some entry is non-zero.
 */
async function expectFiniteDifferences(
  name: string,
  t: Tensor,
  surrogate: () => Promise<number>,
  count: number,
  entry: (size: number) => number,
): Promise<void> {
  const eps = 1e-3;
  const data = Float64Array.from(t.toFloat32Array());
  const grad = t.grad!.toFloat32Array();
  for (let n = 0; n < count; n++) {
    const j = entry(data.length);
    const at = async (v: number) => {
      const d = Float64Array.from(data);
      d[j] = v;
      t.backend.write(t.buf, d);
      return surrogate();
    };
    const numeric = ((await at(data[j]! + eps)) - (await at(data[j]! - eps))) / (2 * eps);
    t.backend.write(t.buf, data);
    expect(Math.abs(grad[j]! - numeric), `${name}[${j}]: analytic ${grad[j]} numeric ${numeric}`).toBeLessThan(
      2e-3 + 1e-2 * Math.abs(numeric),
    );
  }
  expect(
    grad.some((x) => x !== 0),
    `${name} has a gradient`,
  ).toBe(true);
}

describe('LocalEngine trains on rows with images', () => {
  it("scores an image row as the VLM's own pass with its pixels, a text row as the text path, each role", async () => {
    const engine = await LocalEngine.fromPretrained(dir, { backend: 'js', critic: 'shared', reference: true });
    const vl = await Qwen25VL.load(dir);
    const b = batch();
    const policy = await engine.forward(b, { role: 'policy', entropy: true });
    const reference = await engine.forward(b, { role: 'reference' });
    const critic = await engine.forward(b, { role: 'critic' });
    for (const r of [0, 2]) {
      const pv = pixelValues(images[r]!);
      const own = noGrad(() => {
        const o = vlTokenOutputs(
          vl,
          Int32Array.from(rows[r]!),
          { pixels: pv.data, grids: pv.grids },
          {
            logprobs: true,
            entropy: true,
          },
        );
        return { logprobs: o.logprobs!.toFloat32Array(), entropy: o.entropy!.toFloat32Array() };
      });
      const L = rows[r]!.length;
      close(row(policy.logprobs, r, b.T, L), own.logprobs, 1e-5, `row ${r} log-probs`);
      close(row(policy.entropy!, r, b.T, L), own.entropy, 1e-5, `row ${r} entropy`);
      close(row(reference.logprobs, r, b.T, L), own.logprobs, 1e-5, `row ${r} reference log-probs`);
      expect(row(critic.values!, r, b.T, L).every((v) => Number.isFinite(v) && v !== 0)).toBe(true);
    }
    // the text row as a batch of its own (the text paths), and without its pixels an image row is refused
    const text = await engine.forward(sequenceBatch([rows[1]!]), { role: 'policy', entropy: true });
    close(
      row(policy.logprobs, 1, b.T, rows[1]!.length),
      row(text.logprobs, 0, rows[1]!.length, rows[1]!.length),
      1e-5,
      'text row',
    );
    await expect(engine.forward(sequenceBatch(rows), { role: 'policy' })).rejects.toThrow(
      /Row 0 of the batch holds 8 <\|image_pad\|> tokens but no images/,
    );
    await expect(
      engine.forward({ ...sequenceBatch(rows), images: [[lakes[0]!], undefined, [lakes[1]!]] }, { role: 'policy' }),
    ).rejects.toThrow(/Row 0 of the batch holds 8 <\|image_pad\|> tokens; its 1 image\(s\) take 4/);
    // the pixels matter: other images, other log-probs
    const swapped = await engine.forward(
      { ...b, images: [[lakes[1]!, lakes[0]!], undefined, [lakes[0]!]] },
      { role: 'policy' },
    );
    expect(row(swapped.logprobs, 2, b.T, rows[2]!.length)).not.toEqual(row(policy.logprobs, 2, b.T, rows[2]!.length));
    vl.dispose();
    engine.dispose();
  });

  it('gives the language model, the trained tower and the value head the gradients finite differences give', async () => {
    setBackend('js64');
    const engine = await LocalEngine.fromPretrained(dir, { backend: 'js64', critic: 'shared', visionTrain: true });
    const b = batch();
    const rng = new Rng(17);
    const g = Float32Array.from({ length: b.B * b.T }, () => rng.normal());
    const grads = (_out: ForwardResult): OutputGradients => ({
      logprobs: g,
      entropy: g.map((x) => 0.5 * x),
      values: g,
    });
    // the surrogate the engine differentiates: sum(g * logprobs + g/2 * entropy + g * values)
    const surrogate = async (): Promise<number> => {
      const p = await engine.forward(b, { role: 'policy', entropy: true });
      const c = await engine.forward(b, { role: 'critic' });
      let s = 0;
      for (let i = 0; i < g.length; i++) s += g[i]! * (p.logprobs[i]! + 0.5 * p.entropy![i]! + c.values![i]!);
      return s;
    };
    await engine.backward(b, { role: 'policy', entropy: true, values: true }, grads);
    const params = new Map([...engine.parameters('policy'), ...engine.parameters('critic')]);
    expect(params.has('visual.blocks.0.attn.qkv.weight')).toBe(true);
    for (const name of [
      'model.layers.1.self_attn.q_proj.weight',
      'model.embed_tokens.weight',
      'visual.blocks.0.attn.qkv.weight',
      'visual.patch_embed.proj.weight',
      'visual.merger.mlp.2.weight',
      'value_head.weight',
    ]) {
      const pick = new Rng(5);
      // embed_tokens: an image row's token (its rows matter); others: any entry
      const entry = (n: number) => (name === 'model.embed_tokens.weight' ? 30 * 16 + pick.int(16) : pick.int(n));
      await expectFiniteDifferences(name, params.get(name)!, surrogate, 4, entry);
    }
    engine.dispose();
    setBackend('js');
  });

  it('runs a separate critic as a VLM of its own: values from the pixels, its gradients, saved under critic/', async () => {
    setBackend('js64');
    const engine = await LocalEngine.fromPretrained(dir, { backend: 'js64', critic: 'separate', visionTrain: true });
    const b = batch();
    const names = engine.parameters('critic').map(([n]) => n);
    expect(names).toEqual(expect.arrayContaining(['visual.blocks.0.attn.qkv.weight', 'value_head.weight']));
    // the critic's pass reads the images: other pixels, other values in the image rows
    const values = (await engine.forward(b, { role: 'critic' })).values!;
    const swapped = (
      await engine.forward({ ...b, images: [[lakes[1]!, lakes[0]!], undefined, [lakes[0]!]] }, { role: 'critic' })
    ).values!;
    expect(row(swapped, 2, b.T, rows[2]!.length)).not.toEqual(row(values, 2, b.T, rows[2]!.length));
    const rng = new Rng(23);
    const g = Float32Array.from({ length: b.B * b.T }, () => rng.normal());
    const surrogate = async (): Promise<number> => {
      const v = (await engine.forward(b, { role: 'critic' })).values!;
      return v.reduce((s, x, i) => s + g[i]! * x, 0);
    };
    await engine.backward(b, { role: 'critic' }, () => ({ values: g }));
    const params = new Map(engine.parameters('critic'));
    // the critic's tower and trunk are not the policy's: the policy takes no gradient from the value loss
    const policyTower = new Map(engine.parameters('policy')).get('visual.blocks.0.attn.qkv.weight')!;
    expect(policyTower).not.toBe(params.get('visual.blocks.0.attn.qkv.weight'));
    expect(policyTower.grad?.toFloat32Array().some((x) => x !== 0) ?? false).toBe(false);
    for (const name of [
      'visual.patch_embed.proj.weight',
      'visual.merger.mlp.2.weight',
      'model.layers.0.mlp.up_proj.weight',
    ]) {
      const pick = new Rng(9);
      await expectFiniteDifferences(name, params.get(name)!, surrogate, 3, (n) => pick.int(n));
    }
    await engine.optimizerStep('critic', { lr: 0.05 });
    const trained = (await engine.forward(b, { role: 'critic' })).values!;
    const out = join(root, 'saved-critic');
    await engine.save(out);
    expect(JSON.parse(readFileSync(join(out, 'critic', 'config.json'), 'utf8')).model_type).toBe('qwen2_5_vl');
    const again = await LocalEngine.fromPretrained(out, { backend: 'js64', critic: 'separate' });
    close((await again.forward(b, { role: 'critic' })).values!, trained, 1e-6, 'reloaded critic values');
    expect(row(trained, 0, b.T, rows[0]!.length)).not.toEqual(row(values, 0, b.T, rows[0]!.length));
    again.dispose();
    engine.dispose();
    setBackend('js');
    // a text-only critic cannot read the images: refused naming the directory and the fix
    await expect(
      LocalEngine.fromPretrained(dir, {
        backend: 'js',
        critic: 'separate',
        criticPath: join(import.meta.dirname, '../../models/ragen-tiny'),
      }),
    ).rejects.toThrow(/ragen-tiny is not a Qwen2.5-VL checkpoint.*model\.critic\.path/);
  });

  it('keeps a frozen tower out of the parameters; LoRA gets the gradients; no tensor leaks', async () => {
    const engine = await LocalEngine.fromPretrained(dir, { backend: 'js', lora: { r: 2, alpha: 4 } });
    await engine.backward(batch(), { role: 'policy' }, (o) => ({ logprobs: o.logprobs.map(() => 1) }));
    const names = engine.parameters('policy').map(([n]) => n);
    expect(names.length).toBeGreaterThan(0);
    expect(names.every((n) => n.includes('lora_'))).toBe(true);
    expect(engine.parameters('policy').some(([, t]) => t.grad && t.grad.toFloat32Array().some((x) => x !== 0))).toBe(
      true,
    );
    // no tensor outlives a pass or a step
    const round = async () => {
      await engine.forward(batch(), { role: 'policy', entropy: true });
      await engine.backward(batch(), { role: 'policy', entropy: true }, (o) => ({ logprobs: o.logprobs.map(() => 1) }));
      await engine.optimizerStep('policy', { lr: 1e-3 });
    };
    await round();
    const live = liveTensors();
    await round();
    expect(liveTensors()).toBe(live);
    engine.dispose();
    await expect(
      LocalEngine.fromPretrained(join(import.meta.dirname, '../../models/ragen-tiny'), {
        backend: 'js',
        visionTrain: true,
      }),
    ).rejects.toThrow(/model.vision.train: true needs a vision-language checkpoint/);
  });

  it('gives image rows the same gradients with gradient checkpointing as without', async () => {
    const grads = async (gradientCheckpointing: boolean) => {
      const engine = await LocalEngine.fromPretrained(dir, {
        backend: 'js',
        critic: 'shared',
        visionTrain: true,
        gradientCheckpointing,
      });
      await engine.backward(batch(), { role: 'policy', entropy: true, values: true }, (o) => ({
        logprobs: o.logprobs.map((_, i) => Math.sin(i)),
        entropy: o.entropy!.map((_, i) => Math.cos(i)),
        values: o.values!.map(() => 1),
      }));
      const out = [...engine.parameters('policy'), ...engine.parameters('critic')].map(([, t]) =>
        t.grad!.toFloat32Array(),
      );
      engine.dispose();
      return out;
    };
    const [plain, checkpointed] = [await grads(false), await grads(true)];
    plain.forEach((g, i) => close(checkpointed[i]!, g, 1e-6, `parameter ${i}`));
    expect(plain.some((g) => g.some((x) => x !== 0))).toBe(true);
  });

  for (const lora of [false, true])
    it(`saves a trained VLM${lora ? ' with LoRA' : ''} (vision_config, mrope_section, visual.*) that loads with the same outputs`, async () => {
      const engine = await LocalEngine.fromPretrained(dir, {
        backend: 'js',
        critic: 'shared',
        visionTrain: !lora,
        ...(lora ? { lora: { r: 2, alpha: 4 } } : {}),
      });
      const b = batch();
      const rng = new Rng(3);
      for (let step = 0; step < 2; step++) {
        await engine.backward(b, { role: 'policy', values: true }, (o) => ({
          logprobs: o.logprobs.map(() => rng.normal()),
          values: o.values!.map(() => rng.normal()),
        }));
        await engine.optimizerStep('policy', { lr: 0.05 });
        await engine.optimizerStep('critic', { lr: 0.05 });
      }
      const out = join(root, `saved-${lora}`);
      await engine.save(out);
      const json = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')) as Record<string, any>;
      expect(json.model_type).toBe('qwen2_5_vl');
      expect(json.rope_scaling.mrope_section).toEqual(TINY_VL_JSON.text_config.rope_parameters.mrope_section);
      expect(json.vision_config.fullatt_block_indexes).toEqual(TINY_VL_JSON.vision_config.fullatt_block_indexes);
      expect(existsSync(join(out, 'adapter', 'adapter_config.json'))).toBe(lora);
      expect(await loadVisionProcessor(out)).toEqual(await loadVisionProcessor(dir));
      const again = await LocalEngine.fromPretrained(out, { backend: 'js', critic: 'shared' });
      for (const role of ['policy', 'critic'] as const) {
        const a = await engine.forward(b, { role, entropy: true });
        const c = await again.forward(b, { role, entropy: true });
        for (const k of ['logprobs', 'entropy', 'values'] as const) if (a[k]) close(c[k]!, a[k], 1e-6, `${role} ${k}`);
      }
      if (python && !lora) {
        // transformers reads the save: no missing or unexpected tensor, the image row's log-probs equal (1e-4)
        const pv = pixelValues(images[2]!);
        writeFileSync(join(out, 'pixels.bin'), pv.data);
        writeFileSync(join(out, 'args.json'), JSON.stringify({ ids: rows[2], grids: pv.grids }));
        const r = runWorkerPython(python, ['-c', TRANSFORMERS, out], 180_000);
        expect(r.status, r.stderr).toBe(0);
        const theirs = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { logprobs: number[]; info: object };
        expect(theirs.info).toEqual({});
        const ours = (await engine.forward(b, { role: 'policy' })).logprobs;
        close(theirs.logprobs, row(ours, 2, b.T, rows[2]!.length), 1e-4, 'transformers log-probs');
      }
      const first = await LocalEngine.fromPretrained(dir, { backend: 'js' });
      const before = await first.forward(b, { role: 'policy' });
      const after = await again.forward(b, { role: 'policy' });
      expect(row(after.logprobs, 0, b.T, rows[0]!.length)).not.toEqual(row(before.logprobs, 0, b.T, rows[0]!.length));
      first.dispose();
      again.dispose();
      engine.dispose();
    });
});
