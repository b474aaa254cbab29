// Direction tests of the policy losses beside PPO's clip (GSPO, CISPO) and of the rollout correction: whole StarPO
// steps against a RecordingEngine, the gradients handed to the engine checked against the documented formulas,
// computed independently here. Flipping a sign, a ratio or a clip in the trainer fails them.
import { describe, expect, it } from 'vitest';
import type { TrainingSample } from '../agent/index.js';
import { registerTestCorridor, ScriptedEngine } from '../agent/testing.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { corridorStep, type RecordedBackward, type RecordingOutputs } from './testing.js';

registerTestCorridor();
const tokenizer = loadTokenizer(tinyTokenizerDir());
/** One GRPO step on the corridor (src/train/testing.ts), KL controller at 0. */
async function step(overrides: string[], outputs: Partial<RecordingOutputs> = {}) {
  const { out, samples, engine } = await corridorStep(tokenizer, ['algo.advEstimator=grpo', ...overrides], {
    outputs,
    kl: 0,
  });
  const calls = engine.backwards.filter((b) => b.role === 'policy');
  expect(calls).toHaveLength(1);
  expect(calls[0]!.sequences).toEqual(samples.map((s) => s.ids));
  return { out, samples, policy: calls[0]! };
}

const lossTokens = (s: TrainingSample) => s.lossMask.flatMap((m, t) => (m ? [t] : []));
const totalLossTokens = (samples: TrainingSample[]) => samples.reduce((n, s) => n + lossTokens(s).length, 0);

/** GRPO by its definition: (s − group mean) / (unbiased group std + 1e-6). */
function grpo(samples: TrainingSample[]): number[] {
  return samples.map((s) => {
    const g = samples.filter((o) => o.group === s.group && o.tag === s.tag).map((o) => o.score);
    const mean = g.reduce((a, x) => a + x, 0) / g.length;
    const std = Math.sqrt(g.reduce((a, x) => a + (x - mean) ** 2, 0) / (g.length - 1));
    return (s.score - mean) / (std + 1e-6);
  });
}

function expectGrads(call: RecordedBackward, samples: TrainingSample[], expected: (row: number, t: number) => number) {
  samples.forEach((s, row) => {
    for (let t = 1; t < s.ids.length; t++) {
      const want = s.lossMask[t] ? expected(row, t) : 0;
      expect(call.grads.logprobs![row * call.T + t], `row ${row}, token ${t}`).toBeCloseTo(want, 6);
    }
  });
}

describe('algo.policyLoss reaches the gradient', () => {
  it.each([
    ['GSPO clip 0.5 leaves s = 1.1 alone', 0.5, false],
    ['GSPO clip 0.05 binds at s = 1.1 for positive advantages', 0.05, true],
  ] as const)('gspo: d/dlogπ = −A·s/N unless its own clip binds (%s)', async (_n, clip, someClipped) => {
    // PPO's own clip (0.01) would clip every token at ratio 1.1: only GSPO's range may decide here.
    const ratio = 1.1;
    const { samples, policy } = await step(
      [
        'algo.policyLoss=gspo',
        'algo.clipRatioLow=0.01',
        'algo.clipRatioHigh=0.01',
        `algo.gspo.clipRatioLow=${clip}`,
        `algo.gspo.clipRatioHigh=${clip}`,
      ],
      { logRatio: Math.log(ratio) },
    );
    const A = grpo(samples);
    const N = totalLossTokens(samples);
    const clipped = (a: number) => (a > 0 && ratio > 1 + clip) || (a < 0 && ratio < 1 - clip);
    expect(A.some(clipped)).toBe(someClipped);
    expectGrads(policy, samples, (row) => (clipped(A[row]!) ? 0 : (-A[row]! * ratio) / N));
  });

  it('gspo under seq-mean-token-mean: each row weighs 1/(len·G)', async () => {
    const ratio = 1.02;
    const { samples, policy } = await step(
      ['algo.policyLoss=gspo', 'algo.lossAgg=seq-mean-token-mean', 'algo.gspo.clipRatioHigh=0.5'],
      { logRatio: Math.log(ratio) },
    );
    const A = grpo(samples);
    const G = samples.length;
    expectGrads(policy, samples, (row) => (-A[row]! * ratio) / (lossTokens(samples[row]!).length * G));
  });

  it.each([
    [1.5, 1.28],
    [0.5, 0.5],
  ])('cispo at ratio %s: every token gets −clip(r)·A/N = −%s·A/N, clipped or not', async (ratio, weight) => {
    const { samples, policy } = await step(
      ['algo.policyLoss=cispo', 'algo.cispo.clipRatioLow=1', 'algo.cispo.clipRatioHigh=0.28'],
      { logRatio: Math.log(ratio) },
    );
    const A = grpo(samples);
    const N = totalLossTokens(samples);
    expectGrads(policy, samples, (row) => (-A[row]! * weight) / N);
  });
});

