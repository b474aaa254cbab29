import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenBatch } from '../agent/index.js';
import type { ActorLossConfig } from '../algo/index.js';
import { LocalEngine } from '../engine/index.js';
import { describeMetric, isMetricKey } from '../metrics/index.js';
import { gradAnalysisMetrics, gradientAnalysis, type GradAnalysisSettings } from './grad-analysis.js';
import { writeMicroModel } from './testing.js';
import type { UpdateBatch } from './stage-update.js';

let root: string;
let engine: LocalEngine;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-gradan-'));
  engine = await LocalEngine.fromPretrained(await writeMicroModel(join(root, 'model')), {
    reference: true,
    backend: 'js',
  });
});
afterAll(() => {
  engine.dispose();
  rmSync(root, { recursive: true, force: true });
});

/**
 * Three groups of two rows each (6 to 9 tokens, loss on tokens 3..). Group `a` has equal rewards (std 0, advantage
 * 0), `b` and `c` rewards that differ (advantages ±1 and ±2): written by hand, as GRPO would give them.
 */
function batch(): { tokens: TokenBatch; groupStd: Map<string, number>; advantageOf: number[] } {
  const rows = [
    [5, 9, 14, 20, 7, 3],
    [5, 9, 14, 11, 8, 2, 6],
    [6, 10, 12, 4, 13, 15, 1, 9],
    [6, 10, 12, 17, 3, 5],
    [7, 3, 8, 9, 21, 4, 11, 2, 16],
    [7, 3, 8, 18, 6, 1, 12],
  ];
  const groups = ['a', 'a', 'b', 'b', 'c', 'c'];
  const advantageOf = [0, 0, 1, -1, 2, -2];
  const B = rows.length;
  const T = Math.max(...rows.map((r) => r.length));
  const tokens: TokenBatch = {
    B,
    T,
    ids: new Int32Array(B * T),
    attentionMask: new Uint8Array(B * T),
    lengths: Int32Array.from(rows, (r) => r.length),
    lossMask: new Uint8Array(B * T),
    oldLogprobs: new Float32Array(B * T),
    rewards: new Float32Array(B * T),
    turnIds: new Int32Array(B * T).fill(-1),
    groupIds: groups,
    tags: groups.map(() => 'T'),
    scores: new Float64Array(B),
    episodeIds: Int32Array.from(rows, (_, i) => i),
  };
  rows.forEach((r, b) =>
    r.forEach((id, t) => {
      tokens.ids[b * T + t] = id;
      tokens.attentionMask[b * T + t] = 1;
      if (t >= 3) tokens.lossMask[b * T + t] = 1;
    }),
  );
  return {
    tokens,
    groupStd: new Map([
      ['a', 0],
      ['b', Math.SQRT2],
      ['c', 2 * Math.SQRT2],
    ]),
    advantageOf,
  };
}

/** The update's inputs with π_old = π (ratio 1) and a reference `refShift` nats below the policy on every token. */
async function updateBatch(refShift: number): Promise<{ data: UpdateBatch; groupStd: Map<string, number> }> {
  const { tokens, groupStd, advantageOf } = batch();
  const fwd = await engine.forward(tokens, { role: 'policy' });
  const ref = await engine.forward(tokens, { role: 'reference' });
  const advantages = new Float64Array(tokens.B * tokens.T);
  for (let i = 0; i < advantages.length; i++)
    if (tokens.lossMask[i]) advantages[i] = advantageOf[Math.floor(i / tokens.T)]!;
  const data: UpdateBatch = {
    tokens,
    oldLogprobs: fwd.logprobs,
    advantages,
    returns: new Float64Array(advantages.length),
    refLogprobs: ref.logprobs.map((x) => x - refShift),
  };
  return { data, groupStd };
}

const loss = (o: Partial<ActorLossConfig> = {}): ActorLossConfig => ({
  lossAgg: 'token-mean',
  clipRatioLow: 0.2,
  clipRatioHigh: 0.28,
  clipRatioC: 3,
  entropyCoeff: 0.01,
  klCoef: 0.1,
  klEstimator: 'k3',
  ...o,
});
const settings = (o: Partial<GradAnalysisSettings> = {}): GradAnalysisSettings => ({
  buckets: 3,
  microBatchSize: 2,
  horizon: 9,
  ...o,
});

