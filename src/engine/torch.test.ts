// The torch engine against the local engine on the same checkpoints (the shipped tiny model and a random Qwen3-style
// model with GQA, attention biases, untied embeddings and q/k norm; each also with LoRA): per-token outputs,
// gradients, weights after AdamW steps, greedy generations, sampled log-probs, checkpoints both ways.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LoraAdapters,
  loadModel,
  modelConfig,
  readSafetensors,
  saveModel,
  Transformer,
  ValueHead,
  writeSafetensors,
} from '../model/index.js';
import { loadTokenizer } from '../tokenizer/index.js';
import { Rng } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { LocalEngine } from './local.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';
import type { ForwardResult, OutputGradients, SequenceBatch, TrainableRole } from './types.js';

const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-torch-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const TINY = join(import.meta.dirname, '../../models/ragen-tiny');

/**
 * A checkpoint directory: the shipped model or a random Qwen3-style one, optionally with LoRA (B non-zero), and a value
 * head.
 */
async function fixture(name: string, base: 'tiny' | 'random', lora: boolean): Promise<string> {
  const dir = join(root, name);
  let m = (await loadModel(TINY)).model;
  if (base === 'random') {
    const cfg = modelConfig({
      modelType: 'qwen3',
      vocabSize: 96,
      hiddenSize: 64,
      intermediateSize: 96,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      qkvBias: true,
      oBias: true,
      tieWordEmbeddings: false,
    });
    // Transformer.init zeroes biases and sets unit norms: random ones make the comparison see them.
    const w = Transformer.init(cfg, 7, 0.1).exportWeights();
    const rng = new Rng(3);
    for (const [n, t] of w)
      if (n.endsWith('.bias') || n.endsWith('norm.weight'))
        t.data.forEach((_, i) => (t.data[i] = (n.endsWith('.bias') ? 0 : 1) + 0.2 * (rng.random() - 0.5)));
    m = Transformer.fromWeights(cfg, w);
  }
  if (lora) LoraAdapters.attach(m, { r: 4, alpha: 8, targetModules: 'all-linear' }, 5);
  await saveModel(dir, m, { valueHead: ValueHead.init(m.config.hiddenSize, 4, 0.3) });
  if (lora) {
    // Fresh adapters have B = 0 (no gradient reaches A): give B values so both matrices are tested.
    const path = join(dir, 'adapter', 'adapter_model.safetensors');
    const w = await readSafetensors(path);
    const rng = new Rng(11);
    for (const [n, t] of w)
      if (n.includes('lora_B')) t.data.forEach((_, i) => (t.data[i] = 0.1 * (rng.random() - 0.5)));
    await writeSafetensors(path, w);
  }
  return dir;
}

/** Rows sharing a 20-token prefix (the local engine runs it once) plus a short unrelated row. */
function batchFor(V: number): SequenceBatch {
  const rng = new Rng(21);
  const tok = () => Math.floor(rng.random() * V);
  const prefix = Array.from({ length: 20 }, tok);
  return sequenceBatch([
    [...prefix, ...Array.from({ length: 9 }, tok)],
    [...prefix, ...Array.from({ length: 4 }, tok)],
    Array.from({ length: 6 }, tok),
  ]);
}

/** Seeded output gradients for every output present. */
function gradsFor(out: ForwardResult, seed: number): OutputGradients {
  const rng = new Rng(seed);
  const g = (x?: Float32Array) => (x ? Float32Array.from(x, () => rng.random() - 0.5) : undefined);
  const r: OutputGradients = {};
  for (const k of ['logprobs', 'entropy', 'values'] as const) if (out[k]) r[k] = g(out[k]);
  return r;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]!));
  return m;
}

function localTensors(engine: LocalEngine, role: TrainableRole, what: 'param' | 'grad'): Map<string, Float32Array> {
  return new Map(
    engine
      .parameters(role)
      .map(([n, t]) => [
        n,
        what === 'grad' ? (t.grad?.toFloat32Array() ?? new Float32Array(t.size)) : t.toFloat32Array(),
      ]),
  );
}

/** Same names, and every tensor within `tol` x its largest entry (relative), or `abs` absolute. */
function expectSameTensors(
  a: Map<string, Float32Array>,
  b: Map<string, Float32Array>,
  tol: { rel?: number; abs?: number },
): void {
  expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
  for (const [name, x] of a) {
    const y = b.get(name)!;
    const bound = (tol.rel ?? 0) * maxAbs(y) + (tol.abs ?? 0);
    expect(maxAbsDiff(x, y), `${name} (largest entry ${maxAbs(y)})`).toBeLessThanOrEqual(bound);
  }
}

