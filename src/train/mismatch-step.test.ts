// mismatch/<tag>/* in the step: a two-source batch collated from samples as the rollout gives them (one built-in env, one
// agent entry), the trainer's log-probs shifted on known tokens, each tag's numbers worked by hand from those shifts.
import { describe, expect, it } from 'vitest';
import { collate, type TrainingSample } from '../agent/index.js';
import type { RagenConfig } from '../config/index.js';
import { describeMetric, isMetricKey, type MetricValues } from '../metrics/index.js';
import { correctMismatch } from './mismatch-step.js';

/** A sample of `tag` whose loss tokens carry the sampler's log-probs `logprobs` (prompt token first, untrained). */
const sample = (tag: string, episode: number, logprobs: number[]): TrainingSample => ({
  ids: [1, ...logprobs.map((_, i) => 2 + i)],
  lossMask: [0, ...logprobs.map(() => 1)],
  logprobs: [0, ...logprobs],
  rewards: [0, ...logprobs.map(() => 0)],
  turnIds: [-1, ...logprobs.map(() => 0)],
  score: 0,
  episode,
  group: episode,
  tag,
  turns: [0],
  length: 1 + logprobs.length,
});

describe('correctMismatch per source', () => {
  // Sokoban: rows 0 and 2; the agent entry `shop`: row 1. The trainer moves Sokoban's tokens by δ and leaves the
  // agent's alone (as if only one source's sampler drifted).
  const tokens = collate(
    [sample('SimpleSokoban', 0, [-1, -2, -0.5]), sample('shop', 1, [-0.3, -4]), sample('SimpleSokoban', 2, [-1.2])],
    0,
  );
  const delta = new Map([
    [1, 0.5], // (0, 1)
    [3, -1], // (0, 3)
    [9, 0.1], // (2, 1)
  ]);
  const trainer = Float64Array.from(tokens.oldLogprobs, (lp, i) => lp + (delta.get(i) ?? 0));
  const correction: RagenConfig['algo']['rolloutCorrection'] = {
    mode: 'off',
    level: 'token',
    threshold: 2,
    lowerThreshold: 0,
    rejectBound: null,
  };

  const run = (): MetricValues => {
    const metrics: MetricValues = {};
    correctMismatch(new Float64Array(tokens.B * tokens.T), tokens, trainer, correction, metrics);
    return metrics;
  };

  it("writes each tag's statistics over its own loss tokens, worked by hand", () => {
    const m = run();
    // Sokoban's loss tokens: δ = 0.5, 0, −1 (row 0) and 0.1 (row 2); log 2 = 0.693.
    const d = [0.5, 0, -1, 0.1];
    expect(m['mismatch/SimpleSokoban/log_ratio_abs_mean']).toBeCloseTo(1.6 / 4, 6);
    expect(m['mismatch/SimpleSokoban/log_ratio_abs_max']).toBeCloseTo(1, 6);
    expect(m['mismatch/SimpleSokoban/k3_kl']).toBeCloseTo(d.reduce((s, x) => s + Math.exp(x) - 1 - x, 0) / 4, 6);
    expect(m['mismatch/SimpleSokoban/frac_ratio_high']).toBe(0);
    expect(m['mismatch/SimpleSokoban/frac_ratio_low']).toBe(1 / 4);
    // The overall family averages over all six loss tokens, the agent's two zeros included.
    expect(m['mismatch/log_ratio_abs_mean']).toBeCloseTo(1.6 / 6, 6);
  });

  it('reads 0 for the source whose tokens all match, while the drifted one does not', () => {
    const m = run();
    for (const name of [
      'log_ratio_abs_mean',
      'log_ratio_abs_max',
      'k3_kl',
      'frac_ratio_high',
      'frac_ratio_low',
    ] as const)
      expect(m[`mismatch/shop/${name}`], name).toBe(0);
    expect(m['mismatch/SimpleSokoban/log_ratio_abs_max']).toBeGreaterThan(0);
  });

  it('writes only keys src/metrics/names.ts documents', () => {
    const keys = Object.keys(run());
    expect(keys.filter((k) => k.startsWith('mismatch/shop/'))).toHaveLength(5);
    for (const k of keys) expect(isMetricKey(k), k).toBe(true);
    expect(describeMetric('mismatch/shop/k3_kl')).toMatch(/k3 estimate/);
    expect(isMetricKey('mismatch/shop/log_ratio_mean_typo')).toBe(false);
  });
});
