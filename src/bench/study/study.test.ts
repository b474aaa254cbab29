// The RAGEN-2 study's bookkeeping on hand-made run directories: run states for resuming, the per-run landmarks
// (success fell, first warnings, MI halved, end regime), the per-config mean and spread, the markdown rows and the
// figures' SVG. Every expected number below is worked out by hand from the metrics written here.
import '../../envs/index.js'; // the built-in environments
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  binned,
  endMeans,
  firstFall,
  niceTicks,
  regimeFigure,
  runStudy,
  scale,
  spread,
  studyMarkdown,
  studyPlan,
  studyRunState,
  successFigure,
  summarizeStudy,
  type StudySummary,
} from './index.js';

function writeRun(dir: string, steps: number, lines: Record<string, number>[], tail = ''): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.yaml'), `trainer:\n  steps: ${steps}\nalgo:\n  advEstimator: gae\n`);
  writeFileSync(join(dir, 'metrics.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n' + tail);
}

let root: string;
let s: StudySummary;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ragen2-study-'));
  // alpha seed 1: success 25% -> 50% -> 30% (fell at 20), entropy warning from step 15; MI 0.7 over steps 1-10 -> 0.3,
  // Ĥ(Z|X) 0.55 -> 0.6: template collapse.
  writeRun(join(root, 'alpha__seed1'), 20, [
    { step: 0, 'val/success': 0.25 },
    { step: 1, 'collapse/mi_estimate': 1.0, 'collapse/conditional_entropy': 0.5 },
    { step: 5, 'collapse/mi_estimate': 0.7, 'collapse/conditional_entropy': 0.55 },
    { step: 10, 'val/success': 0.5, 'collapse/mi_estimate': 0.4, 'collapse/conditional_entropy': 0.6 },
    { step: 14, 'early_warning/entropy_drop': 0, 'early_warning/reward_std_collapse': 0 },
    { step: 15, 'early_warning/entropy_drop': 1, 'early_warning/reward_std_collapse': 0 },
    { step: 16, 'early_warning/entropy_drop': 1, 'early_warning/reward_std_collapse': 1 },
    { step: 20, 'val/success': 0.3, 'collapse/mi_estimate': 0.3, 'collapse/conditional_entropy': 0.6 },
  ]);
  // alpha seed 2: success 25% -> 35% -> 45%, no warning; MI ends above its steps 1-10 mean (0.85), Ĥ(Z|X) too (0.45).
  writeRun(join(root, 'alpha__seed2'), 20, [
    { step: 0, 'val/success': 0.25 },
    { step: 1, 'collapse/mi_estimate': 0.8, 'collapse/conditional_entropy': 0.5 },
    { step: 10, 'val/success': 0.35, 'collapse/mi_estimate': 0.9, 'collapse/conditional_entropy': 0.4 },
    { step: 20, 'val/success': 0.45, 'collapse/mi_estimate': 1.0, 'collapse/conditional_entropy': 0.5 },
  ]);
  // beta seed 7: stopped at step 12 of 20, its last line cut by a crash.
  writeRun(
    join(root, 'beta__seed7'),
    20,
    [{ step: 0, 'val/success': 0.1 }, { step: 10, 'val/success': 0.2 }, { step: 12 }],
    '{"step": 13, "val/succ',
  );
  mkdirSync(join(root, 'notes')); // not a study run: ignored
  s = summarizeStudy(root, { order: ['beta', 'alpha'] });
});

