// The update's token-budget micro-batches on the torch engine: the same weights after an optimizer step as row
// micro-batches (the loss is normalised over the mini-batch, so the cut must not change it), and every backward call
// is one worker pass that keeps its graph (the worker's pass counters), where row micro-batches recompute.
import '../envs/index.js'; // the built-in environments
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { collate, type TrainingSample } from '../agent/index.js';
import { TorchEngine, type TrainableEngine } from '../engine/index.js';
import { torchPythonForTests } from '../engine/torch-testing.js';
import { Rng } from '../util/index.js';
import { updateActor, updateCritic, type BatchSchedule, type UpdateBatch } from './stage-update.js';

const python = torchPythonForTests();
const TINY = join(import.meta.dirname, '../../models/ragen-tiny');
// Row micro-batches of 4 rows span two worker passes at this budget (40 + 33 fit, a third row of 40 would not).
const LENGTHS = [40, 7, 33, 2, 25, 18, 12, 30];
const BUDGET = 96;

function samples(V: number): TrainingSample[] {
  const rng = new Rng(4);
  return LENGTHS.map((n, i) => {
    const ids = Array.from({ length: n }, () => Math.floor(rng.random() * V));
    const lossMask = ids.map((_, t) => (t >= Math.floor(n / 2) ? 1 : 0));
    return {
      ids,
      lossMask,
      logprobs: ids.map(() => 0),
      rewards: ids.map(() => 0),
      turnIds: lossMask.map((m) => (m ? 0 : -1)),
      score: 0,
      episode: i,
      group: i >> 1,
      tag: 'T',
      turns: [0],
      length: n,
    };
  });
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** The engine without its token budget: the update then cuts rows as for the local engine. */
function rowsOnly(engine: TorchEngine): TrainableEngine {
  return Object.create(engine, { tokenBudget: { value: undefined } }) as TrainableEngine;
}

describe.skipIf(!python)('token-budget micro-batches on the torch engine', () => {
  let byBudget: TorchEngine;
  let byRows: TorchEngine;
  let data: UpdateBatch;
  beforeAll(async () => {
    const opts = { python: python!, critic: 'shared' as const, tokenBudget: BUDGET, echoStderr: false, seed: 0 };
    [byBudget, byRows] = await Promise.all([
      TorchEngine.fromPretrained(TINY, opts),
      TorchEngine.fromPretrained(TINY, opts),
    ]);
    const tokens = collate(samples(byBudget.vocabSize), 0);
    const before = await byBudget.forward(tokens, { role: 'critic' });
    const old = (await byBudget.forward(tokens, { role: 'policy' })).logprobs;
    const rng = new Rng(9);
    const perturb = (x: Float32Array) =>
      Float32Array.from(x, (v, i) => (tokens.lossMask[i] ? v + 0.05 * (rng.random() - 0.5) : 0));
    data = {
      tokens,
      oldLogprobs: perturb(old),
      advantages: Float32Array.from(tokens.lossMask, (m) => (m ? rng.random() - 0.5 : 0)),
      returns: Float32Array.from(tokens.lossMask, (m) => (m ? rng.random() : 0)),
      values: before.values!,
    };
  }, 60_000);
  afterAll(() => {
    byBudget?.dispose();
    byRows?.dispose();
  });

  it('gives the weights of row micro-batches after an AdamW step (1e-5), each backward call running its forward once', async () => {
    const schedule: BatchSchedule = { miniBatchSize: 8, microBatchSize: 4, epochs: 1, shuffleSeed: null, horizon: 64 };
    // A large eps keeps AdamW's step a smooth function of the gradient, so float rounding cannot flip an entry's step.
    const optimizer = { lr: 1e-2, eps: 1e-3, weightDecay: 0 };
    const loss = {
      lossAgg: 'token-mean' as const,
      clipRatioLow: 0.2,
      clipRatioHigh: 0.2,
      clipRatioC: 3,
      entropyCoeff: 0.01,
      klCoef: 0,
      klEstimator: 'k1' as const,
    };
    const start = await byBudget.tensors('policy');
    const s0 = [await byBudget.stats(), await byRows.stats()];
    const a = await updateActor(byBudget, data, loss, schedule, optimizer);
    const b = await updateActor(rowsOnly(byRows), data, loss, schedule, optimizer);
    const s1 = [await byBudget.stats(), await byRows.stats()];
    expect(a.optimizerSteps).toBe(1);
    expect(Math.abs(a.pgLoss - b.pgLoss)).toBeLessThan(1e-6);
    const [wa, wb] = [await byBudget.tensors('policy'), await byRows.tensors('policy')];
    expect([...wa.keys()].sort()).toEqual([...wb.keys()].sort());
    for (const [name, x] of wa) expect(maxAbsDiff(x, wb.get(name)!), name).toBeLessThan(1e-5);
    const moved = Math.max(...[...wa].map(([name, x]) => maxAbsDiff(x, start.get(name)!)));
    expect(moved, 'the step moved the weights far more than the tolerance').toBeGreaterThan(1e-3);
    // Sorted by length and cut by the budget: [40, 33], [30, 25, 18], [12, 7, 2], one pass each, none recomputed.
    expect(s1[0]!.forwardPasses - s0[0]!.forwardPasses).toBe(3);
    expect(s1[0]!.recomputedPasses - s0[0]!.recomputedPasses).toBe(0);
    // Rows in order, 4 per call, each call two passes: [40, 33] + [7, 2] (80 + 14 tokens) fit graphTokenBudget (= the
    // token budget) together and keep both graphs; [30, 25, 18] + [12] (90 + 12) do not, and the second is recomputed.
    expect(s1[1]!.forwardPasses - s0[1]!.forwardPasses).toBe(5);
    expect(s1[1]!.recomputedPasses - s0[1]!.recomputedPasses).toBe(1);
  }, 60_000);

  it('the critic update too: same weights as row micro-batches, no pass recomputed', async () => {
    const schedule: BatchSchedule = { miniBatchSize: 8, microBatchSize: 8, epochs: 1, shuffleSeed: null, horizon: 64 };
    const optimizer = { lr: 1e-2, eps: 1e-3, weightDecay: 0 };
    const s0 = await byBudget.stats();
    await updateCritic(byBudget, data, { lossAgg: 'token-mean', valueClip: 0.5 }, schedule, optimizer);
    await updateCritic(rowsOnly(byRows), data, { lossAgg: 'token-mean', valueClip: 0.5 }, schedule, optimizer);
    expect((await byBudget.stats()).recomputedPasses).toBe(s0.recomputedPasses);
    const [wa, wb] = [await byBudget.tensors('critic'), await byRows.tensors('critic')];
    expect(wa.size).toBeGreaterThan(0);
    for (const [name, x] of wa) expect(maxAbsDiff(x, wb.get(name)!), name).toBeLessThan(1e-5);
  }, 60_000);
});
