import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { liveTensors, noGrad, setBackend } from '../tensor/index.js';
import { testBackend } from '../tensor/testing.js';
import { ConfigError } from '../util/index.js';
import { loadModel, saveModel } from './checkpoint.js';
import { countParameters, modelConfig } from './config.js';
import { packSequences, tokenForward, unpack, ValueHead } from './forward.js';
import { generate } from './generate.js';
import { LoraAdapters } from './lora.js';
import { Transformer } from './transformer.js';

const shape = {
  vocabSize: 40,
  hiddenSize: 32,
  intermediateSize: 48,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  eosTokenId: 39,
};
const config = modelConfig(shape);
const prompts = [
  [1, 2, 3, 4, 5, 6],
  [7, 8],
  [9, 10, 11],
];

function teacherForced(model: Transformer, seqs: number[][]): Float32Array[] {
  const batch = packSequences(seqs);
  return noGrad(() => unpack(tokenForward(model, batch).logprobs!.toFloat32Array(), batch));
}

function bits(a: Float32Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length);
}

describe('Transformer', () => {
  beforeAll(() => setBackend('js'));

  it('has the parameter count of its config', () => {
    const m = Transformer.init(config, 0);
    expect(m.parameters().reduce((n, [, t]) => n + t.size, 0)).toBe(countParameters(config));
    m.dispose();
  });

  it('is seeded: same seed, same weights; another seed, other weights', () => {
    const a = Transformer.init(config, 5).exportWeights().get('model.layers.1.mlp.up_proj.weight')!.data;
    const b = Transformer.init(config, 5).exportWeights().get('model.layers.1.mlp.up_proj.weight')!.data;
    const c = Transformer.init(config, 6).exportWeights().get('model.layers.1.mlp.up_proj.weight')!.data;
    expect(bits(a)).toEqual(bits(b));
    expect(bits(a)).not.toEqual(bits(c));
  });

  it('a padded batch gives each sequence the outputs it gets alone', () => {
    const m = Transformer.init(config, 1, 0.3);
    const seqs = [
      [1, 2, 3, 4, 5, 6, 7],
      [8, 9, 10],
    ];
    const both = teacherForced(m, seqs);
    const alone = teacherForced(m, [seqs[1]!]);
    both[1]!.forEach((x, i) => expect(x).toBeCloseTo(alone[0]![i]!, 5));
  });
});

