import { describe, expect, it } from 'vitest';
import { modelConfig } from '../model/index.js';
import { testBackend } from '../tensor/testing.js';
import { BENCH_MODEL, decodeWeightFlops, runEngineBench } from './engine.js';

describe('engine benchmark workload', () => {
  it("is the issue's reference model (about 5M parameters)", () => {
    expect(BENCH_MODEL).toMatchObject({
      vocabSize: 2048,
      hiddenSize: 256,
      numLayers: 6,
      numHeads: 4,
      numKvHeads: 2,
      intermediateSize: 768,
      tieWordEmbeddings: true,
    });
  });

  it('measures a train step, decode throughput and RSS on a tiny model', async () => {
    const tiny = modelConfig({
      vocabSize: 64,
      hiddenSize: 16,
      intermediateSize: 24,
      numLayers: 1,
      numHeads: 2,
      numKvHeads: 1,
    });
    const r = await runEngineBench('js', { batch: 2, seq: 8, steps: 2, decodeBatch: 3, prompt: 4, newTokens: 5 }, tiny);
    expect(r.trainStepMs).toBeGreaterThan(0);
    expect(r.decodeTokPerS).toBeGreaterThan(0);
    expect(r.peakRssMb).toBeGreaterThan(10);
    expect(Math.abs(r.loss - Math.log(64))).toBeLessThan(0.5); // near-uniform predictions at init
  });

  it("counts the decode workload's weight FLOPs: the prompt tokens through the layers (the last layer: keys and values only but for the last token), the head on the last, then newTokens - 1 steps", () => {
    // per layer: q|k|v 4 x (2 + 2) x 2 = 32 (k|v 16), o 2 x 2 x 4 = 16, MLP 3 x 4 x 6 = 72 -> 120; head 4 x 10 = 40
    const c = modelConfig({
      vocabSize: 10,
      hiddenSize: 4,
      intermediateSize: 6,
      numLayers: 2,
      numHeads: 2,
      numKvHeads: 1,
    });
    const w = { batch: 1, seq: 1, steps: 1, decodeBatch: 2, prompt: 3, newTokens: 2 };
    expect(decodeWeightFlops(c, w)).toBe(2 * (2 * (2 * (120 + 16) + 2 * 120 + 40) + 2 * 1 * (2 * 120 + 40)));
  });

  it.skipIf(!testBackend('wasm'))(
    'reports the f32x4 multiply-add peak beside the wasm decode rate, and not for js',
    async () => {
      const tiny = modelConfig({
        vocabSize: 64,
        hiddenSize: 16,
        intermediateSize: 24,
        numLayers: 1,
        numHeads: 2,
        numKvHeads: 1,
      });
      const w = { batch: 1, seq: 4, steps: 1, decodeBatch: 2, prompt: 3, newTokens: 2 };
      const wasm = await runEngineBench('wasm', w, tiny);
      expect(wasm.simd!.gflopsPerThread).toBeGreaterThan(1); // 4 lanes x 2 flops at >= 125 MHz
      expect(wasm.simd!.threads).toBeGreaterThanOrEqual(1);
      expect((await runEngineBench('js', w, tiny)).simd).toBeUndefined();
    },
  );
});
