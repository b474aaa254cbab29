// Direction tests: a trainer whose gradient, advantage or option goes the wrong way must fail here. The first part
// runs whole StarPO steps against a RecordingEngine and checks the output gradients handed to the engine against
// the documented formulas, computed independently below; the second runs real updates on a micro model.
import { describe, expect, it } from 'vitest';
import { collate, type TrainingSample } from '../agent/index.js';
import { registerTestCorridor } from '../agent/testing.js';
import { LocalEngine, type TrainableEngine } from '../engine/index.js';
import { modelConfig } from '../model/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { corridorStep, type RecordedBackward, type RecordingOutputs } from './testing.js';
import { updateActor, updateCritic, type UpdateBatch } from './stage-update.js';

registerTestCorridor();
const tokenizer = loadTokenizer(tinyTokenizerDir());

/** One StarPO step on the corridor (src/train/testing.ts), filter off (`algo.filter.value=1`). */
async function step(overrides: string[], outputs: Partial<RecordingOutputs> = {}) {
  const { out, samples, engine } = await corridorStep(tokenizer, ['algo.filter.value=1', ...overrides], { outputs });
  const scores = samples.map((s) => s.score);
  expect(new Set(scores).size, 'rewards differ within the batch').toBeGreaterThan(1);
  const byRole = (role: string): RecordedBackward => {
    const calls = engine.backwards.filter((b) => b.role === role);
    expect(calls, `one ${role} backward`).toHaveLength(1);
    // Rows in rollout order (no filter, no shuffle): the engine saw exactly the sampled ids.
    expect(calls[0]!.sequences).toEqual(samples.map((s) => s.ids));
    return calls[0]!;
  };
  return { out, samples, engine, byRole };
}

/** Positions t of a sample's loss tokens. */
const lossTokens = (s: TrainingSample) => s.lossMask.flatMap((m, t) => (m ? [t] : []));
const totalLossTokens = (samples: TrainingSample[]) => samples.reduce((n, s) => n + lossTokens(s).length, 0);

/** The gradient of token t of a row (token-aligned (B, T) layout). */
const at = (call: RecordedBackward, grads: ArrayLike<number> | undefined, row: number, t: number) =>
  grads![row * call.T + t]!;

/** GRPO by its definition: (s − mean of the group) / (unbiased std of the group + 1e-6). */
function grpoExpected(samples: TrainingSample[], scores = samples.map((s) => s.score), byStd = true): number[] {
  return samples.map((s, i) => {
    const g = samples.flatMap((o, j) => (o.group === s.group && o.tag === s.tag ? [scores[j]!] : []));
    const mean = g.reduce((a, x) => a + x, 0) / g.length;
    const std = Math.sqrt(g.reduce((a, x) => a + (x - mean) ** 2, 0) / (g.length - 1));
    return byStd ? (scores[i]! - mean) / (std + 1e-6) : scores[i]! - mean;
  });
}

/** GAE(γ, λ) over one sequence's loss tokens (observation tokens carry V_next and A_next through). */
function gaeExpected(
  s: TrainingSample,
  value: (t: number) => number,
  gamma: number,
  lambda: number,
): Map<number, number> {
  const adv = new Map<number, number>();
  let nextV = 0;
  let nextA = 0;
  for (const t of lossTokens(s).reverse()) {
    const delta = s.rewards[t]! + gamma * nextV - value(t);
    nextA = delta + gamma * lambda * nextA;
    nextV = value(t);
    adv.set(t, nextA);
  }
  return adv;
}

/** Every loss token's log-prob gradient equals `expected(row, t)`, every other entry 0. */
function expectLogprobGrads(
  call: RecordedBackward,
  samples: TrainingSample[],
  expected: (row: number, t: number) => number,
): void {
  samples.forEach((s, row) => {
    for (let t = 1; t < s.ids.length; t++) {
      const want = s.lossMask[t] ? expected(row, t) : 0;
      expect(at(call, call.grads.logprobs, row, t), `row ${row}, token ${t}`).toBeCloseTo(want, 6);
    }
  });
}

