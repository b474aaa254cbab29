import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointError } from '../util/index.js';
import { loadSavedConfig, loadConfig } from '../config/index.js';
import {
  checkpointMetrics,
  isCompleteCheckpoint,
  latestCheckpoint,
  listCheckpoints,
  readCheckpoint,
  writeCheckpoint,
  type CheckpointState,
  STATE_FILE,
} from './checkpoint-io.js';

const fresh = () => join(mkdtempSync(join(tmpdir(), 'ragen-ckpt-')), 'checkpoints');
const state = (step: number, extra: Partial<CheckpointState> = {}): CheckpointState => ({ step, data: { trainSeedCounter: step * 8 }, ...extra });

describe('checkpoint directories', () => {
  it('round-trip data position, trainer state, config and metrics', async () => {
    const root = fresh();
    const config = loadConfig({ config: 'bandit-ppo', overrides: ['trainer.steps=7'] });
    const metrics = join(root, '..', 'metrics.jsonl');
    writeFileSync(metrics, [1, 2, 3, 4].map((s) => JSON.stringify({ step: s, 'train/success': s / 10 })).join('\n') + '\n');
    const dir = await writeCheckpoint(
      root,
      state(3, { trainer: { klCoef: 0.01, emptySteps: 2, pending: { 'actor/pg_loss': [0.5, 0.25] } } }),
      { config, metricsFile: metrics },
    );
    expect(dir).toBe(join(root, 'step-3'));
    expect(readCheckpoint(dir)).toEqual({ step: 3, data: { trainSeedCounter: 24 }, trainer: { klCoef: 0.01, emptySteps: 2, pending: { 'actor/pg_loss': [0.5, 0.25] } } });
    expect(loadSavedConfig(dir)).toEqual(config);
    expect(checkpointMetrics(dir).trim().split('\n').map((l) => JSON.parse(l).step)).toEqual([1, 2, 3]);
  });

  it('read a checkpoint of an earlier version, whose state still has the unused `rng: {}`', async () => {
    const dir = await writeCheckpoint(fresh(), state(2));
    const file = join(dir, STATE_FILE);
    const old = { ...JSON.parse(readFileSync(file, 'utf8')), rng: {} };
    writeFileSync(file, JSON.stringify(old, null, 1)); // the manifest records sizes: update it
    const manifest = JSON.parse(readFileSync(join(dir, 'checkpoint.json'), 'utf8'));
    manifest.files.find((f: { path: string }) => f.path === STATE_FILE).bytes = readFileSync(file).length;
    writeFileSync(join(dir, 'checkpoint.json'), JSON.stringify(manifest));
    expect(readCheckpoint(dir)).toEqual({ step: 2, data: { trainSeedCounter: 16 } });
  });

  it('ignore an interrupted write (a step-N.tmp left behind) and clean it up on the next write', async () => {
    const root = fresh();
    await writeCheckpoint(root, state(1));
    await expect(
      writeCheckpoint(root, state(2), {
        writeModel: (d) => {
          writeFileSync(join(d, 'model.safetensors'), 'partial');
          throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    expect(existsSync(join(root, 'step-2.tmp'))).toBe(true);
    expect(latestCheckpoint(root)?.step).toBe(1);
    await writeCheckpoint(root, state(3));
    expect(readdirSync(root).sort()).toEqual(['step-1', 'step-3']);
  });

  it('find the latest complete checkpoint, skipping ones whose manifest or files are missing or truncated', async () => {
    const root = fresh();
    for (const s of [2, 10, 9]) await writeCheckpoint(root, state(s), { writeModel: (d) => writeFileSync(join(d, 'model.safetensors'), 'weights') });
    mkdirSync(join(root, 'step-11')); // a copy without a manifest
    expect(latestCheckpoint(root)).toEqual({ step: 10, dir: join(root, 'step-10') });
    truncateSync(join(root, 'step-10', 'model.safetensors'), 3);
    expect(isCompleteCheckpoint(join(root, 'step-10'))).toBe(false);
    expect(latestCheckpoint(root)?.step).toBe(9);
    expect(() => readCheckpoint(join(root, 'step-10'))).toThrow(CheckpointError);
    expect(listCheckpoints(join(root, 'nope'))).toEqual([]);
  });

  it('keep the last K and replace a re-written step', async () => {
    const root = fresh();
    for (const s of [1, 2, 3, 4]) await writeCheckpoint(root, state(s), { keep: 2 });
    expect(listCheckpoints(root).map((c) => c.step)).toEqual([3, 4]);
    await writeCheckpoint(root, state(4, { data: { trainSeedCounter: 99 } }), { keep: 2 });
    expect(readCheckpoint(join(root, 'step-4')).data.trainSeedCounter).toBe(99);
    expect(readdirSync(root).sort()).toEqual(['step-3', 'step-4']);
  });

  it('put the engine\'s model files in the manifest', async () => {
    const root = fresh();
    const dir = await writeCheckpoint(root, state(5), {
      writeModel: (d) => {
        writeFileSync(join(d, 'config.json'), '{}');
        mkdirSync(join(d, 'critic'));
        writeFileSync(join(d, 'critic', 'model.safetensors'), 'x');
      },
    });
    const files = JSON.parse(readFileSync(join(dir, 'checkpoint.json'), 'utf8')).files.map((f: { path: string }) => f.path).sort();
    expect(files).toEqual(['config.json', 'critic/model.safetensors', 'trainer-state.json']);
  });
});