describe('the study summary', () => {
  it('keeps the given config order and reads only <config>__seed<N> directories', () => {
    expect(s.configs.map((c) => c.name)).toEqual(['beta', 'alpha']);
    expect(s.configs[1]!.runs.map((r) => r.seed)).toEqual([1, 2]);
  });

  it('finds when success fell, when each warning first fired, when MI halved and the end regime', () => {
    const [a1, a2] = s.configs[1]!.runs;
    expect(a1).toMatchObject({
      before: 0.25,
      after: 0.3,
      successFell: 20,
      miHalved: 10,
      endRegime: 'template collapse',
      stepsDone: 20,
      status: 'finished',
    });
    expect(a1!.firstWarning).toEqual({
      entropy_drop: 15,
      reward_std_collapse: 16,
      grad_norm_spike: null,
      mi_collapse: null,
    });
    expect(a2).toMatchObject({
      before: 0.25,
      after: 0.45,
      successFell: null,
      miHalved: null,
      endRegime: 'diverse, input-grounded',
    });
  });

  it('averages finished runs over seeds with the sample sd, and series step by step', () => {
    const a = s.configs[1]!;
    expect(a.finished).toBe(2);
    expect(a.after!.mean).toBeCloseTo(0.375, 12);
    expect(a.after!.sd).toBeCloseTo(0.075 * Math.SQRT2, 12); // deviations ±0.075, n − 1 = 1
    expect(a.change!.mean).toBeCloseTo(0.125, 12); // +0.05 and +0.20
    expect(a.val.find((p) => p.step === 10)).toMatchObject({ n: 2, min: 0.35, max: 0.5 });
    expect(a.val.find((p) => p.step === 10)!.mean).toBeCloseTo(0.425, 12);
    expect(a.mi.map((p) => [p.step, p.n])).toEqual([
      [1, 2],
      [5, 1],
      [10, 2],
      [20, 2],
    ]);
    expect(a.mi[0]!.mean).toBeCloseTo(0.9, 12);
    expect(a.mi[3]!.mean).toBeCloseTo(0.65, 12);
  });

  it('counts an unfinished run before, not after, and reports its truncated line', () => {
    const b = s.configs[0]!;
    expect(b.finished).toBe(0);
    expect(b.after).toBeNull();
    expect(b.before).toMatchObject({ n: 1, mean: 0.1, sd: null });
    expect(b.runs[0]!.stepsDone).toBe(12);
    expect(s.problems.join('\n')).toMatch(/beta__seed7.*truncated/);
  });

  it('writes the markdown rows from those numbers', () => {
    const md = studyMarkdown(s, 'Date x.', 'ragen bench ragen2 --report-only');
    expect(md).toContain(
      '| alpha | 2/2 | 25.0% ± 0.0 (25.0 to 25.0, n=2) | 37.5% ± 10.6 (30.0 to 45.0, n=2) | +12.5 pts ± 10.6 (+5.0 to +20.0, n=2) |',
    );
    expect(md).toContain(
      '| alpha | 1 | finished | 20/20 | 25.0% | 30.0% | 50.0% | 20 | reward_std_collapse @16, entropy_drop @15 | yes (5 steps ahead) | 10 | template collapse |',
    );
    expect(md).toMatch(/Runs finished: 2 of 3 started .*beta seed 7: (running|stopped), step 12\/20/);
    expect(md).toContain('](ragen2/regimes.png)');
    expect(studyMarkdown(s, 'Date x.', 'c', 'ragen2/frozenlake')).toContain('](ragen2/frozenlake/regimes.png)');
  });
});

