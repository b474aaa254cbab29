import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../envs/index.js';
import { readMetricsFile } from '../metrics/index.js';
import { openLocalModels as openModels } from './engine-setup.js';
import { microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-oldlp-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Two steps of the micro run; the metrics and the final policy + critic weights. */
async function run(name: string, recompute: string) {
  const config = microConfig(model, join(root, name), [
    `algo.recomputeOldLogprobs=${recompute}`,
    'trainer.ppoEpochs=2',
  ]);
  const models = await openModels(config);
  const r = await train({ config, models });
  const w = [...models.engine.parameters('policy'), ...models.engine.parameters('critic')].map(([, t]) =>
    t.toFloat32Array(),
  );
  models.engine.dispose();
  return { metrics: readMetricsFile(join(r.runDir, 'metrics.jsonl')), w };
}

describe("log π_old: the sampler's log-probs (auto) vs a teacher-forced recompute", () => {
  it('give the same updates to float rounding; reuse skips the old-log-prob forward pass and still reports the entropy', async () => {
    const reuse = await run('reuse', 'auto');
    const again = await run('recompute', 'true');
    let d = 0;
    reuse.w.forEach((x, i) => x.forEach((v, j) => (d = Math.max(d, Math.abs(v - again.w[i]![j]!)))));
    expect(d).toBeLessThan(1e-4);
    reuse.metrics.forEach((m, i) => {
      const o = again.metrics[i]!;
      expect(m['timing_s/old_log_prob']).toBeUndefined();
      expect(o['timing_s/old_log_prob']).toBeGreaterThan(0);
      for (const key of ['actor/pg_loss', 'critic/vf_loss', 'train/reward_mean'])
        expect(Math.abs(m[key]! - o[key]!), key).toBeLessThan(1e-4);
      // At the first mini-batch the policy is the sampler's: the ratio is 1 up to rounding either way.
      expect(Math.abs(m['actor/ppo_kl']!)).toBeLessThan(0.05);
      expect(m['actor/entropy']).toBeGreaterThan(0);
    });
  });
});
