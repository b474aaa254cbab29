import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.js';
import { computeAdvantage, needsCritic, parseAdvEstimator } from './advantages.js';
import {
  grpoAdvantage,
  reinforcePPAdvantage,
  reinforcePPBaselineAdvantage,
  rlooAdvantage,
} from './outcome-advantage.js';

const close = (got: ArrayLike<number>, want: number[], digits = 9): void => {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, digits));
};

// Five sequences of T = 2 tokens, all tokens in the loss; rewards split over tokens to check that scores are sums.
// Scores: 1, 3 (group a), 2, 2 (group b: a tie), 5 (group c: a singleton).
const T = 2;
const B = 5;
const rewards = [0.5, 0.5, 1, 2, 2, 0, 0, 2, 5, 0];
const mask = [1, 1, 1, 1, 1, 1, 1, 1, 1, 0];
const groupIds = ['a', 'a', 'b', 'b', 'c'];

describe('grpoAdvantage', () => {
  it('normalises within groups by the unbiased std; a tie gives 0; a singleton uses mean 0, std 1', () => {
    // Group a: mean 2, std = sqrt((1 + 1)/1) = √2 -> ∓1/(√2 + 1e-6). Group b: std 0 -> 0/(0 + 1e-6) = 0.
    // Group c: (5 − 0)/(1 + 1e-6).
    const s2 = Math.SQRT2 + 1e-6;
    const r = grpoAdvantage({ rewards, mask, B, T, groupIds });
    close(r.seqAdvantages, [-1 / s2, 1 / s2, 0, 0, 5 / (1 + 1e-6)]);
    close(r.advantages, [-1 / s2, -1 / s2, 1 / s2, 1 / s2, 0, 0, 0, 0, 5 / (1 + 1e-6), 0]);
    close(r.groupStd, [Math.SQRT2, Math.SQRT2, 0, 0, 1]);
  });

  it('is Dr. GRPO without the std: s − mean', () => {
    const r = grpoAdvantage({ rewards, mask, B, T, groupIds, normByStd: false });
    close(r.seqAdvantages, [-1, 1, 0, 0, 5]);
  });

  it('counts each episode once in group statistics in per-turn layouts', () => {
    // Three rows of one group: episode e1 has two turn rows (score 1 each), e2 one row (score 3).
    // Deduplicated mean = (1 + 3)/2 = 2 (not 5/3), so Dr. GRPO gives [−1, −1, 1].
    const r = grpoAdvantage({
      rewards: [1, 1, 3],
      mask: [1, 1, 1],
      B: 3,
      T: 1,
      groupIds: [0, 0, 0],
      episodeIds: ['e1', 'e1', 'e2'],
      normByStd: false,
    });
    close(r.seqAdvantages, [-1, -1, 1]);
  });
});

describe('rlooAdvantage', () => {
  it('subtracts the mean of the other samples of the group', () => {
    // Group [1, 2, 6]: 1 − (2+6)/2 = −3, 2 − (1+6)/2 = −1.5, 6 − (1+2)/2 = 4.5; singleton 4 keeps 4.
    const r = rlooAdvantage({ rewards: [1, 2, 6, 4], mask: [1, 1, 1, 1], B: 4, T: 1, groupIds: [7, 7, 7, 8] });
    close(r.seqAdvantages, [-3, -1.5, 4.5, 4]);
  });
});

describe('reinforcePPAdvantage', () => {
  it('discounts over policy tokens and carries the return across observation tokens', () => {
    // Tokens [a a o a], reward 1 on the last, γ = 0.5: G3 = 1, o skipped, G1 = 0.5, G0 = 0.25.
    // (veRL resets the return at o, which would give G0 = G1 = 0.)
    const r = reinforcePPAdvantage({ rewards: [0, 0, 0, 1], mask: [1, 1, 0, 1], B: 1, T: 4, gamma: 0.5 });
    close(r.advantages, [0.25, 0.5, 0, 1]);
  });
  it('with a baseline subtracts the group mean', () => {
    const r = reinforcePPBaselineAdvantage({ rewards: [1, 3, 2], mask: [1, 1, 1], B: 3, T: 1, groupIds: [0, 0, 1] });
    close(r.seqAdvantages, [-1, 1, 2]);
  });
});

