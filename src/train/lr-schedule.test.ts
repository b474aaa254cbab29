import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import { defaultConfig, loadConfig } from '../config/index.js';
import { lrAt, lrScheduleOf, optimizerSettings, type LrSchedule } from './lr-schedule.js';

const cosine: LrSchedule = { kind: 'warmup_cosine', warmupSteps: 4, minLrRatio: 0.1, totalSteps: 14 };

describe('learning-rate schedules', () => {
  it('constant without warmup is the peak at every step', () => {
    const s: LrSchedule = { kind: 'constant', warmupSteps: 0, minLrRatio: 0.1, totalSteps: 5 };
    expect([1, 2, 5].map((t) => lrAt(t, 0.5, s))).toEqual([0.5, 0.5, 0.5]);
  });

  it('warms up linearly from peak/warmupSteps to the peak', () => {
    expect([1, 2, 3, 4].map((t) => lrAt(t, 1, cosine))).toEqual([0.25, 0.5, 0.75, 1]);
    expect(lrAt(2, 1, { ...cosine, kind: 'constant' })).toBe(0.5);
    expect(lrAt(9, 1, { ...cosine, kind: 'constant' })).toBe(1);
  });

  it('decays by a half cosine from the peak to minLrRatio * peak at the last step', () => {
    // Steps 5..15 after a 4-step warmup: progress 0 at step 5, 1/2 at step 10, 1 at step 15.
    const s = { ...cosine, totalSteps: 15 };
    expect(lrAt(5, 2, s)).toBeCloseTo(2, 12);
    expect(lrAt(10, 2, s)).toBeCloseTo(0.2 + (2 - 0.2) / 2, 12);
    expect(lrAt(15, 2, s)).toBeCloseTo(0.2, 12);
    for (let t = 5; t < 15; t++) expect(lrAt(t + 1, 2, s)).toBeLessThan(lrAt(t, 2, s));
    expect(lrAt(20, 2, s)).toBeCloseTo(0.2, 12); // past the end it stays at the floor
  });

  it('rejects step 0 (steps are 1-based)', () => {
    expect(() => lrAt(0, 1, cosine)).toThrow(/integer >= 1/);
  });

  it('reads the trainer section of a config', () => {
    expect(lrScheduleOf(defaultConfig().trainer)).toEqual({
      kind: 'constant',
      warmupSteps: 0,
      minLrRatio: 0.1,
      totalSteps: 200,
    });
  });

  it('gives the AdamW settings of a step with the scheduled learning rate', () => {
    const c = loadConfig({ overrides: ['trainer.warmupSteps=4', 'trainer.actorLr=0.001', 'trainer.adamEps=1e-6'] });
    expect(optimizerSettings(c, 'actor', 2)).toEqual({
      lr: 0.0005,
      weightDecay: 0.01,
      betas: [0.9, 0.999],
      eps: 1e-6,
      maxGradNorm: 1,
    });
    expect(optimizerSettings(c, 'critic', 8).lr).toBe(1e-5);
  });
});
