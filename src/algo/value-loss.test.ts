import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.js';
import { aggNorm, LOSS_AGG_MODES } from './aggregate.js';
import { clippedValueLoss } from './value-loss.js';
import { maxGradError, randMask, randn } from './testing.js';

describe('clippedValueLoss', () => {
  it('takes the larger of the unclipped and clipped errors (hand-worked, ε = 0.5)', () => {
    // Token 1: V 1.0, V_old 0, R 2: clip(V) = 0.5; (1−2)² = 1 < (0.5−2)² = 2.25 -> clipped: ½·2.25, grad 0.
    // Token 2: V 0.2, V_old 0, R 1: clip(V) = 0.2 = V -> ½·0.64 = 0.32, grad V − R = −0.8.
    // Token 3: V 2.0, V_old 0, R 3: clip(V) = 0.5; (2−3)² = 1 < (0.5−3)² = 6.25 -> clipped.
    // Token 4: V 2.0, V_old 0, R 0: clip(V) = 0.5; 4 > 0.25 -> unclipped ½·4 = 2, grad 2.
    // token-mean: (1.125 + 0.32 + 3.125 + 2)/4 = 1.6425; grads divided by 4.
    const r = clippedValueLoss({
      values: [1, 0.2, 2, 2],
      oldValues: [0, 0, 0, 0],
      returns: [2, 1, 3, 0],
      mask: [1, 1, 1, 1],
      B: 1,
      T: 4,
      lossAgg: 'token-mean',
      valueClip: 0.5,
    });
    expect(r.loss).toBeCloseTo(1.6425, 12);
    [0, -0.2, 0, 0.5].forEach((g, i) => expect(r.grad.values[i]).toBeCloseTo(g, 12));
    expect(r.stats.vfClipfrac).toBe(0.5);
    expect(r.stats.vpredMean).toBeCloseTo(1.3, 12);
  });

  it('with valueClip ∞ is the plain squared error', () => {
    const r = clippedValueLoss({
      values: [1, 3],
      oldValues: [0, 0],
      returns: [2, 0],
      mask: [1, 1],
      B: 1,
      T: 2,
      lossAgg: 'seq-mean-token-sum',
      valueClip: Infinity,
    });
    expect(r.loss).toBeCloseTo(0.5 * (1 + 9), 12);
  });

  it('gradient matches central differences in every mode, and micro-batches add up', () => {
    const rng = new Rng(4);
    const B = 4;
    const T = 5;
    const oldV = randn(rng, B * T);
    const v = Float64Array.from(oldV, (x) => {
      let d: number;
      do d = rng.normal() * 0.6;
      while (Math.abs(Math.abs(d) - 0.5) < 1e-3); // away from the clip edges
      return x + d;
    });
    const R = randn(rng, B * T);
    const mask = randMask(rng, B * T);
    for (const lossAgg of LOSS_AGG_MODES) {
      const f = (x: Float64Array): number =>
        clippedValueLoss({ values: x, oldValues: oldV, returns: R, mask, B, T, lossAgg, valueClip: 0.5 }).loss;
      const r = clippedValueLoss({ values: v, oldValues: oldV, returns: R, mask, B, T, lossAgg, valueClip: 0.5 });
      expect(r.stats.vfClipfrac).toBeGreaterThan(0);
      expect(maxGradError(f, v, r.grad.values)).toBeLessThan(1e-7);
      const norm = aggNorm(mask, B, T);
      const sl = (x: Float64Array, a: number, b: number) => x.subarray(a * T, b * T);
      const parts = [
        [0, 3],
        [3, 4],
      ].map(
        ([a, b]) =>
          clippedValueLoss({
            values: sl(v, a!, b!),
            oldValues: sl(oldV, a!, b!),
            returns: sl(R, a!, b!),
            mask: sl(mask, a!, b!),
            B: b! - a!,
            T,
            lossAgg,
            valueClip: 0.5,
            norm,
          }).loss,
      );
      expect(parts[0]! + parts[1]!).toBeCloseTo(r.loss, 12);
    }
  });
});