describe('generate', () => {
  beforeAll(() => setBackend('js'));

  for (const backend of (['js', 'wasm', 'native'] as const).filter(testBackend)) {
    it(`log-probs of sampled tokens equal teacher-forced log-probs (left-padded prompts of different lengths) [${backend}]`, () => {
      setBackend(backend);
      const m = Transformer.init(config, 2, 0.3);
      for (const params of [{ temperature: 1 }, { temperature: 0.7, topP: 0.9, topK: 10 }, { temperature: 0 }]) {
        const gens = generate(m, prompts, { maxNewTokens: 8, seed: 3, ...params });
        const tf = teacherForced(
          m,
          prompts.map((p, i) => [...p, ...gens[i]!.tokens]),
        );
        prompts.forEach((p, i) => {
          expect(gens[i]!.tokens.length).toBe(gens[i]!.logprobs.length);
          gens[i]!.logprobs.forEach((lp, j) => expect(Math.abs(lp - tf[i]![p.length - 1 + j]!)).toBeLessThan(1e-4));
        });
      }
      setBackend('js');
    });
  }

  it('greedy decoding takes the argmax of the teacher-forced distribution', () => {
    const m = Transformer.init(config, 2, 0.3);
    const [g] = generate(m, [prompts[0]!], { maxNewTokens: 5, temperature: 0, seed: 0 });
    const seq = [...prompts[0]!, ...g!.tokens];
    const logits = noGrad(() => m.logits(m.hidden(Int32Array.from(seq), 1, seq.length)).toFloat32Array());
    g!.tokens.forEach((tok, j) => {
      const row = logits.subarray((prompts[0]!.length - 1 + j) * 40, (prompts[0]!.length + j) * 40);
      expect(tok).toBe(row.indexOf(Math.max(...row)));
    });
  });

  it('is reproducible for a seed, and a sequence does not depend on its batch mates', () => {
    const m = Transformer.init(config, 2, 0.3);
    const a = generate(m, prompts, { maxNewTokens: 6, temperature: 1, seed: 9 });
    const b = generate(m, prompts, { maxNewTokens: 6, temperature: 1, seed: 9 });
    const c = generate(m, prompts, { maxNewTokens: 6, temperature: 1, seed: 10 });
    expect(a).toEqual(b);
    expect(a.map((g) => g.tokens)).not.toEqual(c.map((g) => g.tokens));
  });

  it('stops at stop ids and stop strings, drops finished sequences, and frees its cache', () => {
    const m = Transformer.init(config, 4, 0.3);
    const free = generate(m, prompts, { maxNewTokens: 12, temperature: 1, seed: 1 });
    const stopId = free[1]!.tokens[2]!; // sampled at step 3 of sequence 1: it must stop there (or earlier)
    const live = liveTensors();
    const gens = generate(m, prompts, { maxNewTokens: 12, temperature: 1, seed: 1, stopTokenIds: [stopId] });
    expect(liveTensors()).toBe(live);
    expect(gens[1]!.finishReason).toBe('stop');
    expect(gens[1]!.tokens.at(-1)).toBe(stopId);
    expect(gens[1]!.tokens.length).toBeLessThanOrEqual(3);
    gens.forEach((g, i) => expect(g.tokens).toEqual(free[i]!.tokens.slice(0, g.tokens.length))); // compaction keeps each stream
    const decode = (ids: number[]): string => ids.map((t) => String.fromCharCode(97 + (t % 26))).join('');
    const target = decode(free[0]!.tokens.slice(3, 5));
    const s = generate(m, prompts, { maxNewTokens: 12, temperature: 1, seed: 1, stopStrings: [target], decode });
    expect(decode(s[0]!.tokens)).toContain(target);
    expect(s[0]!.finishReason).toBe('stop');
    expect(s[0]!.tokens.length).toBeLessThanOrEqual(5);
  });

  it('fused sampling weights (q|k|v, gate|up, LoRA merged) give the unfused results', () => {
    for (const cfg of [
      modelConfig({ ...shape, modelType: 'qwen3', headDim: 16 }),
      modelConfig({ ...shape, modelType: 'llama', qkvBias: true, oBias: true }),
    ]) {
      const m = Transformer.init(cfg, 6, 0.3);
      const lora = LoraAdapters.attach(
        m,
        { r: 2, alpha: 4, targetModules: ['q_proj', 'v_proj', 'up_proj', 'down_proj'] },
        1,
      );
      noGrad(() =>
        lora.parameters().forEach(([, t]) =>
          t.backend.write(
            t.buf,
            t.toFloat32Array().map((_, i) => 0.1 * Math.sin(i + 1)),
          ),
        ),
      );
      const fused = generate(m, prompts, { maxNewTokens: 6, temperature: 1, seed: 5, fuseWeights: true });
      const plain = generate(m, prompts, { maxNewTokens: 6, temperature: 1, seed: 5, fuseWeights: false });
      expect(fused.map((g) => g.tokens)).toEqual(plain.map((g) => g.tokens));
      fused.forEach((g, i) =>
        g.logprobs.forEach((lp, j) => expect(Math.abs(lp - plain[i]!.logprobs[j]!)).toBeLessThan(1e-4)),
      );
      const tf = teacherForced(
        m,
        prompts.map((p, i) => [...p, ...fused[i]!.tokens]),
      );
      prompts.forEach((p, i) =>
        fused[i]!.logprobs.forEach((lp, j) => expect(Math.abs(lp - tf[i]![p.length - 1 + j]!)).toBeLessThan(1e-4)),
      );
    }
  });

  it('prompts prefilled in length groups and time chunks give the same completions as in one pass', () => {
    const m = Transformer.init(config, 2, 0.3);
    const one = generate(m, prompts, { maxNewTokens: 5, temperature: 1, seed: 4 });
    const live = liveTensors();
    const chunked = generate(m, prompts, { maxNewTokens: 5, temperature: 1, seed: 4, maxPrefillTokens: 3 }); // one prompt per group, 3-token chunks
    const grouped = generate(m, prompts, { maxNewTokens: 5, temperature: 1, seed: 4, maxPrefillTokens: 8 }); // groups [6], [3, 2]
    expect(liveTensors()).toBe(live);
    expect(grouped.map((g) => g.tokens)).toEqual(one.map((g) => g.tokens));
    expect(chunked.map((g) => g.tokens)).toEqual(one.map((g) => g.tokens));
    chunked.forEach((g, i) => g.logprobs.forEach((lp, j) => expect(lp).toBeCloseTo(one[i]!.logprobs[j]!, 5)));
  });

  it('rejects bad settings with the value and the fix', () => {
    const m = Transformer.init(config, 0);
    expect(() => generate(m, [[1]], { maxNewTokens: 2, temperature: -1, seed: 0 })).toThrow(/temperature must be >= 0/);
    expect(() => generate(m, [[1, 99]], { maxNewTokens: 2, temperature: 1, seed: 0 })).toThrow(
      /token id 99, outside the vocabulary \[0, 40\)/,
    );
    expect(() => generate(m, [[1]], { maxNewTokens: 2, temperature: 1, seed: 0, stopStrings: ['x'] })).toThrow(
      ConfigError,
    );
  });
});