describe('computeAdvantage', () => {
  const DISCOUNT = { gamma: 1, lambda: 1, gammaTurn: 0.95 }; // RAGEN's; the cases below override what they test
  it('routes grpo without whitening and dr_grpo without the std', () => {
    const g = computeAdvantage({ rewards, mask, B, T, groupIds }, { ...DISCOUNT, advEstimator: 'grpo' });
    close(g.advantages, Array.from(grpoAdvantage({ rewards, mask, B, T, groupIds }).advantages));
    const d = computeAdvantage({ rewards, mask, B, T, groupIds }, { ...DISCOUNT, advEstimator: 'dr_grpo' });
    close(d.advantages, [-1, -1, 1, 1, 0, 0, 0, 0, 5, 0]);
  });

  it('whitens gae by default: masked mean 0 and unbiased variance 1', () => {
    const r = computeAdvantage(
      { rewards: [0, 1, 0, 0, 0, 3], values: [0.2, 0.1, 0, 0.5, 0.7, 0.4], mask: [1, 1, 0, 1, 1, 1], B: 2, T: 3 },
      { ...DISCOUNT, advEstimator: 'gae' },
    );
    const xs = [0, 1, 3, 4, 5].map((i) => r.advantages[i]!);
    const m = xs.reduce((a, x) => a + x, 0) / 5;
    const v = xs.reduce((a, x) => a + (x - m) ** 2, 0) / 4;
    expect(m).toBeCloseTo(0, 12);
    expect(v).toBeCloseTo(1, 6);
    expect(r.advantages[2]).toBe(0);
  });

  it('whitens reinforce_pp and reinforce_pp_baseline by default (as veRL), not rloo', () => {
    // reinforce_pp, one row [a a], reward 1 on the last, γ = 0.5: returns [0.5, 1]; mean 0.75, unbiased var 0.125
    // -> ∓0.25/√0.125 = ∓1/√2.
    const r = computeAdvantage(
      { rewards: [0, 1], mask: [1, 1], B: 1, T: 2 },
      { ...DISCOUNT, advEstimator: 'reinforce_pp', gamma: 0.5 },
    );
    close(r.advantages, [-Math.SQRT1_2, Math.SQRT1_2], 6);
    close(
      computeAdvantage(
        { rewards: [0, 1], mask: [1, 1], B: 1, T: 2 },
        { ...DISCOUNT, advEstimator: 'reinforce_pp', gamma: 0.5, normAdvantages: false },
      ).advantages,
      [0.5, 1],
    );
    // Baseline, one group of scores [1, 3]: [−1, 1]; var (1 + 1)/1 = 2 -> ∓1/√2. RLOO on the same: [−2, 2], unwhitened.
    const g = { rewards: [1, 3], mask: [1, 1], B: 2, T: 1, groupIds: [0, 0] };
    close(
      computeAdvantage(g, { ...DISCOUNT, advEstimator: 'reinforce_pp_baseline' }).advantages,
      [-Math.SQRT1_2, Math.SQRT1_2],
      6,
    );
    close(computeAdvantage(g, { ...DISCOUNT, advEstimator: 'rloo' }).advantages, [-2, 2]);
  });

  it('names what is missing', () => {
    expect(() => computeAdvantage({ rewards, mask, B, T }, { ...DISCOUNT, advEstimator: 'gae' })).toThrow(ConfigError);
    expect(() => computeAdvantage({ rewards, mask, B, T }, { ...DISCOUNT, advEstimator: 'rloo' })).toThrow(
      /needs `groupIds`/,
    );
  });

  it('parses veRL spellings and suggests names', () => {
    expect(parseAdvEstimator('reinforce_plus_plus')).toBe('reinforce_pp');
    expect(() => parseAdvEstimator('grpoo')).toThrow(/Did you mean `grpo`/);
    expect(needsCritic('bi_level_gae')).toBe(true);
    expect(needsCritic('rloo')).toBe(false);
  });
});
