// mismatch/* in whole runs on a micro model: exactly 0 where the update anchors on the sampler's own numbers (the local
// engine in sync mode), > 0 where the sampler lags the trainer (async rollouts); GSPO, CISPO and a rollout correction
// train deterministically with finite losses.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { readMetricsFile, type MetricRecord } from '../metrics/index.js';
import { deterministic, microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
let runs = 0;
const runDir = () => join(root, `run-${++runs}`);

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-mismatch-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function metrics(overrides: string[]): Promise<MetricRecord[]> {
  const r = await train({ config: microConfig(model, runDir(), overrides) });
  return readMetricsFile(join(r.runDir, 'metrics.jsonl'));
}

const FAMILY = [
  'mismatch/log_ratio_mean',
  'mismatch/log_ratio_abs_mean',
  'mismatch/log_ratio_abs_max',
  'mismatch/k3_kl',
  'mismatch/frac_ratio_high',
  'mismatch/frac_ratio_low',
];
const TAG_NAMES = ['log_ratio_abs_mean', 'log_ratio_abs_max', 'k3_kl', 'frac_ratio_high', 'frac_ratio_low'];

describe('mismatch/* in training runs', () => {
  it('is written every step and exactly 0 on the local engine in sync mode', async () => {
    const m = await metrics(['trainer.steps=2']);
    for (const rec of m) for (const key of FAMILY) expect(rec[key], key).toBe(0);
  });

  it('is > 0 in async mode, where stale tokens were sampled by an older policy', async () => {
    const m = await metrics(['trainer.steps=3', 'trainer.async.enabled=true', 'trainer.async.maxStaleness=1']);
    expect(m[0]!['mismatch/log_ratio_abs_max']).toBe(0); // step 1 had nothing to lag
    for (const rec of m.slice(1)) {
      expect(rec['mismatch/log_ratio_abs_max']).toBeGreaterThan(0);
      expect(rec['mismatch/k3_kl']).toBeGreaterThan(0);
    }
  });

  it('is written per env.train entry beside the overall family: 0 for each in sync mode, > 0 in async mode', async () => {
    const twoEnvs =
      'env.train=[{tag: SimpleSokoban, groups: 1, groupSize: 4}, {tag: CoordFrozenLake, groups: 1, groupSize: 4}]';
    const tagged = (rec: MetricRecord, tag: string) => TAG_NAMES.map((n) => rec[`mismatch/${tag}/${n}`]);
    const sync = await metrics(['trainer.steps=1', twoEnvs]);
    for (const tag of ['SimpleSokoban', 'CoordFrozenLake']) expect(tagged(sync[0]!, tag)).toEqual([0, 0, 0, 0, 0]);
    const async = await metrics([
      'trainer.steps=2',
      'trainer.async.enabled=true',
      'trainer.async.maxStaleness=1',
      twoEnvs,
    ]);
    const step2 = async[1]!;
    const maxes = ['SimpleSokoban', 'CoordFrozenLake'].map((t) => step2[`mismatch/${t}/log_ratio_abs_max`]!);
    // The overall largest |δ| is the larger of the two sources' (each source's own rows, none dropped).
    expect(Math.max(...maxes)).toBe(step2['mismatch/log_ratio_abs_max']);
    expect(Math.max(...maxes)).toBeGreaterThan(0);
  });

  it.each([
    ['gspo', ['algo.policyLoss=gspo']],
    ['cispo', ['algo.policyLoss=cispo']],
    [
      'ppo with async rollouts and a sequence TIS correction',
      [
        'trainer.async.enabled=true',
        'trainer.async.maxStaleness=1',
        'algo.rolloutCorrection.mode=tis',
        'algo.rolloutCorrection.level=sequence',
      ],
    ],
  ] as const)('%s trains with finite losses, deterministically', async (_name, extra) => {
    const overrides = ['trainer.steps=3', ...extra];
    const a = await metrics(overrides);
    const b = await metrics(overrides);
    expect(deterministic(b)).toEqual(deterministic(a));
    for (const rec of a) expect(Number.isFinite(rec['actor/pg_loss'])).toBe(true);
    if ((extra as readonly string[]).includes('algo.rolloutCorrection.mode=tis')) {
      expect(a[2]!['mismatch/is_weight_mean']).toBeGreaterThan(0);
      expect(a[2]!['mismatch/is_weight_mean']).toBeLessThanOrEqual(2);
    }
  });
});
