import { describe, expect, it } from 'vitest';
import { modelConfig } from '../model/index.js';
import { BENCH_MODEL, runEngineBench } from './bench.js';

describe('engine benchmark workload', () => {
  it('is the issue\'s reference model (about 5M parameters)', () => {
    expect(BENCH_MODEL).toMatchObject({ vocabSize: 2048, hiddenSize: 256, numLayers: 6, numHeads: 4, numKvHeads: 2, intermediateSize: 768, tieWordEmbeddings: true });
  });

  it('measures a train step, decode throughput and RSS on a tiny model', async () => {
    const tiny = modelConfig({ vocabSize: 64, hiddenSize: 16, intermediateSize: 24, numLayers: 1, numHeads: 2, numKvHeads: 1 });
    const r = await runEngineBench('js', { batch: 2, seq: 8, steps: 2, decodeBatch: 3, prompt: 4, newTokens: 5 }, tiny);
    expect(r.trainStepMs).toBeGreaterThan(0);
    expect(r.decodeTokPerS).toBeGreaterThan(0);
    expect(r.peakRssMb).toBeGreaterThan(10);
    expect(Math.abs(r.loss - Math.log(64))).toBeLessThan(0.5); // near-uniform predictions at init
  });
});
