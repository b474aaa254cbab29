import { describe, expect, it } from 'vitest';
import { earlyWarnings } from './early-warning.js';

const repeat = (x: number, n: number): number[] => new Array<number>(n).fill(x);

describe('earlyWarnings', () => {
  it('stays quiet on a healthy run', () => {
    const r = earlyWarnings({
      rewardStd: repeat(0.4, 20),
      entropy: repeat(1.2, 20),
      gradNorm: [1, 1.1, 0.9, 1, 1.05, 0.95, 1, 1.1],
      miZscore: repeat(3, 20),
    });
    expect(r.warnings).toEqual([]);
    expect(r.stats.rewardStdRatio).toBeCloseTo(1, 12);
  });

  it('warns "echo trap ahead" when in-group reward std collapses', () => {
    // Baseline mean 0.4 over 10 steps, then 10 steps at 0.02: recent/baseline = 0.05 < 0.5.
    const r = earlyWarnings({ rewardStd: [...repeat(0.4, 10), ...repeat(0.02, 10)] });
    expect(r.warnings).toHaveLength(1);
    const w = r.warnings[0]!;
    expect(w.kind).toBe('reward_std_collapse');
    expect(w.value).toBeCloseTo(0.05, 12);
    expect(w.message).toMatch(/^echo trap ahead: in-group reward std fell to 5% of its baseline/);
    // Recent 0.3 = 75% of the baseline: above the 50% line, no warning.
    expect(earlyWarnings({ rewardStd: [...repeat(0.4, 10), ...repeat(0.3, 10)] }).warnings).toEqual([]);
  });

  it('warns on an entropy drop: 2.0 -> 0.5 is a 75% drop', () => {
    const r = earlyWarnings({ entropy: [...repeat(2, 10), ...repeat(0.5, 5)] });
    expect(r.warnings[0]!.kind).toBe('entropy_drop');
    expect(r.warnings[0]!.value).toBeCloseTo(0.75, 12);
    expect(r.warnings[0]!.message).toMatch(/dropped 75%/);
  });

  it('warns on a gradient-norm spike by z-score against the previous steps', () => {
    // Previous [1, 2, 1, 2, 1, 2]: mean 1.5, population std 0.5; latest 4 -> z = 5 > 3.
    const r = earlyWarnings({ gradNorm: [1, 2, 1, 2, 1, 2, 4] });
    expect(r.stats.gradNormZ).toBeCloseTo(5, 6);
    expect(r.warnings[0]!.kind).toBe('grad_norm_spike');
    // Latest 2.5 -> z = 2: no warning.
    expect(earlyWarnings({ gradNorm: [1, 2, 1, 2, 1, 2, 2.5] }).warnings).toEqual([]);
  });

  it('warns when the MI z-score falls (template collapse)', () => {
    const r = earlyWarnings({ miZscore: [...repeat(4, 10), ...repeat(1, 5)] });
    expect(r.warnings[0]!.kind).toBe('mi_collapse');
    expect(r.stats.miZscoreRatio).toBeCloseTo(0.25, 12);
  });

  it('says nothing until the history covers the baseline and a window, and ignores skipped (NaN) steps', () => {
    const r = earlyWarnings({ rewardStd: [...repeat(0.4, 10), 0.01, 0.01] });
    expect(r.warnings).toEqual([]);
    expect(r.stats.rewardStdRatio).toBeUndefined();
    const s = earlyWarnings({ gradNorm: [1, 2, NaN, 1, 2, 1, 2, 4] });
    expect(s.stats.gradNormZ).toBeCloseTo(5, 6);
  });
});
