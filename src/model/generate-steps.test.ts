// generate's per-step token reports (`onTokens`, what streaming reads) and its event-loop-yielding twin: the
// reports spell out exactly each completion, on the fused decode and the op-by-op path. And its memory bounds: a batch
// whose key/value cache would pass `maxCacheBytes` is sampled in groups, each prompt with its own random stream, and
// finishing sequences are compacted inside the cache's own storage (no second cache).
import { afterAll, expect, it } from 'vitest';
import { getBackend, noGrad, setBackend, tensor } from '../tensor/index.js';
import { modelConfig } from './config.js';
import { generate, generateYielding, type Completion, type SampledToken } from './generate.js';
import { KVCache } from './kv-cache.js';
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

const groupPrompts = [...prompts, [6, 6, 6]];
// keys and values of one token: 2 (k, v) x 2 layers x 1 head x 8 dims x 4 bytes
const perToken = 2 * config.numLayers * config.numKvHeads * config.headDim * 4;

/** Same tokens and stops; log-probs to float32 rounding (a group pads its prompts to its own longest, not the batch's). */
function expectSame(a: Completion[], b: Completion[]): void {
  expect(a.map((g) => [g.tokens, g.finishReason])).toEqual(b.map((g) => [g.tokens, g.finishReason]));
  a.forEach((g, i) => g.logprobs.forEach((lp, k) => expect(lp).toBeCloseTo(b[i]!.logprobs[k]!, 5)));
}

for (const fastDecode of [true, false]) {
  it(`samples past maxCacheBytes in groups, each prompt's tokens as in one batch (fastDecode ${fastDecode})`, () => {
    const model = Transformer.init(config, 3);
    const opts = { maxNewTokens: 12, temperature: 1, seed: 5, stopTokenIds: [4, 11], fastDecode };
    const whole = generate(model, groupPrompts, opts);
    // room for two rows of the longest prompt: the five prompts go in three groups
    const steps: SampledToken[][] = [];
    const maxCacheBytes = 2 * (7 + 12) * perToken;
    const grouped = generate(model, groupPrompts, { ...opts, maxCacheBytes, onTokens: (s) => steps.push([...s]) });
    expectSame(grouped, whole);
    // the groups ran one after another: no step reported more than two prompts
    expect(Math.max(...steps.map((s) => s.length))).toBeLessThanOrEqual(2);
    groupPrompts.forEach((_, i) =>
      expect(steps.flatMap((s) => s.filter((t) => t.index === i).map((t) => t.token))).toEqual(whole[i]!.tokens),
    );
    // below one row's need: one prompt per group
    expectSame(generate(model, groupPrompts, { ...opts, maxCacheBytes: 1 }), whole);
  });
}

it('compacts finished rows inside the same storage', () => {
  const cache = new KVCache(config, 4, 3);
  const block = config.numKvHeads * 3 * config.headDim;
  noGrad(() => {
    for (const t of [...cache.keys, ...cache.values]) {
      const data = tensor(
        Float32Array.from({ length: 4 * block }, (_, i) => i),
        [4 * block],
      );
      t.backend.copyBlock(data.buf, 0, 4 * block, t.buf, 0, 4 * block, 1, 4 * block, false);
      data.dispose();
    }
  });
  cache.length = 2;
  const bufs = cache.keys.map((t) => t.buf);
  const next = cache.compact([1, 3]);
  expect(next.batch).toBe(2);
  expect(next.keys.map((t) => t.buf)).toEqual(bufs);
  expect(next.keys[0]!.shape).toEqual([2, config.numKvHeads, 3, config.headDim]);
  const got = next.values[1]!.toFloat32Array();
  // row j holds old row rows[j]'s filled slots (the first `length` of each head's capacity)
  for (const [j, r] of [
    [0, 1],
    [1, 3],
  ])
    for (let s = 0; s < 2 * config.headDim; s++) expect(got[j! * block + s]).toBe(r! * block + s);
  expect(() => next.compact([1, 0])).toThrow(/ascend/);
  next.dispose();
});
