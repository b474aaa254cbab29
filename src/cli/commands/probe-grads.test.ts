import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../envs/index.js';
import { readMetricsFile } from '../../metrics/index.js';
import { microConfig, writeMicroModel } from '../../train/testing.js';
import { train } from '../../train/trainer.js';
import { runCli } from '../testing.js';

let root: string;
let run: string;
let metrics: Record<string, number>[];

// A 2-step run with the analysis on every step, both views, KL and entropy terms on, a filter that drops a group.
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-probe-'));
  const model = await writeMicroModel(join(root, 'model'));
  run = join(root, 'run');
  const config = microConfig(model, run, [
    'trainer.keepCheckpoints=2',
    'trainer.gradAnalysis.every=1',
    'trainer.gradAnalysis.buckets=2',
    'trainer.gradAnalysis.prefilter=true',
    'algo.filter.strategy=top_k',
    'algo.filter.value=0.5',
    'algo.kl.useKlLoss=true',
    'algo.kl.coef=0.05',
    'algo.kl.estimator=k3',
    'algo.entropyCoeff=0.01',
    // the in-reward penalty too, with the adaptive β the probe must read back from the checkpoint
    'algo.kl.inReward=true',
    'algo.kl.controller.type=adaptive',
  ]);
  await train({ config });
  metrics = readMetricsFile(join(run, 'metrics.jsonl'));
}, 180_000); // a 2-step training run: minutes on a loaded 2-core CI machine
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('ragen probe-grads', () => {
  it('probing checkpoint 1 reproduces the analysis training logged at step 2 (same weights, same batch), and writes the JSON', async () => {
    const r = await runCli('probe-grads', '--run', run, '--step', '1', '--json');
    expect(r.code, r.err).toBe(0);
    const report = JSON.parse(r.out);
    expect(report).toMatchObject({ step: 1, rolloutStep: 2, buckets: 2, groups: 2, keptGroups: 1 });
    const logged = metrics[1]!;
    const views: [
      string,
      { name: string; norm: Record<string, number>; loss: Record<string, number>; samples: number }[],
    ][] = [
      ['grad_analysis', report.filtered],
      ['grad_analysis/prefilter', report.prefilter],
    ];
    let compared = 0;
    for (const [prefix, buckets] of views) {
      for (const b of buckets) {
        for (const c of ['task', 'entropy', 'kl']) {
          expect(b.norm[c], `${prefix}/${b.name}/${c}`).toBe(logged[`${prefix}/${b.name}/${c}`]);
          expect(b.loss[c]).toBe(logged[`${prefix}/${b.name}/loss/${c}`]);
          compared++;
        }
        expect(b.samples).toBe(logged[`${prefix}/${b.name}/sample_count`]);
      }
    }
    expect(compared).toBeGreaterThanOrEqual(12); // filtered: bucket_2 + all; prefilter: bucket_1, bucket_2, all
    expect(report.prefilter.find((b: { name: string }) => b.name === 'all').norm.entropy).toBeGreaterThan(0);
    const { file, ...saved } = report;
    expect(file).toBe(join(run, 'grad-probe', 'step-1.json'));
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(saved);
  });

  it('prints a table per view by default; --step 0 probes the initial model', async () => {
    const out = join(root, 'probe0.json');
    const r = await runCli('probe-grads', '--run', run, '--step', '0', '--buckets', '1', '--out', out);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/after the filter[\s\S]*bucket_1[\s\S]*before the filter[\s\S]*all/);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ step: 0, rolloutStep: 1, buckets: 1 });
  });

  it('bad input: exit 2 naming the value and the fix', async () => {
    const missing = await runCli('probe-grads', '--run', run, '--step', '7');
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/no complete checkpoint for step 7 \(complete checkpoints: 1, 2\)/);
    const notRun = await runCli('probe-grads', '--run', root);
    expect(notRun.code).toBe(2);
    expect(notRun.err).toMatch(/is not a run directory \(no config.yaml\)/);
    const badStep = await runCli('probe-grads', '--run', run, '--step', '-1');
    expect(badStep.code).toBe(2);
    expect(badStep.err).toMatch(/Bad --step `-1`/);
    expect(existsSync(join(run, 'grad-probe', 'step-7.json'))).toBe(false);
  });
});
