// The dashboard's curve smoothing, on values worked out by hand.
import { describe, expect, it } from 'vitest';
import { smooth } from '../../dashboard-ui/src/smooth.js';

describe('curve smoothing (debiased EMA)', () => {
  it('starts at the first value and follows the hand-computed debiased average', () => {
    // w = 0.5: s1 = 0.5 / 0.5 = 1; s2 = (0.25 + 1.5) / 0.75 = 7/3; s3 = (0.875 + 2.5) / 0.875 = 27/7.
    const out = smooth([1, 3, 5], 0.5);
    expect(out[0]).toBeCloseTo(1, 12);
    expect(out[1]).toBeCloseTo(7 / 3, 12);
    expect(out[2]).toBeCloseTo(27 / 7, 12);
  });

  it('keeps gaps as gaps without counting them, and leaves values alone at weight 0', () => {
    const out = smooth([1, null, 3], 0.5);
    expect(out[1]).toBeNull();
    expect(out[2]).toBeCloseTo(7 / 3, 12);
    expect(smooth([1, null, 3], 0)).toEqual([1, null, 3]);
    expect(smooth([2, 2, 2, 2], 0.9).every((v) => Math.abs(v! - 2) < 1e-12)).toBe(true);
  });
});
