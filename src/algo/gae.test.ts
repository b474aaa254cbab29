import { describe, expect, it } from 'vitest';
import { ShapeError } from '../util/errors.js';
import { Rng } from '../util/rng.js';
import { biLevelGae, gae, maskedWhiten } from './gae.js';
import { randn } from './testing.js';

const close = (got: ArrayLike<number>, want: number[], digits = 10): void => {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, digits));
};

describe('gae', () => {
  it('skips a masked observation token between two turns (3 tokens, worked by hand)', () => {
    // Tokens [a, o, b], mask [1, 0, 1], reward 1 on b, values [0.5, 99, 0.2], γ = 0.9, λ = 0.8.
    // t=2: δ = 1 + 0.9·0 − 0.2 = 0.8, A2 = 0.8.            (next value and advantage start at 0)
    // t=1: masked, V_next = 0.2 and A_next = 0.8 carried; V=99 never used.
    // t=0: δ = 0 + 0.9·0.2 − 0.5 = −0.32, A0 = −0.32 + 0.72·0.8 = 0.256.
    // returns = A + V: [0.756, 0, 1.0].
    const r = gae({ rewards: [0, 0, 1], values: [0.5, 99, 0.2], mask: [1, 0, 1], B: 1, T: 3, gamma: 0.9, lambda: 0.8 });
    close(r.advantages, [0.256, 0, 0.8]);
    close(r.returns, [0.756, 0, 1.0]);
  });

  it('with γ = λ = 1 and one terminal reward gives A_t = R − V_t on every policy token', () => {
    const values = [0.1, 0.4, 7, 7, 0.3, 0.9, 0];
    const mask = [1, 1, 0, 0, 1, 1, 0];
    const rewards = [0, 0, 0, 0, 0, 2, 0];
    const r = gae({ rewards, values, mask, B: 1, T: 7, gamma: 1, lambda: 1 });
    close(r.advantages, [1.9, 1.6, 0, 0, 1.7, 1.1, 0]);
    close(r.returns, [2, 2, 0, 0, 2, 2, 0]);
  });

  it('treats rows independently', () => {
    // Row 0: single token, δ = 1 − 0.5. Row 1: A1 = 2 − 1 = 1, A0 = (0 + 1 − 0) + 1·1 = 2 (γ = λ = 1).
    const r = gae({
      rewards: [1, 0, 0, 2],
      values: [0.5, 0, 0, 1],
      mask: [1, 0, 1, 1],
      B: 2,
      T: 2,
      gamma: 1,
      lambda: 1,
    });
    close(r.advantages, [0.5, 0, 2, 1]);
  });

  it('refuses a reward on a token outside the loss mask', () => {
    expect(() =>
      gae({ rewards: [0, 1, 0], values: [0, 0, 0], mask: [1, 0, 1], B: 1, T: 3, gamma: 1, lambda: 1 }),
    ).toThrow(ShapeError);
  });
});

