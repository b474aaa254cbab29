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

  it('calls an MI drop template collapse only while H(Z|X) holds', () => {
    const miZscore = [...repeat(4, 10), ...repeat(1, 5)];
    // H(Z|X) 2.0 -> 1.8 (90% of baseline): the reasoning stays varied while MI falls -> warn, naming the hold.
    const held = earlyWarnings({ miZscore, conditionalEntropy: [...repeat(2, 10), ...repeat(1.8, 5)] });
    expect(held.warnings.map((w) => w.kind)).toEqual(['mi_collapse']);
    expect(held.stats.condEntropyRatio).toBeCloseTo(0.9, 12);
    expect(held.warnings[0]!.message).toMatch(/while H\(Z\|X\) held at 90% of its baseline/);
    // H(Z|X) 2.0 -> 1.0: both fell (low-entropy collapse, not template collapse) -> no MI warning.
    const fell = earlyWarnings({ miZscore, conditionalEntropy: [...repeat(2, 10), ...repeat(1, 5)] });
    expect(fell.warnings).toEqual([]);
    expect(fell.stats.condEntropyRatio).toBeCloseTo(0.5, 12);
    // Exactly at the hold ratio (0.8) still counts as holding; a custom ratio moves the line.
    expect(
      earlyWarnings({ miZscore, conditionalEntropy: [...repeat(2, 10), ...repeat(1.6, 5)] }).warnings,
    ).toHaveLength(1);
    expect(
      earlyWarnings(
        { miZscore, conditionalEntropy: [...repeat(2, 10), ...repeat(1.6, 5)] },
        { condEntropyHoldRatio: 0.9 },
      ).warnings,
    ).toEqual([]);
  });

  it('says nothing until the history covers the baseline and a window, and ignores skipped (NaN) steps', () => {
    const r = earlyWarnings({ rewardStd: [...repeat(0.4, 10), 0.01, 0.01] });
    expect(r.warnings).toEqual([]);
    expect(r.stats.rewardStdRatio).toBeUndefined();
    const s = earlyWarnings({ gradNorm: [1, 2, NaN, 1, 2, 1, 2, 4] });
    expect(s.stats.gradNormZ).toBeCloseTo(5, 6);
  });
});
