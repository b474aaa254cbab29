// Item 8 of issue 34: a finite but huge weight (3e38 in a layernorm) makes the logits non-finite; generation then
// refuses with an error naming the model and the step, on every backend and decode path, instead of returning tokens.
import { afterAll, describe, expect, it } from 'vitest';
import { getBackend, setBackend } from '../tensor/index.js';
import { testBackend } from '../tensor/testing.js';
import { modelConfig } from './config.js';
import { generate, generateYielding, NonFiniteLogitsError, type Completion } from './generate.js';
import type { WeightMap } from './safetensors.js';
import { Transformer } from './transformer.js';

const before = getBackend().name;
afterAll(() => setBackend(before));

const config = modelConfig({
  modelType: 'qwen2',
  vocabSize: 37,
  hiddenSize: 24,
  intermediateSize: 40,
  numLayers: 2,
  numHeads: 3,
  numKvHeads: 1,
});

/** A seeded random model with one element of `weight` set to `value`, as a checkpoint would hold it. */
function withWeight(weight: string, value: number): Transformer {
  const base = Transformer.init(config, 3);
  const w: WeightMap = new Map(
    [...base.weights].map(([n, t]) => [n, { shape: [...t.shape], data: t.toFloat32Array() }]),
  );
  w.get(weight)!.data[0] = value;
  return Transformer.fromWeights(config, w, 'models/huge');
}

const backends = (['js', 'wasm', 'native'] as const).filter((b) => b === 'js' || testBackend(b));

describe('item 8: non-finite logits at generation are an error naming the model and the step, never tokens', () => {
  for (const backend of backends) {
    for (const fastDecode of [true, false]) {
      for (const temperature of [0, 1]) {
        it(`3e38 in a layernorm is refused (${backend}, fastDecode ${fastDecode}, temperature ${temperature})`, async () => {
          setBackend(backend);
          const model = withWeight('model.layers.0.input_layernorm.weight', 3e38);
          const opts = { maxNewTokens: 3, temperature, seed: 1, fastDecode };
          const prompts = [[1, 2, 3], [4]];
          let err: unknown;
          let gens: Completion[] = [];
          const seen: number[] = [];
          try {
            gens = generate(model, prompts, { ...opts, onTokens: (s) => seen.push(...s.map((t) => t.token)) });
          } catch (e) {
            err = e;
          }
          // The native op-by-op kernels keep this model's hidden state finite (the others overflow to NaN): there
          // generation may go on, but never with a non-finite log-prob.
          if (backend === 'native' && !fastDecode && err === undefined) {
            for (const g of gens) for (const lp of g.logprobs) expect(Number.isFinite(lp)).toBe(true);
            return;
          }
          expect(err).toBeInstanceOf(NonFiniteLogitsError);
          const e = err as NonFiniteLogitsError;
          expect(e.message).toMatch(
            /^Model `models\/huge` computed non-finite logits \(log-prob (NaN|-?Infinity)\) at decode step \d+ \(position \d+ of prompt [01]\), so no token was sampled/,
          );
          expect(e.position).toBe(prompts[e.index]!.length + e.step);
          expect(e.message.split('\n')).toHaveLength(1);
          // Every token reported before the error came from finite logits: a step that fails reports nothing.
          expect(seen.length).toBeLessThanOrEqual(e.step * prompts.length);
          await expect(generateYielding(model, prompts, opts)).rejects.toThrow(NonFiniteLogitsError);
        });
      }
    }
  }

  it('a finite model with a large but harmless weight still generates (the check is on the logits, not the weights)', () => {
    setBackend('js');
    const model = withWeight('model.norm.weight', 1e3);
    const [g] = generate(model, [[1, 2, 3]], { maxNewTokens: 4, temperature: 1, seed: 1 });
    expect(g!.tokens).toHaveLength(4);
    for (const lp of g!.logprobs) expect(Number.isFinite(lp)).toBe(true);
  });
});