describe('biLevelGae', () => {
  // Tokens [a1 a2 o b1 b2], mask [1 1 0 1 1]; turn 0 = {a1, a2}, turn 1 = {b1, b2}; values [0.1 0.2 9 0.3 0.4];
  // γ_turn = 0.5, λ_turn = 1, γ = λ = 1. Turn values V0 = V(a2) = 0.2, V1 = V(b2) = 0.4.
  const values = [0.1, 0.2, 9, 0.3, 0.4];
  const mask = [1, 1, 0, 1, 1];
  const base = { values, mask, B: 1, T: 5, gamma: 1, lambda: 1, gammaTurn: 0.5, lambdaTurn: 1 };

  it('propagates per-turn rewards over turns with γ_turn, then over tokens inside each turn', () => {
    // r0 = 0.5 (on a2), r1 = 1 (on b2).
    // Turn 1: A = 1 + 0 − 0.4 = 0.6, G1 = 1.0.  Turn 0: A = 0.5 + 0.5·0.4 − 0.2 + 0.5·0.6 = 0.8, G0 = 1.0.
    // Tokens (γ = λ = 1 so A_t = G_k − V_t): a1 0.9, a2 0.8, b1 0.7, b2 0.6.
    const r = biLevelGae({ ...base, rewards: [0, 0.5, 0, 0, 1] });
    close(r.advantages, [0.9, 0.8, 0, 0.7, 0.6]);
    close(r.returns, [1, 1, 0, 1, 1]);
  });

  it('keeps a turn whose reward is 0 as a boundary (RAGEN chained it into the next turn)', () => {
    // r0 = 0, r1 = 1. Turn 1 as before (A 0.6, G1 1.0). Turn 0: A = 0 + 0.5·0.4 − 0.2 + 0.5·0.6 = 0.3, G0 = 0.5.
    // Tokens: a1 = 0.5 − 0.1 = 0.4, a2 = 0.5 − 0.2 = 0.3. (RAGEN's version gives a2 = 0.8: it bootstraps
    // a2 from b1 with the token γ because a zero-reward turn end is not a boundary there.)
    const r = biLevelGae({ ...base, rewards: [0, 0, 0, 0, 1] });
    close(r.advantages, [0.4, 0.3, 0, 0.7, 0.6]);
  });

  it('attributes a reward on an observation token to the preceding turn', () => {
    const a = biLevelGae({ ...base, rewards: [0, 0, 0.5, 0, 1] });
    const b = biLevelGae({ ...base, rewards: [0, 0.5, 0, 0, 1] });
    close(a.advantages, Array.from(b.advantages));
  });

  it('takes explicit turnIds, which may split adjacent loss tokens into two turns', () => {
    // TokenMask [1 1 1 1] with turnIds [0 0 1 1]: same arithmetic as the first test without the observation.
    const r = biLevelGae({
      ...base,
      values: [0.1, 0.2, 0.3, 0.4],
      mask: [1, 1, 1, 1],
      T: 4,
      rewards: [0, 0.5, 0, 1],
      turnIds: [0, 0, 1, 1],
    });
    close(r.advantages, [0.9, 0.8, 0.7, 0.6]);
  });

  it('equals plain GAE for a single turn with γ = λ = 1', () => {
    const rng = new Rng(3);
    const v = randn(rng, 6);
    const m = [0, 1, 1, 1, 1, 0];
    const rw = [0, 0, 0, 0, 1.5, 0];
    const a = biLevelGae({ rewards: rw, values: v, mask: m, B: 1, T: 6, gamma: 1, lambda: 1, gammaTurn: 0.95 });
    const b = gae({ rewards: rw, values: v, mask: m, B: 1, T: 6, gamma: 1, lambda: 1 });
    close(a.advantages, Array.from(b.advantages));
  });

  it('rejects a reward before the first turn and decreasing turn ids', () => {
    expect(() => biLevelGae({ ...base, mask: [0, 1, 0, 1, 1], rewards: [1, 0, 0, 0, 0] })).toThrow(
      /before the row's first turn/,
    );
    expect(() => biLevelGae({ ...base, rewards: [0, 0, 0, 0, 1], turnIds: [1, 1, -1, 0, 0] })).toThrow(
      /must not decrease/,
    );
  });
});

describe('maskedWhiten', () => {
  it('centres and scales over loss tokens with the unbiased variance', () => {
    // Loss tokens [1, 2, 3]: mean 2, var = (1 + 0 + 1)/2 = 1 -> [−1, 0, 1]; the masked 100 is ignored and zeroed.
    close(maskedWhiten([1, 100, 2, 3], [1, 0, 1, 1]), [-1 / Math.sqrt(1 + 1e-8), 0, 0, 1 / Math.sqrt(1 + 1e-8)]);
  });
  it('keeps the mean when shiftMean is false', () => {
    close(maskedWhiten([1, 2, 3], [1, 1, 1], false), [2 - 1 / Math.sqrt(1 + 1e-8), 2, 2 + 1 / Math.sqrt(1 + 1e-8)]);
  });
});
