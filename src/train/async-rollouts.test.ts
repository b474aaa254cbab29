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
  root = mkdtempSync(join(tmpdir(), 'ragen-async-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function metrics(overrides: string[]): Promise<MetricRecord[]> {
  const r = await train({ config: microConfig(model, runDir(), overrides) });
  return readMetricsFile(join(r.runDir, 'metrics.jsonl'));
}

const withoutAsync = (records: MetricRecord[]) =>
  deterministic(records).map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith('async/'))));

describe('async rollouts (trainer.async)', () => {
  it("with maxStaleness 0 logs exactly the synchronous trainer's metrics, and zero staleness", async () => {
    const sync = await metrics(['trainer.steps=3']);
    const async0 = await metrics(['trainer.steps=3', 'trainer.async.enabled=true', 'trainer.async.maxStaleness=0']);
    expect(withoutAsync(async0)).toEqual(deterministic(sync));
    for (const m of async0) {
      expect(m['async/staleness_max']).toBe(0);
      expect(m['async/stale_token_frac']).toBe(0);
      expect(m['async/is_weight_mean']).toBe(1);
    }
    expect(sync[0]!['async/staleness_max']).toBeUndefined(); // off by default
  });

  it('with maxStaleness 1 trains on first turns sampled one version back, importance-corrected, deterministically', async () => {
    const overrides = [
      'trainer.steps=3',
      'trainer.async.enabled=true',
      'trainer.async.maxStaleness=1',
      'trainer.async.importanceCap=1.5',
    ];
    const a = await metrics(overrides);
    const b = await metrics(overrides);
    expect(deterministic(b)).toEqual(deterministic(a)); // same seed, same config -> same metrics
    // Step 1's rollout ran at version 0 (nothing to lag); later steps' first turns were sampled before the previous
    // update.
    expect(a[0]!['async/staleness_max']).toBe(0);
    for (const m of a.slice(1)) {
      expect(m['async/staleness_max']).toBe(1);
      expect(m['async/stale_token_frac']).toBeGreaterThan(0);
      expect(m['async/stale_token_frac']).toBeLessThan(1); // turn 2 waited for the update: fresh
      expect(m['async/is_weight_mean']).toBeGreaterThan(0);
      expect(m['async/is_weight_mean']).toBeLessThanOrEqual(1.5);
      expect(m['async/behavior_kl']).not.toBe(0); // the policy really moved between sampling and update
      expect(Number.isFinite(m['actor/pg_loss'])).toBe(true);
    }
    // It is not the synchronous run: the stale samples differ.
    const sync = await metrics(['trainer.steps=3']);
    expect(
      a[1]!['train/reward_mean'] === sync[1]!['train/reward_mean'] &&
        a[1]!['actor/pg_loss'] === sync[1]!['actor/pg_loss'],
    ).toBe(false);
  });

  it('bounds staleness by maxStaleness: with 2, the third step trains on tokens two versions old', async () => {
    const m = await metrics(['trainer.steps=3', 'trainer.async.enabled=true', 'trainer.async.maxStaleness=2']);
    expect(m.map((x) => x['async/staleness_max'])).toEqual([0, 1, 2]);
  });
});