const CASES: [string, 'tiny' | 'random', boolean][] = [
  ['the shipped tiny model', 'tiny', false],
  ['the shipped tiny model with LoRA', 'tiny', true],
  ['a random Qwen3-style model (GQA, biases, untied, q/k norm)', 'random', false],
  ['a random Qwen3-style model with LoRA', 'random', true],
];

describe.skipIf(!python).each(CASES)('TorchEngine equals LocalEngine on %s', (name, base, lora) => {
  let local: LocalEngine;
  let torch: TorchEngine;
  let batch: SequenceBatch;
  let dir: string;

  beforeAll(async () => {
    dir = await fixture(name.replace(/\W+/g, '-'), base, lora);
    local = await LocalEngine.fromPretrained(dir, { critic: 'shared', reference: true });
    torch = await TorchEngine.fromPretrained(dir, {
      python: python!,
      critic: 'shared',
      reference: true,
      echoStderr: false,
    });
    batch = batchFor(local.policy.config.vocabSize);
  }, 60_000);
  afterAll(() => {
    local?.dispose();
    torch?.dispose();
  });

  it('gives the same per-token log-probs, entropy, values and reference log-probs (1e-4)', async () => {
    for (const role of ['policy', 'reference', 'critic'] as const) {
      const a = await torch.forward(batch, { role, entropy: true });
      const b = await local.forward(batch, { role, entropy: true });
      for (const k of ['logprobs', 'entropy', 'values'] as const) {
        expect(Boolean(a[k]), `${role} ${k} present`).toBe(Boolean(b[k]));
        if (b[k]) expect(maxAbsDiff(a[k]!, b[k]!), `${role} ${k}`).toBeLessThan(1e-4);
      }
    }
    const lp = (await local.forward(batch, { role: 'policy' })).logprobs;
    expect(maxAbs(lp)).toBeGreaterThan(0.1); // the comparison above compared real numbers
  });

  it('gives the same gradient of every trainable parameter for the same output gradients (1e-4 relative)', async () => {
    const opts = { role: 'policy' as const, entropy: true, values: true };
    const outT = await torch.backward(batch, opts, (o) => gradsFor(o, 5));
    await local.backward(batch, opts, (o) => gradsFor(o, 5));
    expect(outT.values).toBeDefined();
    for (const role of ['policy', 'critic'] as const) {
      const t = await torch.tensors(role, 'grad');
      expect(t.size).toBeGreaterThan(0);
      expect(
        [...t.values()].some((g) => maxAbs(g) > 0),
        `${role}: some gradient is non-zero`,
      ).toBe(true);
      expectSameTensors(t, localTensors(local, role, 'grad'), { rel: 1e-4, abs: 1e-8 });
      const [normT, normL] = [await torch.gradNorm(role), await local.gradNorm(role)];
      expect(normT).toBeGreaterThan(0);
      expect(Math.abs(normT - normL) / normL, `${role}: gradNorm`).toBeLessThan(1e-4);
      expect(await torch.gradNorm(role), 'gradNorm leaves the gradients as they are').toBe(normT);
      torch.zeroGrad(role);
      local.zeroGrad(role);
    }
    expect(
      [...(await torch.tensors('policy', 'grad')).values()].every((g) => maxAbs(g) === 0),
      'zeroGrad cleared the gradients',
    ).toBe(true);
  });

  it('samples greedily the same tokens, and its sampled log-probs equal teacher forcing (1e-4)', async () => {
    const prompts = [
      Array.from(batch.ids.subarray(0, 12)),
      Array.from(batch.ids.subarray(2 * batch.T, 2 * batch.T + 5)),
    ];
    const greedy = { maxNewTokens: 12, temperature: 0, seed: 1 };
    const a = await torch.generate(prompts, greedy);
    const b = await local.generate(prompts, greedy);
    expect(a.map((g) => g.tokens)).toEqual(b.map((g) => g.tokens));
    a.forEach((g, i) => expect(maxAbsDiff(g.logprobs, b[i]!.logprobs)).toBeLessThan(1e-4));
    for (const params of [
      { maxNewTokens: 10, temperature: 1, seed: 3 },
      { maxNewTokens: 10, temperature: 0.7, topP: 0.9, topK: 20, seed: 4 },
    ]) {
      const gens = await torch.generate(prompts, params);
      expect(await torch.generate(prompts, params), 'same seed, same tokens').toEqual(gens);
      const tf = sequenceBatch(prompts.map((p, i) => [...p, ...gens[i]!.tokens]));
      const fwd = await torch.forward(tf, { role: 'policy' });
      gens.forEach((g, i) => {
        expect(g.tokens.length).toBe(10);
        const teacher = fwd.logprobs.subarray(
          i * tf.T + prompts[i]!.length,
          i * tf.T + prompts[i]!.length + g.tokens.length,
        );
        expect(maxAbsDiff(g.logprobs, teacher)).toBeLessThan(1e-4);
      });
    }
  });

  it('item 12 (issue 34): refuses a prompt plus generation past the position table, as the local engine does', async () => {
    expect(torch.maxPositions).toBe(local.maxPositions);
    const prompt = Array.from({ length: torch.maxPositions - 4 }, (_, i) => 1 + (i % 50));
    const past = /has \d+ tokens and may generate 5 more .* past the model's \d+ positions/;
    await expect(torch.generate([prompt], { maxNewTokens: 5, temperature: 0, seed: 0 })).rejects.toThrow(past);
    await expect(local.generate([prompt], { maxNewTokens: 5, temperature: 0, seed: 0 })).rejects.toThrow(past);
  });

  it('holds the same weights after three AdamW steps with clipping, and reports the same gradient norms', async () => {
    const settings = { lr: 1e-3, weightDecay: 0.01, maxGradNorm: 0.5 };
    const before = await torch.tensors('policy');
    for (let step = 0; step < 3; step++) {
      for (const e of [torch, local]) {
        await e.backward(batch, { role: 'policy', entropy: true }, (o) => gradsFor(o, 30 + step));
      }
      const [rt, rl] = [await torch.optimizerStep('policy', settings), await local.optimizerStep('policy', settings)];
      expect(rt.skipped).toBe(false);
      expect(Math.abs(rt.gradNorm - rl.gradNorm)).toBeLessThan(1e-4 * rl.gradNorm);
      for (const e of [torch, local]) await e.backward(batch, { role: 'critic' }, (o) => gradsFor(o, 40 + step));
      await torch.optimizerStep('critic', settings);
      await local.optimizerStep('critic', settings);
      torch.zeroGrad('policy'); // the shared critic's backward also reached the trunk
      local.zeroGrad('policy');
    }
    // Adam moves an entry by about lr whatever its gradient's size, so where a gradient is at float-rounding level the
    // engines may step it differently: a quarter of one step (2.5e-4) is allowed, while wrong AdamW semantics (bias
    // correction, sign, decay) are off by about a step everywhere, and the steps moved the weights by far more.
    for (const role of ['policy', 'critic'] as const)
      expectSameTensors(await torch.tensors(role), localTensors(local, role, 'param'), { abs: 0.25 * settings.lr });
    const after = await torch.tensors('policy');
    expect(Math.max(...[...before].map(([n, w]) => maxAbsDiff(w, after.get(n)!)))).toBeGreaterThan(2e-3);
  });

  it.runIf(base === 'random')(
    'saves a checkpoint the local engine loads, and resumes exactly from its optimizer state',
    async () => {
      const ckpt = join(root, `${name.replace(/\W+/g, '-')}-saved`);
      await torch.save(ckpt, { optimizer: true });
      if (lora) {
        // adapter-only, as the local engine saves LoRA: the frozen base is named (absolute), not rewritten
        expect(readdirSync(ckpt).filter((f) => f.startsWith('model'))).toEqual([]);
        const adapter = JSON.parse(readFileSync(join(ckpt, 'adapter', 'adapter_config.json'), 'utf8')) as {
          base_model_name_or_path: string;
        };
        expect(adapter.base_model_name_or_path).toBe(resolve(dir));
      }
      const reloaded = await LocalEngine.fromPretrained(ckpt, { critic: 'shared' });
      const again = await TorchEngine.fromPretrained(ckpt, { python: python!, critic: 'shared', echoStderr: false });
      try {
        const a = await reloaded.forward(batch, { role: 'policy', entropy: true });
        const b = await torch.forward(batch, { role: 'policy', entropy: true });
        expect(maxAbsDiff(a.logprobs, b.logprobs)).toBeLessThan(1e-4);
        expect(
          maxAbsDiff(
            (await reloaded.forward(batch, { role: 'critic' })).values!,
            (await torch.forward(batch, { role: 'critic' })).values!,
          ),
        ).toBeLessThan(1e-4);
        // One more step from the saved optimizer state equals one more step of the running engine.
        await again.loadOptimizer(ckpt);
        await reloaded.loadOptimizer(ckpt);
        const settings = { lr: 1e-3, maxGradNorm: 0.5 };
        for (const e of [again, torch, reloaded]) {
          await e.backward(batch, { role: 'policy' }, (o) => gradsFor(o, 99));
          await e.optimizerStep('policy', settings);
        }
        const ref = await torch.tensors('policy');
        expectSameTensors(await again.tensors('policy'), ref, { abs: 1e-6 });
        expectSameTensors(localTensors(reloaded, 'policy', 'param'), ref, { abs: 0.25 * settings.lr });
      } finally {
        reloaded.dispose();
        again.dispose();
      }
    },
    60_000,
  );

  it.runIf(lora)(
    "loads the local engine's LoRA checkpoint (adapters naming their base, no base weights) with its log-probs",
    async () => {
      const ckpt = join(root, `${name.replace(/\W+/g, '-')}-local-saved`);
      await local.save(ckpt);
      expect(readdirSync(ckpt).filter((f) => f.startsWith('model'))).toEqual([]);
      const worker = await TorchEngine.fromPretrained(ckpt, { python: python!, critic: 'shared', echoStderr: false });
      try {
        for (const role of ['policy', 'critic'] as const) {
          const a = await worker.forward(batch, { role });
          const b = await local.forward(batch, { role });
          const k = role === 'policy' ? 'logprobs' : 'values';
          expect(maxAbsDiff(a[k]!, b[k]!), `${role} ${k}`).toBeLessThan(1e-4);
        }
      } finally {
        worker.dispose();
      }
    },
    60_000,
  );
});

