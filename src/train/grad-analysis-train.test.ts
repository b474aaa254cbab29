import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { readMetricsFile } from '../metrics/index.js';
import { openLocalModels } from './engine-setup.js';
import { deterministic, microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;
let runs = 0;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-gradan-train-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Every term of the loss on, a filter that drops a group, and LoRA dropout (whose noise stream the analysis's
// passes must not advance): the settings under which leaving training untouched is hardest.
const BASE = [
  'trainer.steps=3',
  'trainer.checkpointEvery=0',
  'algo.filter.strategy=top_k',
  'algo.filter.value=0.5',
  'algo.kl.useKlLoss=true',
  'algo.kl.coef=0.05',
  'algo.kl.estimator=k3',
  'algo.entropyCoeff=0.01',
  'model.lora.rank=4',
  'model.lora.alpha=8',
  'model.lora.dropout=0.2',
];

async function run(extra: string[]): Promise<{ metrics: Record<string, number>[]; weights: Float32Array[] }> {
  const config = microConfig(model, join(root, `run-${++runs}`), [...BASE, ...extra]);
  const models = await openLocalModels(config);
  const r = await train({ config, models });
  const weights = [...models.engine.parameters('policy'), ...models.engine.parameters('critic')].map(([, t]) =>
    t.toFloat32Array(),
  );
  models.engine.dispose();
  return { metrics: deterministic(readMetricsFile(join(r.runDir, 'metrics.jsonl'))), weights };
}

const withoutAnalysis = (m: Record<string, number>[]) =>
  m.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith('grad_analysis/'))));

describe('trainer.gradAnalysis', () => {
  it('logs per-bucket metrics at its cadence (steps 1 and 2 of 3 with every=2), both views, and leaves training identical', async () => {
    const off = await run([]);
    const on = await run([
      'trainer.gradAnalysis.every=2',
      'trainer.gradAnalysis.buckets=2',
      'trainer.gradAnalysis.prefilter=true',
    ]);
    expect(off.metrics.some((r) => Object.keys(r).some((k) => k.startsWith('grad_analysis/')))).toBe(false);
    const keys = on.metrics.map((r) => Object.keys(r).filter((k) => k.startsWith('grad_analysis/')));
    expect(keys.map((k) => k.length > 0)).toEqual([true, true, false]);
    const s1 = on.metrics[0]!;
    // top_k 0.5 of 2 groups keeps 1: the filtered view has it in the last bucket (and all); the prefilter view both
    // groups
    expect(s1['grad_analysis/all/group_count']).toBe(1);
    expect(s1['grad_analysis/bucket_2/group_count']).toBe(1);
    expect(s1['grad_analysis/bucket_1/group_count']).toBeUndefined();
    expect(s1['grad_analysis/prefilter/all/group_count']).toBe(2);
    expect(s1['grad_analysis/prefilter/bucket_1/sample_count']).toBe(4);
    expect(s1['grad_analysis/prefilter/bucket_1/reward_std_max']!).toBeLessThanOrEqual(
      s1['grad_analysis/prefilter/bucket_2/reward_std_min']!,
    );
    for (const k of ['task', 'entropy', 'kl', 'per_token/task', 'loss/task'])
      expect(Number.isFinite(s1[`grad_analysis/all/${k}`]), k).toBe(true);
    expect(s1['grad_analysis/all/entropy']).toBeGreaterThan(0);
    // identical training: every other metric and every trained weight, bit for bit
    expect(withoutAnalysis(on.metrics)).toEqual(off.metrics);
    expect(on.weights.length).toBe(off.weights.length);
    on.weights.forEach((w, i) => expect(w).toEqual(off.weights[i]));
  });
});