describe('LoRA', () => {
  beforeAll(() => setBackend('js'));

  it('trains only the adapters, starts as the base model, and merges into the same function', () => {
    const m = Transformer.init(config, 3, 0.3);
    const seq = [[1, 5, 9, 2, 7]];
    const before = teacherForced(m, seq)[0]!;
    const lora = LoraAdapters.attach(m, { r: 4, alpha: 8, targetModules: 'all-linear' }, 1);
    expect(m.parameters().map(([n]) => n)).toContain('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight');
    expect(m.parameters().length).toBe(2 * 7 * config.numLayers);
    expect(bits(teacherForced(m, seq)[0]!)).toEqual(bits(before)); // B = 0
    // one gradient step on the adapters
    const out = tokenForward(m, packSequences(seq));
    const s = out.logprobs!;
    s.backward(s.detach().reshape(s.size)); // any upstream gradient
    expect([...m.weights.values()].every((w) => w.grad === null)).toBe(true);
    for (const [, p] of lora.parameters()) {
      noGrad(() => p.backend.axpy(-0.5, p.grad!.buf, p.buf, p.size));
    }
    const adapted = teacherForced(m, seq)[0]!;
    expect(Math.max(...adapted.map((x, i) => Math.abs(x - before[i]!)))).toBeGreaterThan(1e-3);
    lora.merge(m);
    expect(m.lora).toBeNull();
    teacherForced(m, seq)[0]!.forEach((x, i) => expect(x).toBeCloseTo(adapted[i]!, 4));
  });

  it('rejects unknown target modules with a suggestion', () => {
    const m = Transformer.init(config, 0);
    expect(() => LoraAdapters.attach(m, { r: 2, alpha: 4, targetModules: ['q_prj'] })).toThrow(
      /`q_prj`.*Did you mean `q_proj`/,
    );
  });
});

describe('checkpoints', () => {
  beforeAll(() => setBackend('js'));

  it('save -> load is bit-exact (model, LoRA adapter in PEFT layout, value head)', async () => {
    const m = Transformer.init(modelConfig({ ...shape, modelType: 'qwen3', tieWordEmbeddings: false }), 7, 0.3);
    const lora = LoraAdapters.attach(m, { r: 2, alpha: 4, targetModules: ['q_proj', 'down_proj'] }, 2);
    noGrad(() => lora.parameters().forEach(([, t]) => t.backend.fill(t.buf, 0.01)));
    const vh = ValueHead.init(32, 3);
    const dir = mkdtempSync(join(tmpdir(), 'ckpt-'));
    await saveModel(dir, m, { valueHead: vh });
    expect(readdirSync(dir).sort()).toEqual([
      'adapter',
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'value_head.safetensors',
    ]);
    expect(readdirSync(join(dir, 'adapter')).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const peft = JSON.parse(readFileSync(join(dir, 'adapter', 'adapter_config.json'), 'utf8'));
    expect(peft).toMatchObject({ peft_type: 'LORA', r: 2, lora_alpha: 4, target_modules: ['q_proj', 'down_proj'] });
    expect(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'))).toMatchObject({
      architectures: ['Qwen3ForCausalLM'],
      head_dim: 8,
    });
    const back = await loadModel(dir);
    expect(back.model.config).toEqual(m.config);
    for (const [name, w] of m.exportWeights())
      expect(bits(back.model.exportWeights().get(name)!.data), name).toEqual(bits(w.data));
    const names = (x: Transformer): string[] => x.parameters().map(([n]) => n);
    expect(names(back.model)).toEqual(names(m));
    back.model
      .parameters()
      .forEach(([, t], i) => expect(bits(t.toFloat32Array())).toEqual(bits(m.parameters()[i]![1].toFloat32Array())));
    expect(bits(back.valueHead!.weight.toFloat32Array())).toEqual(bits(vh.weight.toFloat32Array()));
    expect(teacherForced(back.model, [[1, 2, 3]])).toEqual(teacherForced(m, [[1, 2, 3]]));
  });

  it('names the tensor and both shapes when config and weights disagree', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ckpt-'));
    await saveModel(dir, Transformer.init(config, 0));
    const other = modelConfig({ ...shape, intermediateSize: 64 });
    const { loadWeights } = await import('./safetensors.js');
    expect(() => Transformer.fromWeights(other, new Map(), dir)).toThrow(/missing tensor `model.embed_tokens.weight`/);
    const w = await loadWeights(dir);
    expect(() => Transformer.fromWeights(other, w, dir)).toThrow(
      /`model.layers.0.mlp.gate_proj.weight` has shape \[48,32\], the model expects \[64,32\]/,
    );
    await expect(loadModel(join(dir, 'nope'))).rejects.toThrow(/not a model checkpoint: .*config.json is missing/);
  });
});
