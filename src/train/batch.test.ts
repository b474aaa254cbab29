import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import type { TrainingSample } from '../agent/index.js';
import { applyEpisodeScores, selectRows } from './batch.js';
import { EarlyStopTracker } from './early-stop.js';
import { loadConfig } from '../config/index.js';
import { miniBatches } from './stage-update.js';

describe('trainer batch plumbing', () => {
  it('cuts mini-batches per epoch, every row once per epoch, shuffled reproducibly', () => {
    expect(miniBatches(5, { miniBatchSize: 2, epochs: 1, shuffleSeed: null })).toEqual([[0, 1], [2, 3], [4]]);
    const a = miniBatches(8, { miniBatchSize: 4, epochs: 2, shuffleSeed: 7 });
    expect(a).toEqual(miniBatches(8, { miniBatchSize: 4, epochs: 2, shuffleSeed: 7 }));
    expect([...a[0]!, ...a[1]!].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect([...a[0]!, ...a[1]!]).not.toEqual([...a[2]!, ...a[3]!]); // each epoch reshuffles
  });

  it('selects rows of a token batch', () => {
    const batch = {
      B: 2,
      T: 2,
      ids: Int32Array.of(1, 2, 3, 4),
      attentionMask: Uint8Array.of(1, 1, 1, 1),
      lossMask: Uint8Array.of(0, 1, 0, 1),
      oldLogprobs: new Float32Array(4),
      rewards: Float32Array.of(0, 1, 0, 2),
      turnIds: Int32Array.of(-1, 0, -1, 0),
      groupIds: ['a', 'b'],
      tags: ['A', 'B'],
      scores: Float64Array.of(1, 2),
      lengths: Int32Array.of(2, 2),
      episodeIds: Int32Array.of(0, 1),
    };
    const s = selectRows(batch, [1]);
    expect(Array.from(s.ids)).toEqual([3, 4]);
    expect(s.groupIds).toEqual(['b']);
    expect(s.tags).toEqual(['B']);
    expect(Array.from(s.rewards)).toEqual([0, 2]);
    const image = { width: 1, height: 1, data: Uint8Array.of(1, 2, 3) };
    expect(selectRows({ ...batch, images: [undefined, [image]] }, [1]).images).toEqual([[image]]);
    expect(s.images).toBeUndefined();
  });

  it('puts normalised episode scores on the last loss token', () => {
    const sample = (episode: number, score: number): TrainingSample => ({
      ids: [1, 2, 3, 4],
      lossMask: [0, 1, 1, 0],
      logprobs: [0, 0, 0, 0],
      rewards: [0, 0, score, 0],
      turnIds: [-1, 0, 0, -1],
      score,
      episode,
      group: 0,
      tag: 'X',
      turns: [0],
      length: 4,
    });
    const out = applyEpisodeScores([sample(0, 1), sample(1, 0)], [1, 0], [0.5, -0.5], 'episode');
    expect(out.map((s) => s.rewards)).toEqual([
      [0, 0, 0.5, 0],
      [0, 0, -0.5, 0],
    ]);
    expect(out.map((s) => s.score)).toEqual([0.5, -0.5]);
  });
});

describe('early stops', () => {
  it('stops on reward-std collapse after `patience` steps below ratio x baseline, and on low validation success', () => {
    const cfg = loadConfig({
      overrides: [
        'trainer.earlyStop.rewardStdCollapse.baselineSteps=2',
        'trainer.earlyStop.rewardStdCollapse.patience=2',
        'trainer.earlyStop.valSuccessCollapse.patience=2',
      ],
    }).trainer.earlyStop;
    const t = new EarlyStopTracker(cfg);
    expect([t.afterStep(false, 1), t.afterStep(false, 1), t.afterStep(false, 0.05), t.afterStep(false, 0.5)]).toEqual([
      null,
      null,
      null,
      null,
    ]);
    expect(t.afterStep(false, 0.01)).toBeNull();
    expect(t.afterStep(false, 0.01)?.key).toBe('early_stopped/reward_std_collapse');
    expect(t.afterValidation({ A: 0.5, B: 0 })).toBeNull();
    expect(t.afterValidation({ A: 0.5, B: 0.001 })?.reason).toMatch(/B \(0\.001\)/);
  });

  it('stops when a warning listed in onWarnings starts, and only then', () => {
    const warning = (kind: 'mi_collapse' | 'entropy_drop') => ({
      kind,
      value: 0.2,
      threshold: 0.5,
      message: `${kind} message`,
    });
    const off = new EarlyStopTracker(loadConfig().trainer.earlyStop);
    expect(off.afterWarnings([warning('mi_collapse')])).toBeNull();
    const on = new EarlyStopTracker(
      loadConfig({ overrides: ['trainer.earlyStop.onWarnings=[mi_collapse]'] }).trainer.earlyStop,
    );
    expect(on.afterWarnings([])).toBeNull();
    expect(on.afterWarnings([warning('entropy_drop')])).toBeNull();
    const stop = on.afterWarnings([warning('entropy_drop'), warning('mi_collapse')]);
    expect(stop?.key).toBe('early_stopped/early_warning');
    expect(stop?.reason).toMatch(/mi_collapse warning started .*mi_collapse message/);
    expect(() => loadConfig({ overrides: ['trainer.earlyStop.onWarnings=[mi_colapse]'] })).toThrow(/onWarnings/);
  });
});