describe.skipIf(!python)('TorchEngine stop strings', () => {
  it('stops where the local engine stops: greedy completions with stop strings are equal, cut after the token that completes one', async () => {
    const tok = loadTokenizer(TINY);
    const decode = (ids: number[]) => tok.decode(ids);
    const torch = await TorchEngine.fromPretrained(TINY, { python: python!, decode, echoStderr: false });
    const local = await LocalEngine.fromPretrained(TINY, { decode });
    try {
      const prompts = [
        'Turn 1:\nState:\n#####\n#_P_#\nYou have 2 actions left. Always output: <think>',
        'Hello',
        'Turn 1:',
      ].map((s) => tok.encode(s));
      const params = { maxNewTokens: 40, temperature: 0, seed: 0, stopStrings: ['</answer>', ')</think>'] };
      const [a, b] = [await torch.generate(prompts, params), await local.generate(prompts, params)];
      expect(a.map((g) => [g.tokens, g.finishReason])).toEqual(b.map((g) => [g.tokens, g.finishReason]));
      expect(a.some((g) => g.finishReason === 'stop')).toBe(true);
      for (const g of a.filter((x) => x.finishReason === 'stop')) {
        expect(params.stopStrings.some((s) => decode(g.tokens).includes(s))).toBe(true);
        expect(params.stopStrings.some((s) => decode(g.tokens.slice(0, -1)).includes(s))).toBe(false);
        expect(g.logprobs.length).toBe(g.tokens.length);
      }
    } finally {
      torch.dispose();
      local.dispose();
    }
  }, 60_000);
});

