import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.js';
import { entropyFromLogits, entropyFromLogitsBackward } from './entropy.js';
import { broadcastOverMask, seqLengths, seqMeanTokens } from './shape.js';
import { maxGradError, randn } from './testing.js';

describe('entropyFromLogits', () => {
  it('is log V for equal logits and 0 for a (near) one-hot distribution', () => {
    const h = entropyFromLogits([3, 3, 3, 3, 100, 0, 0, 0], 4);
    expect(h[0]).toBeCloseTo(Math.log(4), 12);
    expect(h[1]).toBeCloseTo(0, 12);
  });
  it('matches −Σ p log p for logits (0, log 3): p = (1/4, 3/4)', () => {
    const want = -(0.25 * Math.log(0.25) + 0.75 * Math.log(0.75));
    expect(entropyFromLogits([0, Math.log(3)], 2)[0]).toBeCloseTo(want, 12);
  });
  it('backward matches central differences', () => {
    const rng = new Rng(2);
    const V = 5;
    const z = randn(rng, 3 * V, 2);
    const gH = [0.3, -1.2, 2];
    const f = (x: Float64Array): number => entropyFromLogits(x, V).reduce((a, h, r) => a + gH[r]! * h, 0);
    expect(maxGradError(f, z, entropyFromLogitsBackward(z, V, gH))).toBeLessThan(1e-8);
  });
  it('rejects a logit count that is not a multiple of V', () => {
    expect(() => entropyFromLogits([1, 2, 3], 2)).toThrow(/V = 2/);
  });
});

describe('shape helpers', () => {
  it('count, average and broadcast per sequence over the mask', () => {
    const mask = [1, 1, 0, 0, 0, 0, 1, 0, 1];
    expect(Array.from(seqLengths(mask, 3, 3))).toEqual([2, 0, 2]);
    expect(Array.from(seqMeanTokens([1, 3, 9, 9, 9, 9, 4, 9, 6], mask, 3, 3))).toEqual([2, 0, 5]);
    expect(Array.from(broadcastOverMask([7, 8, 9], mask, 3, 3))).toEqual([7, 7, 0, 0, 0, 0, 9, 0, 9]);
  });
});