describe('a StarPO step hands the engine the loss gradients its config documents', () => {
  it('GRPO: each loss token gets d loss / d log π = −A / N with A its group-normalised score (token-mean over N tokens)', async () => {
    const { samples, byRole } = await step(['algo.advEstimator=grpo']);
    const A = grpoExpected(samples);
    expect(A.some((a) => a > 0) && A.some((a) => a < 0)).toBe(true);
    const N = totalLossTokens(samples);
    expectLogprobGrads(byRole('policy'), samples, (row) => -A[row]! / N);
  });

  it('reward normalisation reaches the advantages: dr_grpo over mean_std-normalised scores differs from raw scores as documented', async () => {
    const raw = await step(['algo.advEstimator=dr_grpo']);
    const N = totalLossTokens(raw.samples);
    const A = grpoExpected(raw.samples, undefined, false);
    expectLogprobGrads(raw.byRole('policy'), raw.samples, (row) => -A[row]! / N);
    const normed = await step([
      'algo.advEstimator=dr_grpo',
      'algo.rewardNorm.method=mean_std',
      'algo.rewardNorm.grouping=state',
    ]);
    // mean_std within each group, then dr_grpo subtracts the group mean (0 after normalisation): A = z.
    const z = grpoExpected(normed.samples);
    expect(
      z.some((x, i) => Math.abs(x - A[i]!) > 0.1),
      'the normalised advantages differ from the raw ones',
    ).toBe(true);
    expectLogprobGrads(normed.byRole('policy'), normed.samples, (row) => -z[row]! / N);
  });

  it.each([
    [0.9, 0.5],
    [0.5, 0.9],
  ])(
    'GAE with γ = %s, λ = %s: actor gradient −A/N and critic gradient −A/N (values at the old values)',
    async (gamma, lambda) => {
      const value = (t: number) => 0.1 * ((t % 5) - 2);
      const { samples, byRole } = await step(
        ['algo.advEstimator=gae', 'algo.normAdvantages=false', `algo.gamma=${gamma}`, `algo.lambda=${lambda}`],
        { value },
      );
      const N = totalLossTokens(samples);
      const A = samples.map((s) => gaeExpected(s, value, gamma, lambda));
      expectLogprobGrads(byRole('policy'), samples, (row, t) => -A[row]!.get(t)! / N);
      // ½(V − R)² with R = A + V_old and V = V_old: d/dV = −A/N.
      const critic = byRole('critic');
      samples.forEach((s, row) =>
        lossTokens(s).forEach((t) =>
          expect(at(critic, critic.grads.values, row, t)).toBeCloseTo(-A[row]!.get(t)! / N, 6),
        ),
      );
    },
  );

  it.each([
    ['past 1 + ε_high = 1.2: positive-advantage tokens clipped', 1.25, 0.3, 0.2, true],
    ['inside [1 − 0.2, 1 + 0.3]: nothing clipped', 1.25, 0.2, 0.3, false],
    ['below 1 − ε_low = 0.8: negative-advantage tokens clipped', 0.78, 0.2, 0.3, true],
    ['inside [1 − 0.3, 1 + 0.2]: nothing clipped', 0.78, 0.3, 0.2, false],
  ] as const)(
    'the ratio π/π_old reaches the loss and the clips bind where documented (%s)',
    async (_name, ratio, low, high, someClipped) => {
      const { samples, byRole } = await step(
        ['algo.advEstimator=grpo', `algo.clipRatioLow=${low}`, `algo.clipRatioHigh=${high}`],
        { logRatio: Math.log(ratio) },
      );
      const A = grpoExpected(samples);
      const N = totalLossTokens(samples);
      const clipped = (a: number) => (a > 0 && ratio > 1 + high) || (a < 0 && ratio < 1 - low);
      expect(A.some(clipped)).toBe(someClipped);
      expectLogprobGrads(byRole('policy'), samples, (row) => (clipped(A[row]!) ? 0 : (-A[row]! * ratio) / N));
    },
  );

  it('the dual clip stops the gradient of negative-advantage tokens whose ratio exceeds c', async () => {
    const ratio = 2;
    for (const c of [1.5, 3]) {
      const { samples, byRole } = await step(
        ['algo.advEstimator=grpo', 'algo.clipRatioHigh=5', `algo.clipRatioC=${c}`],
        { logRatio: Math.log(ratio) },
      );
      const A = grpoExpected(samples);
      const N = totalLossTokens(samples);
      expectLogprobGrads(byRole('policy'), samples, (row) => (A[row]! < 0 && ratio > c ? 0 : (-A[row]! * ratio) / N));
    }
  });

  it("the entropy coefficient adds −coef/N to every loss token's entropy gradient (the bonus raises entropy)", async () => {
    const { samples, byRole } = await step(['algo.advEstimator=grpo', 'algo.entropyCoeff=0.01']);
    const call = byRole('policy');
    const N = totalLossTokens(samples);
    samples.forEach((s, row) =>
      lossTokens(s).forEach((t) => expect(at(call, call.grads.entropy, row, t)).toBeCloseTo(-0.01 / N, 8)),
    );
    const off = await step(['algo.advEstimator=grpo']);
    const g = off.byRole('policy').grads.entropy;
    expect(g === undefined || Array.from(g).every((x) => x === 0)).toBe(true);
  });

  it('the KL loss pulls log π toward a reference that differs: k2 adds coef·(log π − log π_ref)/N', async () => {
    const gap = 0.3;
    const { samples, byRole } = await step(
      ['algo.advEstimator=grpo', 'algo.kl.useKlLoss=true', 'algo.kl.coef=0.1', 'algo.kl.estimator=k2'],
      { refGap: gap },
    );
    const A = grpoExpected(samples);
    const N = totalLossTokens(samples);
    expectLogprobGrads(byRole('policy'), samples, (row) => (-A[row]! + 0.1 * gap) / N);
  });

  it('the value clip is centred on the values before the update: a critic that moved past it gets no gradient there', async () => {
    const value = (_t: number) => -0.5;
    const shift = 1; // the critic's values in the update are V_old + 1
    const { samples, byRole } = await step(
      ['algo.advEstimator=gae', 'algo.normAdvantages=false', 'algo.valueClip=0.5'],
      { value, valueShift: shift },
    );
    const critic = byRole('critic');
    const N = totalLossTokens(samples);
    let clippedTokens = 0;
    samples.forEach((s, row) => {
      const A = gaeExpected(s, value, 1, 1);
      for (const t of lossTokens(s)) {
        const R = A.get(t)! + value(t);
        const v = value(t) + shift;
        const vc = Math.min(value(t) + 0.5, Math.max(value(t) - 0.5, v));
        const clipped = (vc - R) ** 2 > (v - R) ** 2;
        if (clipped) clippedTokens++;
        expect(at(critic, critic.grads.values, row, t), `row ${row}, token ${t}`).toBeCloseTo(
          clipped ? 0 : (v - R) / N,
          6,
        );
      }
    });
    expect(clippedTokens, 'some tokens are clipped and some not').toBeGreaterThan(0);
    expect(clippedTokens).toBeLessThan(N);
  });
});

