// `ragen model init`: each shape's config.json carries the published Hugging Face values (written out below from
// the published config.json files, not read from our table), and a tiny directory of each family loads in both engines.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { torchPythonForTests } from '../../engine/torch-testing.js';
import { workerPackageDir } from '../../engine/torch-worker.js';
import {
  configFromHF,
  countParameters,
  loadModel,
  loadModelConfig,
  modelShape,
  planShards,
  readSafetensors,
  weightShapes,
} from '../../model/index.js';
import { noGrad, setBackend } from '../../tensor/index.js';
import { appendOnlyViolation, loadTokenizer } from '../../tokenizer/index.js';
import { runCli } from '../testing.js';
import { initModelDir } from './model-init.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-model-init-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const json = (dir: string, file: string) =>
  JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;

// The published config.json of each Instruct model (Hugging Face, Qwen/<name>-Instruct and Qwen/Qwen3-<size>).
const QWEN25 = {
  model_type: 'qwen2',
  architectures: ['Qwen2ForCausalLM'],
  rope_theta: 1000000,
  rms_norm_eps: 1e-6,
  max_position_embeddings: 32768,
  bos_token_id: 151643,
  eos_token_id: 151645,
  hidden_act: 'silu',
  use_sliding_window: false,
};
const QWEN3 = {
  model_type: 'qwen3',
  architectures: ['Qwen3ForCausalLM'],
  rope_theta: 1000000,
  rms_norm_eps: 1e-6,
  max_position_embeddings: 40960,
  bos_token_id: 151643,
  eos_token_id: 151645,
  hidden_act: 'silu',
  attention_bias: false,
  head_dim: 128,
};
const PUBLISHED: Record<string, Record<string, unknown>> = {
  'qwen2.5-0.5b': {
    ...QWEN25,
    vocab_size: 151936,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    tie_word_embeddings: true,
  },
  'qwen2.5-1.5b': {
    ...QWEN25,
    vocab_size: 151936,
    hidden_size: 1536,
    intermediate_size: 8960,
    num_hidden_layers: 28,
    num_attention_heads: 12,
    num_key_value_heads: 2,
    tie_word_embeddings: true,
  },
  'qwen2.5-3b': {
    ...QWEN25,
    vocab_size: 151936,
    hidden_size: 2048,
    intermediate_size: 11008,
    num_hidden_layers: 36,
    num_attention_heads: 16,
    num_key_value_heads: 2,
    tie_word_embeddings: true,
  },
  'qwen2.5-7b': {
    ...QWEN25,
    vocab_size: 152064,
    hidden_size: 3584,
    intermediate_size: 18944,
    num_hidden_layers: 28,
    num_attention_heads: 28,
    num_key_value_heads: 4,
    tie_word_embeddings: false,
  },
  'qwen3-0.6b': {
    ...QWEN3,
    vocab_size: 151936,
    hidden_size: 1024,
    intermediate_size: 3072,
    num_hidden_layers: 28,
    num_attention_heads: 16,
    num_key_value_heads: 8,
    tie_word_embeddings: true,
  },
  'qwen3-1.7b': {
    ...QWEN3,
    vocab_size: 151936,
    hidden_size: 2048,
    intermediate_size: 6144,
    num_hidden_layers: 28,
    num_attention_heads: 16,
    num_key_value_heads: 8,
    tie_word_embeddings: true,
  },
};
// Parameter counts as the model cards give them, in billions (Qwen2.5-0.5B's and 7B's exactly, from their safetensors).
const BILLIONS: Record<string, [number, number]> = {
  'qwen2.5-0.5b': [0.494032768, 1e-9],
  'qwen2.5-1.5b': [1.54, 0.005],
  'qwen2.5-3b': [3.09, 0.005],
  'qwen2.5-7b': [7.615616512, 1e-9],
  'qwen3-0.6b': [0.6, 0.05],
  'qwen3-1.7b': [1.7, 0.05],
};

