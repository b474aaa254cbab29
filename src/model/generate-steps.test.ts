// generate's per-step token reports (`onTokens`, what streaming reads) and its event-loop-yielding twin: the
// reports spell out exactly each completion, on the fused decode and the op-by-op path.
import { afterAll, expect, it } from 'vitest';
import { getBackend, setBackend } from '../tensor/index.js';
import { modelConfig } from './config.js';
import { generate, generateYielding, type SampledToken } from './generate.js';
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
const prompts = [[1, 2, 3, 4, 5], [7, 8], [9], [3, 1, 4, 1, 5, 9, 2]];

for (const fastDecode of [true, false]) {
  it(`reports every sampled token of every prompt once, in order, with its log-prob and stop (fastDecode ${fastDecode})`, async () => {
    const model = Transformer.init(config, 3);
    // Sampled with two stop ids, so rows end at different steps and the batch compacts.
    const opts = { maxNewTokens: 24, temperature: 1, seed: 5, stopTokenIds: [4, 11], fastDecode };
    const steps: SampledToken[][] = [];
    const gens = generate(model, prompts, { ...opts, onTokens: (s) => steps.push([...s]) });
    expect(gens.some((g) => g.finishReason === 'stop')).toBe(true);
    expect(gens.some((g) => g.finishReason === 'length')).toBe(true);
    expect(steps.length).toBe(Math.max(...gens.map((g) => g.tokens.length)));
    prompts.forEach((_, i) => {
      const mine = steps.flatMap((s) => s.filter((t) => t.index === i));
      expect(mine.map((t) => t.token)).toEqual(gens[i]!.tokens);
      expect(mine.map((t) => t.logprob)).toEqual(gens[i]!.logprobs);
      expect(mine.map((t) => t.stopped)).toEqual(
        gens[i]!.tokens.map((_, k) => gens[i]!.finishReason === 'stop' && k === gens[i]!.tokens.length - 1),
      );
    });
    // The callback changes nothing, and the yielding variant samples the same.
    expect(generate(model, prompts, opts)).toEqual(gens);
    expect(await generateYielding(model, prompts, opts)).toEqual(gens);
  });
}