// ---- real updates on a micro model ----

const micro = modelConfig({
  vocabSize: 64,
  hiddenSize: 32,
  intermediateSize: 64,
  numLayers: 2,
  numHeads: 4,
  maxPositionEmbeddings: 64,
});

/**
 * 4 sequences of 14 random ids; the last 8 tokens are sampled (loss) tokens; rows 0, 1 get A = +1, rows 2, 3 A = −1.
 */
function microBatch() {
  const samples: TrainingSample[] = [0, 1, 2, 3].map((b) => {
    const ids = Array.from({ length: 14 }, (_, t) => (7 * b + 13 * t + 3) % 64);
    const lossMask = ids.map((_, t) => (t >= 6 ? 1 : 0));
    const zeros = ids.map(() => 0);
    return {
      ids,
      lossMask,
      logprobs: zeros,
      rewards: zeros,
      turnIds: ids.map((_, t) => (t >= 6 ? 0 : -1)),
      score: 0,
      episode: b,
      group: 0,
      tag: 'x',
      turns: [0],
      length: ids.length,
    };
  });
  const tokens = collate(samples, 0);
  const advantages = Float64Array.from(tokens.lossMask, (m, i) => (m ? (Math.floor(i / tokens.T) < 2 ? 1 : -1) : 0));
  return { tokens, advantages };
}