describe('ragen model init', () => {
  for (const [shape, published] of Object.entries(PUBLISHED)) {
    it(`writes ${shape}'s config.json with the published values`, async () => {
      const dir = join(root, `cfg-${shape}`);
      const r = await initModelDir(dir, shape, { weights: false });
      const cfg = json(dir, 'config.json');
      for (const [key, value] of Object.entries(published)) expect(cfg[key], key).toEqual(value);
      expect(cfg['torch_dtype']).toBe('bfloat16');
      const [billions, tol] = BILLIONS[shape]!;
      expect(Math.abs(r.parameters / 1e9 - billions)).toBeLessThanOrEqual(tol);
      expect(countParameters(await loadModelConfig(dir))).toBe(r.parameters);
      expect(json(dir, 'generation_config.json')).toEqual({ bos_token_id: 151643, eos_token_id: 151645 });
    });
  }

  it('plans the 7B in bf16 as shards of at most 1 GiB, the embedding and the untied head alone; the 0.5B in one file', () => {
    const GiB = 2 ** 30;
    const q7 = configFromHF(modelShape('qwen2.5-7b').config);
    const shards = planShards(q7, 2, GiB);
    const big = shards.filter((s) => s.reduce((a, t) => a + 2 * t.numel, 0) > GiB);
    // 152064 x 3584 bf16 = 1.09e9 bytes, just over 1 GiB: each such tensor gets a shard of its own.
    expect(big.map((s) => s.map((t) => t.name))).toEqual([['model.embed_tokens.weight'], ['lm_head.weight']]);
    expect(shards.flat().map((t) => t.name)).toEqual([...weightShapes(q7).keys()]);
    expect(shards.flat().reduce((a, t) => a + t.numel, 0)).toBe(7615616512);
    expect(shards.length).toBeGreaterThanOrEqual(15); // 15.2 GB
    expect(planShards(configFromHF(modelShape('qwen2.5-0.5b').config), 2, GiB)).toHaveLength(1); // 0.99 GB: model.safetensors
  });

  it("ships Qwen2.5's tokenizer for qwen2.5 shapes and Qwen3's for qwen3 ones, each with an append-only template", async () => {
    const q25 = loadTokenizer(join(root, 'cfg-qwen2.5-0.5b'));
    const q3 = loadTokenizer(join(root, 'cfg-qwen3-0.6b'));
    expect(q25.vocabSize).toBe(151665);
    expect(q3.vocabSize).toBe(151669);
    expect(q3.encode('<think>')).toEqual([151667]);
    expect(q25.encode('<think>').length).toBeGreaterThan(1);
    expect(appendOnlyViolation(q25)).toBeNull();
    expect(appendOnlyViolation(q3)).toBeNull();
  });

  const tinyDirs: Record<string, string> = {};
  // V 151936 x C 64 embeddings (twice when untied) + 2 layers + the final norm, counted by hand from the shapes.
  const TINY_PARAMS: Record<string, string> = { 'qwen2.5-tiny': '19.5M', 'qwen3-tiny': '9.8M' };
  for (const shape of ['qwen2.5-tiny', 'qwen3-tiny']) {
    it(`writes ${shape} through the CLI: seeded N(0, 0.02) weights, norms 1, biases 0, loaded by the local engine`, async () => {
      const dir = join(root, shape);
      const { code, out, err } = await runCli(
        'model',
        'init',
        '--shape',
        shape,
        '--out',
        dir,
        '--seed',
        '3',
        '--dtype',
        'f32',
      );
      expect(code, err).toBe(0);
      expect(out).toContain(`${shape}, ${TINY_PARAMS[shape]} parameters (f32`);
      tinyDirs[shape] = dir;
      const w = await readSafetensors(join(dir, 'model.safetensors'));
      const embed = w.get('model.embed_tokens.weight')!;
      expect(embed.shape).toEqual([151936, 64]);
      let sum = 0;
      let sq = 0;
      for (const x of embed.data) ((sum += x), (sq += x * x));
      const n = embed.data.length;
      expect(Math.abs(sum / n)).toBeLessThan(2e-4);
      expect(Math.sqrt(sq / n - (sum / n) ** 2)).toBeCloseTo(0.02, 4);
      for (const [name, t] of w) {
        if (name.endsWith('norm.weight'))
          expect(
            t.data.every((x) => x === 1),
            name,
          ).toBe(true);
        if (name.endsWith('.bias'))
          expect(
            t.data.every((x) => x === 0),
            name,
          ).toBe(true);
      }
      expect(w.has('model.layers.0.self_attn.q_proj.bias')).toBe(shape === 'qwen2.5-tiny'); // Qwen2's q/k/v biases
      expect(w.has('model.layers.1.self_attn.q_norm.weight')).toBe(shape === 'qwen3-tiny'); // Qwen3's q/k norms
      expect(w.has('lm_head.weight')).toBe(shape === 'qwen2.5-tiny'); // the tiny Qwen2.5 keeps an untied head
      const { model } = await loadModel(dir);
      expect(model.config.headDim).toBe(shape === 'qwen3-tiny' ? 32 : 16);
      model.dispose();
    }, 300_000);
  }

  it('same seed, same bytes; another seed, other weights; bf16 is the f32 weights rounded', async () => {
    const a = join(root, 'seed-a');
    const b = join(root, 'seed-b');
    const c = join(root, 'seed-c');
    const bf = join(root, 'seed-bf16');
    await initModelDir(a, 'qwen3-tiny', { seed: 3, dtype: 'f32' });
    await initModelDir(b, 'qwen3-tiny', { seed: 3, dtype: 'f32' });
    await initModelDir(c, 'qwen3-tiny', { seed: 4, dtype: 'f32' });
    await initModelDir(bf, 'qwen3-tiny', { seed: 3 });
    const bytes = (d: string) => readFileSync(join(d, 'model.safetensors'));
    expect(bytes(a).equals(bytes(b))).toBe(true);
    expect(bytes(a).equals(bytes(c))).toBe(false);
    const f32 = (await readSafetensors(join(a, 'model.safetensors'))).get('model.layers.0.mlp.up_proj.weight')!.data;
    const b16 = (await readSafetensors(join(bf, 'model.safetensors'))).get('model.layers.0.mlp.up_proj.weight')!.data;
    for (let i = 0; i < f32.length; i += 97)
      expect(Math.abs(b16[i]! - f32[i]!)).toBeLessThanOrEqual(Math.abs(f32[i]!) / 256);
    expect(json(bf, 'config.json')['torch_dtype']).toBe('bfloat16');
  }, 300_000);

  it("shards in Hugging Face's layout past --max-shard-mb, and the shards load as the single file does", async () => {
    const dir = join(root, 'sharded');
    const { code, err } = await runCli(
      'model',
      'init',
      '--shape',
      'qwen2.5-tiny',
      '--out',
      dir,
      '--seed',
      '3',
      '--dtype',
      'f32',
      '--max-shard-mb',
      '20',
    );
    expect(code, err).toBe(0);
    // 151936 x 64 f32 is 37.1 MiB: the embedding and the untied head each pass 20 MiB, so each gets a shard.
    const shards = readdirSync(dir)
      .filter((f) => f.endsWith('.safetensors'))
      .sort();
    expect(shards).toEqual([
      'model-00001-of-00003.safetensors',
      'model-00002-of-00003.safetensors',
      'model-00003-of-00003.safetensors',
    ]);
    const index = json(dir, 'model.safetensors.index.json') as {
      metadata: { total_size: number };
      weight_map: Record<string, string>;
    };
    expect(index.weight_map['model.embed_tokens.weight']).toBe('model-00001-of-00003.safetensors');
    expect(index.weight_map['lm_head.weight']).toBe('model-00003-of-00003.safetensors');
    setBackend('js');
    const { model: sharded } = await loadModel(dir);
    const singleDir = join(root, 'single');
    await initModelDir(singleDir, 'qwen2.5-tiny', { seed: 3, dtype: 'f32' });
    const { model: single } = await loadModel(singleDir);
    expect(index.metadata.total_size).toBe(4 * countParameters(single.config));
    const ids = Int32Array.from([151644, 872, 198, 6023, 151645]);
    const l1 = noGrad(() => sharded.logits(sharded.hidden(ids, 1, 5)).toFloat32Array());
    const l2 = noGrad(() => single.logits(single.hidden(ids, 1, 5)).toFloat32Array());
    expect(Buffer.from(l1.buffer).equals(Buffer.from(l2.buffer))).toBe(true);
    sharded.dispose();
    single.dispose();
  }, 300_000);

  const python = torchPythonForTests();
  it.runIf(python)(
    "the torch worker loads each tiny family and computes the local engine's logits",
    async () => {
      setBackend('js');
      for (const shape of ['qwen2.5-tiny', 'qwen3-tiny']) {
        const dir = tinyDirs[shape]!;
        const ids = [151644, 872, 198, 6023, 151645, 13708, 766, 29];
        const script = [
          'import json, sys, torch',
          'from ragen_torch.model import load_decoder',
          'm = load_decoder(sys.argv[1], "cpu")',
          'with torch.no_grad():',
          '    _, logits = m(torch.tensor([json.loads(sys.argv[2])]), with_logits=True)',
          'print(json.dumps(logits.flatten().tolist()))',
        ].join('\n');
        const outText = execFileSync(python!, ['-c', script, dir, JSON.stringify(ids)], {
          env: { ...process.env, PYTHONPATH: workerPackageDir() },
          maxBuffer: 1 << 28,
        }).toString();
        const theirs = JSON.parse(outText) as number[];
        const { model } = await loadModel(dir);
        const ours = noGrad(() => model.logits(model.hidden(Int32Array.from(ids), 1, ids.length)).toFloat32Array());
        expect(theirs.length).toBe(ours.length);
        let err = 0;
        let scale = 0;
        for (let i = 0; i < ours.length; i++)
          ((err = Math.max(err, Math.abs(ours[i]! - theirs[i]!))), (scale = Math.max(scale, Math.abs(theirs[i]!))));
        expect(scale).toBeGreaterThan(0);
        expect(err / scale, shape).toBeLessThan(1e-4);
        model.dispose();
      }
    },
    300_000,
  );

  it('refuses an unknown shape and an occupied folder in one sentence each', async () => {
    let r = await runCli('model', 'init', '--shape', 'qwen2.5-05b', '--out', join(root, 'x'));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /Bad --shape `qwen2\.5-05b`: give one of qwen2\.5-0\.5b, .*qwen3-tiny\. Did you mean `qwen2\.5-0\.5b`\?/,
    );
    r = await runCli('model', 'init', '--shape', 'qwen3-tiny', '--out', tinyDirs['qwen3-tiny']!);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /already holds a model \(config\.json, model\.safetensors\); choose an empty folder or pass --force/,
    );
    // --force replaces a model, stale shards included.
    r = await runCli('model', 'init', '--shape', 'qwen3-tiny', '--out', join(root, 'sharded'), '--force');
    expect(r.code, r.err).toBe(0);
    expect(
      readdirSync(join(root, 'sharded'))
        .filter((f) => f.startsWith('model'))
        .sort(),
    ).toEqual(['model.safetensors']);
    expect(json(join(root, 'sharded'), 'config.json')['model_type']).toBe('qwen3');
    r = await runCli('model', 'init', '--shape', 'qwen3-tiny', '--out', join(root, 'y'), '--dtype', 'fp16');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/Bad --dtype `fp16`: give bf16 or f32\./);
  }, 300_000);
});