describe('algo.rolloutCorrection reaches the gradient, and mismatch/* measures what it corrects', () => {
  // π_old (the recompute) is 0 on every token; the sampler recorded μ = fakeLogprob(id) ∈ [−0.7, −0.1]:
  // ρ_t = π_old/μ = e^{−μ} ∈ [1.105, 2.014].
  const outputs = { oldLogprob: () => 0 };
  const rho = (s: TrainingSample, t: number) => Math.exp(-ScriptedEngine.fakeLogprob(s.ids[t]!));

  it('off: advantages untouched, mismatch/* logged from the same log-ratios', async () => {
    const { samples, policy, out } = await step([], outputs);
    const A = grpo(samples);
    const N = totalLossTokens(samples);
    expectGrads(policy, samples, (row) => -A[row]! / N);
    const deltas = samples.flatMap((s) => lossTokens(s).map((t) => Math.log(rho(s, t))));
    const m = out.metrics;
    expect(m['mismatch/log_ratio_mean']).toBeCloseTo(deltas.reduce((a, x) => a + x, 0) / deltas.length, 6);
    expect(m['mismatch/log_ratio_abs_max']).toBeCloseTo(Math.max(...deltas), 6);
    expect(m['mismatch/frac_ratio_high']).toBeCloseTo(deltas.filter((d) => d > Math.log(2)).length / deltas.length, 9);
    expect(m['mismatch/is_weight_mean']).toBeUndefined();
  });

  it('token TIS at C = 1.5: each token’s gradient is −A·min(ρ_t, 1.5)/N', async () => {
    const { samples, policy, out } = await step(
      ['algo.rolloutCorrection.mode=tis', 'algo.rolloutCorrection.threshold=1.5'],
      outputs,
    );
    const A = grpo(samples);
    const N = totalLossTokens(samples);
    const w = (row: number, t: number) => Math.min(rho(samples[row]!, t), 1.5);
    expect(samples.some((s) => lossTokens(s).some((t) => rho(s, t) > 1.5))).toBe(true);
    expectGrads(policy, samples, (row, t) => (-A[row]! * w(row, t)) / N);
    expect(out.metrics['mismatch/is_token_frac']).toBeGreaterThan(0);
  });

  it('sequence MIS at C = 1.5 zeroes every row whose product of ratios exceeds it (here: all of them)', async () => {
    const { policy, out } = await step(
      [
        'algo.rolloutCorrection.mode=mis',
        'algo.rolloutCorrection.level=sequence',
        'algo.rolloutCorrection.threshold=1.5',
      ],
      outputs,
    );
    expect(Array.from(policy.grads.logprobs!).every((g) => g === 0)).toBe(true);
    expect(out.metrics['mismatch/is_weight_mean']).toBe(0);
  });

  it('geometric rejection at b = 1.6 drops the rows whose geometric-mean ratio exceeds 1.6', async () => {
    // Geometric means here: 1.568 (even rows), 1.621 (odd rows).
    const { samples, policy, out } = await step(['algo.rolloutCorrection.rejectBound=1.6'], outputs);
    const A = grpo(samples);
    const N = totalLossTokens(samples);
    const kept = samples.map((s) => {
      const d = lossTokens(s).map((t) => Math.log(rho(s, t)));
      return d.reduce((a, x) => a + x, 0) / d.length <= Math.log(1.6);
    });
    expect(kept.some((k) => k) && kept.some((k) => !k)).toBe(true);
    expectGrads(policy, samples, (row) => (kept[row] ? -A[row]! / N : 0));
    expect(out.metrics['mismatch/rejected_seq_frac']).toBeCloseTo(kept.filter((k) => !k).length / kept.length, 9);
  });
});