describe('the study helpers', () => {
  it('success fell: the first validation `drop` below the best before it, the boundary included', () => {
    expect(
      firstFall(
        [
          { step: 0, success: 0.2 },
          { step: 10, success: 0.15 },
          { step: 20, success: 0.05 },
        ],
        0.1,
      ),
    ).toBe(20);
    expect(
      firstFall(
        [
          { step: 0, success: 0.3 },
          { step: 10, success: 0.2 },
        ],
        0.1,
      ),
    ).toBe(10);
    expect(
      firstFall(
        [
          { step: 0, success: 0.3 },
          { step: 10, success: 0.21 },
        ],
        0.1,
      ),
    ).toBeNull();
  });

  it('end means average steps 1-10 and the last 10 steps', () => {
    const pts = [1, 2, 10, 11, 48, 52, 60].map((step) => ({ step, v: step }));
    expect(endMeans(pts, (p) => p.v)).toEqual({ early: 13 / 3, late: 56 }); // (1+2+10)/3; steps 52 and 60 (> 50)
    expect(endMeans([{ step: 3, v: 1 }], (p) => p.v)).toBeNull(); // no step after 10
  });

  it('spread is the mean, sample sd, min and max', () => {
    expect(spread([1, 2, 3, 4])).toMatchObject({ n: 4, mean: 2.5, min: 1, max: 4 });
    expect(spread([1, 2, 3, 4])!.sd).toBeCloseTo(Math.sqrt(5 / 3), 12);
    expect(spread([])).toBeNull();
  });

  it('ticks are round and scales linear', () => {
    expect(niceTicks(0, 0.47, 5)).toEqual([0, 0.1, 0.2, 0.3, 0.4]);
    expect(niceTicks(0, 60, 6)).toEqual([0, 10, 20, 30, 40, 50, 60]);
    expect(scale(0.5, [0, 1], [300, 100])).toBe(200);
  });

  it('judges run directories for resuming, and plans every config on a seed before the next seed', () => {
    expect(studyRunState(join(root, 'alpha__seed1'))).toBe('finished');
    expect(studyRunState(join(root, 'nope__seed1'))).toBe('absent');
    const stopped = join(root, 'beta__seed7');
    expect(studyRunState(stopped)).toBe('unstarted');
    mkdirSync(join(stopped, 'checkpoints', 'step-10'), { recursive: true });
    expect(studyRunState(stopped)).toBe('resumable');
    const plan = studyPlan(
      '/r',
      [
        { name: 'a', presets: [] },
        { name: 'b', presets: [] },
      ],
      [1, 2],
    );
    expect(plan.map((p) => p.dir)).toEqual(['/r/a__seed1', '/r/b__seed1', '/r/a__seed2', '/r/b__seed2']);
  });

  it('refuses to train while another live study holds the lock', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen2-lock-'));
    writeFileSync(join(dir, 'study.lock'), `${process.ppid}\n`);
    await expect(
      runStudy({
        runsDir: dir,
        configs: [{ name: 'ppo-topp0.9', presets: ['sokoban-ppo'] }],
        seeds: [1],
        overrides: [],
        log: () => {},
      }),
    ).rejects.toThrow(/Another study \(pid \d+\)/);
  });
});

describe('the figures', () => {
  it("draw one mean line per config and a triangle at each run's first warning", () => {
    const svg = successFigure(s).svg;
    const lines = [...svg.matchAll(/<polyline class="line" data-label="([^"]+)" points="([^"]+)"/g)];
    expect(lines.map((m) => [m[1], m[2]!.split(' ').length])).toEqual([
      ['beta', 2],
      ['alpha', 3],
    ]);
    // One marker, alpha seed 1's entropy drop at step 15: x = 56 + 15/20 × (900 − 12 − 56) = 680 (domain 0..20).
    const markers = [...svg.matchAll(/<path class="marker" d="M([\d.]+),/g)];
    expect(markers.map((m) => Number(m[1]))).toEqual([680]);
    expect(svg).toContain('alpha seed 1: entropy_drop at step 15');
  });

  it("split the regime picture at the configs' first diagnostic point", () => {
    const svg = regimeFigure(s).svg;
    for (const q of [
      'diverse, input-grounded',
      'compressed, input-grounded',
      'template collapse',
      'low-entropy collapse',
    ])
      expect(svg).toContain(q);
    expect(svg).toContain('<title>step 10</title>');
    expect(svg).toContain('<title>step 20</title>');
  });

  it('average the regime path over 10-step bins of the seed means', () => {
    // alpha's seed means: step 1 (Ĥ 0.5, Î 0.9), 5 (0.55, 0.7), 10 (0.5, 0.65), 20 (0.55, 0.65).
    const [b10, b20] = binned(s.configs[1]!);
    expect(b10!.step).toBe(10);
    expect(b10!.x).toBeCloseTo(1.55 / 3, 12);
    expect(b10!.y).toBeCloseTo(0.75, 12);
    expect(b20).toMatchObject({ step: 20 });
    expect(b20!.x).toBeCloseTo(0.55, 12);
    expect(b20!.y).toBeCloseTo(0.65, 12);
  });
});
