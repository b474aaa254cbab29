import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import { collate, type TrainingSample } from '../agent/index.js';
import type { MetricValues } from '../metrics/index.js';
import { correctOffPolicy, tokenStaleness } from './off-policy.js';

// Two sequences of one episode each: prompt tokens (mask 0), then the sampled tokens of turns 0 and 1.
function sample(episode: number, logprobs: number[]): TrainingSample {
  return {
    ids: [1, 2, 3, 4, 5, 6],
    lossMask: [0, 0, 1, 1, 0, 1],
    logprobs: [0, 0, ...logprobs.slice(0, 2), 0, logprobs[2]!],
    rewards: [0, 0, 0, 0, 0, 1],
    turnIds: [-1, -1, 0, 0, -1, 1],
    score: 1,
    episode,
    group: 0,
    tag: 'T',
    turns: [0, 1],
    length: 6,
  };
}

describe('off-policy correction of async rollouts', () => {
  const tokens = collate(
    [
      sample(0, [Math.log(0.5), Math.log(0.2), Math.log(0.9)]),
      sample(1, [Math.log(0.4), Math.log(0.4), Math.log(0.4)]),
    ],
    0,
  );
  // Episode 0's turn 0 was sampled at version 3, everything else at version 4; the update is at version 4.
  const info = {
    versionOf: (e: number, turn: number) => (e === 0 && turn === 0 ? 3 : 4),
    current: 4,
    importanceCap: 2,
  };

  it("measures each loss token's staleness from the version that sampled its turn", () => {
    expect([...tokenStaleness(tokens, info)]).toEqual([0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(() => tokenStaleness(tokens, { ...info, current: 2 })).toThrow(/newer than the version being updated/);
  });

  it("multiplies stale tokens' advantages by min(π_old / μ, C) and leaves fresh ones alone", () => {
    // π_old (the current policy's recomputed log-probs): 0.75 and 0.8 where μ was 0.5 and 0.2.
    const old = Float32Array.from(tokens.oldLogprobs);
    old[2] = Math.log(0.75);
    old[3] = Math.log(0.8);
    old[5] = Math.log(0.3); // a fresh token whose recompute differs: weight stays 1 (μ is π_old there by definition)
    const adv = Float64Array.from({ length: 12 }, (_, i) => (tokens.lossMask[i] ? 1 + i : 0));
    const metrics: MetricValues = {};
    const out = correctOffPolicy(adv, tokens, old, tokenStaleness(tokens, info), info, metrics);
    // weights: 0.75 / 0.5 = 1.5; 0.8 / 0.2 = 4 -> truncated to 2
    expect(out[2]).toBeCloseTo(3 * 1.5, 5);
    expect(out[3]).toBeCloseTo(4 * 2, 5);
    expect([out[5], out[8], out[9], out[11]]).toEqual([6, 9, 10, 12]);
    expect(metrics['async/staleness_max']).toBe(1);
    expect(metrics['async/stale_token_frac']).toBeCloseTo(2 / 6, 12);
    expect(metrics['async/staleness_mean']).toBeCloseTo(2 / 6, 12);
    expect(metrics['async/is_weight_mean']).toBeCloseTo((1.5 + 2) / 2, 5);
    expect(metrics['async/is_truncated_frac']).toBe(0.5);
  });
});