async function logprobs(
  engine: TrainableEngine,
  tokens: ReturnType<typeof microBatch>['tokens'],
): Promise<Float32Array> {
  return (await engine.forward(tokens, { role: 'policy' })).logprobs;
}

const schedule = { miniBatchSize: 4, microBatchSize: 2, epochs: 1, shuffleSeed: null, horizon: 8 };
const actorLoss = {
  lossAgg: 'token-mean',
  clipRatioLow: 0.2,
  clipRatioHigh: 0.28,
  clipRatioC: 3,
  logRatioClamp: 20,
  entropyCoeff: 0,
  klCoef: 0,
  klEstimator: 'k1',
} as const;

/** Mean change of log π over the loss tokens of rows with A > 0 and with A < 0 after one actor update at `lr`. */
async function actorStep(lr: number): Promise<{ up: number; down: number }> {
  const engine = LocalEngine.create(micro, { seed: 5 });
  const { tokens, advantages } = microBatch();
  const before = await logprobs(engine, tokens);
  const data: UpdateBatch = { tokens, oldLogprobs: before, advantages, returns: advantages };
  await updateActor(engine, data, actorLoss, schedule, { lr, weightDecay: 0 });
  const after = await logprobs(engine, tokens);
  engine.dispose();
  const mean = (sign: number) => {
    let s = 0;
    let n = 0;
    tokens.lossMask.forEach((m, i) => {
      if (m && Math.sign(advantages[i]!) === sign) {
        s += after[i]! - before[i]!;
        n++;
      }
    });
    return s / n;
  };
  return { up: mean(1), down: mean(-1) };
}

describe('one update moves a real model in the direction of its loss', () => {
  it('actor: log π rises on positive-advantage tokens and falls on negative ones, in proportion to the learning rate', async () => {
    const a = await actorStep(1e-4);
    const b = await actorStep(2e-4);
    expect(a.up).toBeGreaterThan(0);
    expect(a.down).toBeLessThan(0);
    // Adam's first step moves each weight by about lr, so the change is first order in lr: twice lr, twice the change.
    expect(b.up / a.up).toBeGreaterThan(1.6);
    expect(b.up / a.up).toBeLessThan(2.4);
    expect(b.down / a.down).toBeGreaterThan(1.6);
    expect(b.down / a.down).toBeLessThan(2.4);
    // ... and of the order of lr times the number of weights a token's log-prob depends on, not noise.
    expect(a.up).toBeGreaterThan(1e-4);
    expect(a.up).toBeLessThan(1e-4 * 1e5);
  });

  it('critic: one update lowers the value loss toward the returns', async () => {
    const engine = LocalEngine.create(micro, { seed: 5, critic: 'separate' });
    const { tokens, advantages } = microBatch();
    const values = async () => (await engine.forward(tokens, { role: 'critic' })).values!;
    const returns = advantages; // +1 on rows 0-1, −1 on rows 2-3
    const loss = (v: Float32Array) => {
      let s = 0;
      let n = 0;
      tokens.lossMask.forEach((m, i) => {
        if (m) {
          s += (v[i]! - returns[i]!) ** 2;
          n++;
        }
      });
      return s / n;
    };
    const before = await values();
    const data: UpdateBatch = {
      tokens,
      oldLogprobs: new Float64Array(before.length),
      advantages,
      returns,
      values: before,
    };
    await updateCritic(engine, data, { lossAgg: 'token-mean', valueClip: 10 }, schedule, { lr: 1e-3, weightDecay: 0 });
    const after = await values();
    engine.dispose();
    expect(loss(after)).toBeLessThan(loss(before) - 1e-3);
  });
});