describe('gradientAnalysis (micro model, reference = policy)', () => {
  it('buckets by reward std; the all-equal-rewards bucket has exactly zero task gradient, the others do not', async () => {
    const { data, groupStd } = await updateBatch(0);
    const out = await gradientAnalysis(engine, data, groupStd, loss(), settings());
    expect(out.map((b) => b.name)).toEqual(['bucket_1', 'bucket_2', 'bucket_3', 'all']);
    expect(out.map((b) => [b.groups, b.samples])).toEqual([
      [1, 2],
      [1, 2],
      [1, 2],
      [3, 6],
    ]);
    expect(out[0]!.rewardStd).toEqual({ mean: 0, min: 0, max: 0 });
    expect(out[2]!.rewardStd.min).toBeCloseTo(2 * Math.SQRT2, 12);
    // loss tokens: rows of lengths 6+7 minus 3 each, 8+6, 9+7
    expect(out.map((b) => b.tokens)).toEqual([7, 8, 10, 25]);
    expect(out[0]!.norm.task).toBe(0);
    expect(out[0]!.loss.task).toBe(0);
    expect(out[1]!.norm.task).toBeGreaterThan(1e-6);
    expect(out[2]!.norm.task).toBeGreaterThan(1e-6);
    // The entropy term does not depend on rewards: every bucket has an entropy gradient.
    for (const b of out) expect(b.norm.entropy).toBeGreaterThan(1e-8);
    expect(await engine.gradNorm('policy')).toBe(0); // nothing left behind for the real update
  });

  it('the KL gradient is zero when the reference equals the policy (k3) and grows linearly with the coefficient', async () => {
    const same = await updateBatch(0);
    const atRef = await gradientAnalysis(engine, same.data, same.groupStd, loss({ klCoef: 0.1 }), settings());
    for (const b of atRef) {
      expect(b.norm.kl).toBeLessThan(1e-7);
      expect(Math.abs(b.loss.kl)).toBeLessThan(1e-7);
    }
    const apart = await updateBatch(0.3);
    const k1 = await gradientAnalysis(engine, apart.data, apart.groupStd, loss({ klCoef: 0.1 }), settings());
    const k2 = await gradientAnalysis(engine, apart.data, apart.groupStd, loss({ klCoef: 0.2 }), settings());
    for (let i = 0; i < k1.length; i++) {
      expect(k1[i]!.norm.kl).toBeGreaterThan(1e-4);
      expect(k2[i]!.norm.kl / k1[i]!.norm.kl).toBeCloseTo(2, 4);
      expect(k2[i]!.norm.task).toBeCloseTo(k1[i]!.norm.task, 6); // the other terms do not see the KL coefficient
    }
    const off = await gradientAnalysis(
      engine,
      apart.data,
      apart.groupStd,
      loss({ klCoef: 0, entropyCoeff: 0 }),
      settings(),
    );
    for (const b of off) expect([b.norm.kl, b.norm.entropy]).toEqual([0, 0]);
  });

  it('micro-batching does not change a norm (the bucket is one mini-batch), and the metrics divide by samples and tokens', async () => {
    const { data, groupStd } = await updateBatch(0.3);
    const one = await gradientAnalysis(engine, data, groupStd, loss(), settings({ microBatchSize: 1 }));
    const all = await gradientAnalysis(engine, data, groupStd, loss(), settings({ microBatchSize: 6 }));
    one.forEach((b, i) => {
      for (const c of ['task', 'entropy', 'kl'] as const) expect(b.norm[c]).toBeCloseTo(all[i]!.norm[c], 5);
    });
    const m = gradAnalysisMetrics(all, 'grad_analysis');
    const b3 = all[2]!;
    expect(m['grad_analysis/bucket_3/task']).toBe(b3.norm.task);
    expect(m['grad_analysis/bucket_3/per_sample/task']).toBeCloseTo(b3.norm.task / 2, 12);
    expect(m['grad_analysis/bucket_3/per_token/kl']).toBeCloseTo(b3.norm.kl / 10, 12);
    expect(m['grad_analysis/all/sample_pct']).toBe(1);
    expect(m['grad_analysis/bucket_1/sample_pct']).toBeCloseTo(1 / 3, 12);
    // Every key it logs is listed in src/metrics/names.ts with its own meaning; a made-up name is not.
    const keys = Object.keys({ ...m, ...gradAnalysisMetrics(all, 'grad_analysis/prefilter') });
    expect(keys.length).toBe(2 * 4 * 19);
    for (const k of keys) expect(isMetricKey(k), k).toBe(true);
    expect(describeMetric('grad_analysis/bucket_2/per_token/kl')).toMatch(/loss-token count/);
    expect(describeMetric('grad_analysis/prefilter/all/reward_std_max')).toMatch(/Largest in-group reward std/);
    expect(isMetricKey('grad_analysis/bucket_1/made_up')).toBe(false);
    expect(isMetricKey('grad_analysis/bucket_1/per_token/value')).toBe(false);
  });

  it('refuses to run over gradients an update is accumulating', async () => {
    const { data, groupStd } = await updateBatch(0);
    await engine.backward(data.tokens, { role: 'policy' }, (out) => ({ logprobs: out.logprobs.map(() => 1) }));
    await expect(gradientAnalysis(engine, data, groupStd, loss(), settings())).rejects.toThrow(
      /already holds gradients/,
    );
    engine.zeroGrad('policy');
  });
});
