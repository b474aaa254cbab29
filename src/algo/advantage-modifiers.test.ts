import { describe, expect, it } from 'vitest';
import { lengthWeightAdvantages, scaleByKeptRatio, softReweightByGroupStd } from './advantage-modifiers.js';

const close = (got: ArrayLike<number>, want: number[], digits = 9): void => {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, digits));
};

describe('advantage modifiers', () => {
  it('soft reweighting scales each sequence by σ_g / (max σ + 1e-6)', () => {
    // Group stds 1 and 0.5: weights 1/(1 + 1e-6) and 0.5/(1 + 1e-6).
    const r = softReweightByGroupStd({ advantages: [2, 2, 4, 4], groupStd: [1, 0.5], B: 2, T: 2 });
    close(r.weights, [1 / (1 + 1e-6), 0.5 / (1 + 1e-6)]);
    close(r.advantages, [2 / (1 + 1e-6), 2 / (1 + 1e-6), 2 / (1 + 1e-6), 2 / (1 + 1e-6)]);
  });

  it('kept-ratio scaling: none, linear, sqrt', () => {
    close(scaleByKeptRatio([2, -4], 0.25, 'none'), [2, -4]);
    close(scaleByKeptRatio([2, -4], 0.25, 'linear'), [0.5, -1]);
    close(scaleByKeptRatio([2, -4], 0.25, 'sqrt'), [1, -2]);
  });

  it('length weighting divides by length / mean length', () => {
    // Lengths 1 and 3, mean 2: row 0 × 2/(1 + 1e-6), row 1 × 2/(3 + 1e-6).
    const r = lengthWeightAdvantages({ advantages: [3, 0, 0, 3, 3, 3], mask: [1, 0, 0, 1, 1, 1], B: 2, T: 3 });
    close(r, [6 / (1 + 1e-6), 0, 0, 2 / (1 + 1e-6 / 3), 2 / (1 + 1e-6 / 3), 2 / (1 + 1e-6 / 3)]);
  });
});
