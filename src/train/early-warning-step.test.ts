import { describe, expect, it } from 'vitest';
import { isMetricKey, type MetricValues } from '../metrics/index.js';
import { EarlyWarningMonitor } from './early-warning-step.js';

/** A run whose in-group reward std is 0.4 for 10 steps, then falls to 0.02 (the echo trap's cliff). */
const collapsing = (step: number): MetricValues => ({
  'rollout/in_group_reward_std': step <= 10 ? 0.4 : 0.02,
  'actor/entropy': 1.5,
  'actor/grad_norm': step % 2 ? 1 : 1.2,
});

describe("EarlyWarningMonitor (the trainer's echo-trap warnings)", () => {
  it('fires reward_std_collapse on a collapsing series, announces it once, and logs listed keys', () => {
    const m = new EarlyWarningMonitor();
    const flags: (number | undefined)[] = [];
    const started: string[][] = [];
    for (let step = 1; step <= 20; step++) {
      const r = m.afterStep(collapsing(step));
      for (const k of Object.keys(r.metrics)) expect(isMetricKey(k), k).toBe(true);
      flags.push(r.metrics['early_warning/reward_std_collapse']);
      started.push(r.started.map((w) => w.kind));
    }
    // Judged from step 15 (10 baseline + 5 recent). Recent means: step 15 = 0.02 (all five past the cliff).
    expect(flags.slice(0, 14)).toEqual(new Array(14).fill(undefined));
    expect(flags.slice(14)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(started.flat()).toEqual(['reward_std_collapse']);
    expect(started[14]).toEqual(['reward_std_collapse']);
    const last = m.afterStep(collapsing(21)).metrics;
    expect(last['early_warning/reward_std_ratio']).toBeCloseTo(0.02 / 0.4, 12);
    expect(last['early_warning/entropy_drop']).toBe(0); // steady entropy: judged, quiet
    expect(last['early_warning/grad_norm_spike']).toBe(0);
  });

  it('stays quiet on a healthy run', () => {
    const m = new EarlyWarningMonitor();
    for (let step = 1; step <= 30; step++) {
      const r = m.afterStep({
        'rollout/in_group_reward_std': 0.4,
        'actor/entropy': 1.5,
        'actor/grad_norm': 1 + 0.1 * (step % 3),
      });
      expect(r.started).toEqual([]);
    }
  });

  it('keeps a bounded history whose baseline is still the first 10 steps', () => {
    const m = new EarlyWarningMonitor();
    const std = (step: number) => 0.4 / (1 + step / 50);
    let last: MetricValues = {};
    for (let step = 1; step <= 200; step++) last = m.afterStep({ 'rollout/in_group_reward_std': std(step) }).metrics;
    expect(m.state.rewardStd.length).toBeLessThanOrEqual(31);
    const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
    const baseline = mean([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(std));
    const recent = mean([196, 197, 198, 199, 200].map(std));
    expect(last['early_warning/reward_std_ratio']).toBeCloseTo(recent / baseline, 12);
    expect(last['early_warning/reward_std_collapse']).toBe(1);
  });

  it('fires the MI warning on diagnostic steps only while H(Z|X) holds, and resumes a state saved without H(Z|X)', () => {
    const m = new EarlyWarningMonitor();
    // An old checkpoint's state has no conditionalEntropy series: the monitor starts one.
    m.state = { rewardStd: [], entropy: [], gradNorm: [], miZscore: [], active: [] };
    const kinds: string[] = [];
    let last: MetricValues = {};
    for (let step = 1; step <= 16; step++) {
      const r = m.afterStep({ 'collapse/mi_zscore': step <= 10 ? 4 : 1, 'collapse/conditional_entropy': 2 });
      kinds.push(...r.started.map((w) => w.kind));
      last = r.metrics;
    }
    for (const k of Object.keys(last)) expect(isMetricKey(k), k).toBe(true);
    expect(kinds).toEqual(['mi_collapse']);
    expect(last['early_warning/cond_entropy_ratio']).toBe(1);
    expect(last['early_warning/mi_collapse']).toBe(1);
    // The same MI drop with H(Z|X) halving: judged (ratio logged) but quiet.
    const n = new EarlyWarningMonitor();
    let quiet: MetricValues = {};
    for (let step = 1; step <= 16; step++)
      quiet = n.afterStep({
        'collapse/mi_zscore': step <= 10 ? 4 : 1,
        'collapse/conditional_entropy': step <= 10 ? 2 : 1,
      }).metrics;
    expect(quiet['early_warning/mi_collapse']).toBe(0);
    expect(quiet['early_warning/cond_entropy_ratio']).toBeCloseTo(0.5, 12);
  });
});