describe.skipIf(!python)('TorchEngine reads bf16 / f16 and sharded checkpoints', () => {
  it.each(['bfloat16', 'float16'])(
    '%s shards load in both engines with the same outputs',
    async (dtype) => {
      const dir = join(root, `tiny-${dtype}`);
      // Written by the worker's own writer: the weights cast to `dtype`, split into ~100 kB shards + index.
      const script = `import shutil, torch; from ragen_torch.safetensors_io import load_weights, save_weights
import os; os.makedirs(${JSON.stringify(dir)}, exist_ok=True)
for f in ("config.json", "tokenizer.json"): shutil.copy(os.path.join(${JSON.stringify(TINY)}, f), ${JSON.stringify(dir)})
save_weights(${JSON.stringify(dir)}, {k: v.to(torch.${dtype}) for k, v in load_weights(${JSON.stringify(TINY)}).items()}, max_shard_bytes=100_000)`;
      const r = spawnSync(python!, ['-c', script], {
        env: { ...process.env, PYTHONPATH: workerPackageDir() },
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      expect(readdirSync(dir).filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThan(2);
      const torch = await TorchEngine.fromPretrained(dir, { python: python!, echoStderr: false });
      const local = await LocalEngine.fromPretrained(dir);
      try {
        const batch = batchFor(1024);
        const [a, b] = [
          await torch.forward(batch, { role: 'policy', entropy: true }),
          await local.forward(batch, { role: 'policy', entropy: true }),
        ];
        expect(maxAbsDiff(a.logprobs, b.logprobs)).toBeLessThan(1e-4);
        expect(maxAbsDiff(a.entropy!, b.entropy!)).toBeLessThan(1e-4);
      } finally {
        torch.dispose();
        local.dispose();
      }
    },
    60_000,
  );
});

describe.skipIf(!python)('TorchEngine precision bfloat16 (autocast, emulated on the CPU)', () => {
  it('stays within bf16 tolerance of float32, samples consistently, and trains float32 weights', async () => {
    const opts = { python: python!, critic: 'shared' as const, lora: { r: 4, alpha: 8 }, seed: 2, echoStderr: false };
    const bf = await TorchEngine.fromPretrained(TINY, { ...opts, precision: 'bfloat16' });
    const f32 = await TorchEngine.fromPretrained(TINY, { ...opts, precision: 'float32' });
    try {
      expect([bf.info.precision, f32.info.precision]).toEqual(['bfloat16', 'float32']);
      const batch = batchFor(1024);
      const [a, b] = [
        await bf.forward(batch, { role: 'policy', entropy: true }),
        await f32.forward(batch, { role: 'policy', entropy: true }),
      ];
      // bf16 keeps 8 bits of mantissa: logits of size ~10 move by ~0.05. Measured max 0.08 on this model.
      const diff = a.logprobs.map((x, i) => Math.abs(x - b.logprobs[i]!));
      expect(Math.max(...diff)).toBeLessThan(0.25);
      expect(diff.reduce((s, x) => s + x, 0) / diff.length).toBeLessThan(0.03);
      expect(maxAbsDiff(a.logprobs, b.logprobs)).toBeGreaterThan(1e-5); // bf16 compute really ran
      const prompts = [
        [1, 2, 3, 4],
        [5, 6],
      ];
      const gens = await bf.generate(prompts, { maxNewTokens: 8, temperature: 1, seed: 5 });
      const tf = sequenceBatch(prompts.map((p, i) => [...p, ...gens[i]!.tokens]));
      const fwd = await bf.forward(tf, { role: 'policy' });
      gens.forEach((g, i) =>
        expect(
          maxAbsDiff(
            g.logprobs,
            fwd.logprobs.subarray(i * tf.T + prompts[i]!.length, i * tf.T + prompts[i]!.length + g.tokens.length),
          ),
        ).toBeLessThan(0.1),
      );
      for (const e of [bf, f32]) await e.backward(batch, { role: 'policy', values: true }, (o) => gradsFor(o, 6));
      const [gb, gf] = [await bf.tensors('policy', 'grad'), await f32.tensors('policy', 'grad')];
      let dot = 0,
        nb = 0,
        nf = 0;
      for (const [n, g] of gf) gb.get(n)!.forEach((x, i) => ((dot += x * g[i]!), (nb += x * x), (nf += g[i]! * g[i]!)));
      expect(dot / Math.sqrt(nb * nf), 'cosine of the bf16 and float32 gradients').toBeGreaterThan(0.99);
      // Float32 master weights: a step of ~1e-5 on LoRA A entries of size ~0.1 (bf16 spacing there ~4e-4) still lands.
      // (A first gets a gradient once B is non-zero: one step at lr 1e-3 for B, then one at 1e-5.)
      expect((await bf.optimizerStep('policy', { lr: 1e-3 })).skipped).toBe(false);
      await bf.backward(batch, { role: 'policy' }, (o) => gradsFor(o, 7));
      const before = await bf.tensors('policy');
      expect((await bf.optimizerStep('policy', { lr: 1e-5 })).skipped).toBe(false);
      const after = await bf.tensors('policy');
      for (const [n, w] of before) {
        if (!n.includes('lora_A')) continue;
        const moved = w.filter((x, i) => Math.abs(x - after.get(n)![i]!) > 3e-6).length;
        expect(moved / w.length, `${n}: share of entries that moved`).toBeGreaterThan(0.5); // bf16 weights: ~2% could
      }
    } finally {
      bf.dispose();
      f32.dispose();
    }
  }, 60_000);
});
