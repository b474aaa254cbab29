// runUpdate, the one loop of the actor and critic updates: what it asks of the engine and how it averages the loss's
// stats, on a fake engine whose numbers are worked out by hand.
import { describe, expect, it } from 'vitest';
import type { TokenBatch } from '../agent/index.js';
import type { BackwardOptions, TrainableEngine, TrainableRole } from '../engine/index.js';
import { runUpdate, type LossGrad } from './stage-update.js';

/** 4 rows of T = 4; row r has r + 1 loss tokens. */
function tokens(): TokenBatch {
  const B = 4;
  const T = 4;
  const lossMask = new Uint8Array(B * T);
  for (let r = 0; r < B; r++) for (let t = 0; t <= r; t++) lossMask[r * T + t] = 1;
  return {
    B,
    T,
    ids: new Int32Array(B * T),
    attentionMask: new Uint8Array(B * T).fill(1),
    lossMask,
    oldLogprobs: new Float32Array(B * T),
    rewards: new Float32Array(B * T),
    turnIds: new Int32Array(B * T),
    groupIds: ['g', 'g', 'g', 'g'],
    tags: ['T', 'T', 'T', 'T'],
    scores: new Float64Array(B),
    lengths: new Int32Array([4, 4, 4, 4]),
    episodeIds: new Int32Array([0, 1, 2, 3]),
  };
}

/** Records each backward's role and rows; optimizer step k reports grad norm 2k + 1 (1, 3, ...). */
function fakeEngine() {
  const calls: { backward: BackwardOptions[]; steps: TrainableRole[] } = { backward: [], steps: [] };
  const engine = {
    kind: 'fake',
    async backward(
      batch: TokenBatch,
      options: BackwardOptions,
      lossGrad: (out: { logprobs: Float32Array }) => unknown,
    ) {
      calls.backward.push(options);
      const out = { logprobs: new Float32Array(batch.B * batch.T) };
      lossGrad(out);
      return out;
    },
    async optimizerStep(role: TrainableRole) {
      calls.steps.push(role);
      return { gradNorm: 2 * (calls.steps.length - 1) + 1, skipped: calls.steps.length === 2 };
    },
  } as unknown as TrainableEngine;
  return { engine, calls };
}

describe('runUpdate', () => {
  it("averages per-step stats over optimizer steps and per-token stats over the update's loss tokens", async () => {
    const { engine, calls } = fakeEngine();
    // Each micro-batch (one row) reports loss 1 and, per token, its row index.
    const lossGrad: LossGrad = (_out, rows, batch) => {
      const tokens = batch.lossMask.reduce((a, x) => a + x, 0);
      return { grad: {}, perStep: { loss: 1 }, perToken: { row: rows[0]! }, tokens };
    };
    const schedule = { miniBatchSize: 2, microBatchSize: 1, epochs: 1, shuffleSeed: null, horizon: 4 };
    const u = await runUpdate(engine, { role: 'critic' }, tokens(), lossGrad, schedule, { lr: 1e-3 });
    // 2 mini-batches of 2 one-row micro-batches: loss 2 per optimizer step.
    expect(u.perStep.loss).toBe(2);
    // rows 0..3 hold 1..4 loss tokens: (0·1 + 1·2 + 2·3 + 3·4) / 10.
    expect(u.perToken.row).toBe(2);
    expect(u.tokens).toBe(10);
    expect(u.gradNorm).toBe(2); // (1 + 3) / 2
    expect(u.optimizerSteps).toBe(2);
    expect(u.skipped).toBe(1);
    expect(calls.backward).toEqual(Array(4).fill({ role: 'critic' }));
    expect(calls.steps).toEqual(['critic', 'critic']);
  });
});
