import '../envs/index.js'; // the built-in environments
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rolloutFile } from '../metrics/index.js';
import { CheckpointError } from '../util/index.js';
import { loadConfig, loadSavedConfig } from '../config/index.js';
import { writeCheckpoint } from './checkpoint-io.js';
import { createRun, resumeRun } from './run-setup.js';

const runsDir = () => mkdtempSync(join(tmpdir(), 'ragen-runs-'));

describe('runs', () => {
  it('are created under logging.runsDir with the config saved', () => {
    const config = loadConfig({ config: 'sokoban-grpo', overrides: [`logging.runsDir=${runsDir()}`] });
    const paths = createRun(config, { time: new Date(Date.UTC(2025, 2, 4, 5, 6, 7)) });
    expect(paths.root.endsWith('SimpleSokoban__grpo__10000__20250304-050607')).toBe(true);
    expect(loadSavedConfig(paths.root)).toEqual(config);
  });

  it('use `name` and `logging.runDir` when set', () => {
    const dir = join(runsDir(), 'exact');
    const paths = createRun(loadConfig({ overrides: ['name=mine', `logging.runDir=${dir}`] }));
    expect(paths.root).toBe(dir);
    expect(existsSync(join(dir, 'config.yaml'))).toBe(true);
  });

  it('resume at the latest complete checkpoint, cutting metrics and rollouts back to it', async () => {
    const config = loadConfig({ config: 'bandit-ppo', overrides: [`logging.runsDir=${runsDir()}`] });
    const paths = createRun(config);
    const line = (s: number) => JSON.stringify({ step: s, time: 0, 'train/success': s / 10 });
    writeFileSync(paths.metrics, [1, 2].map(line).join('\n') + '\n');
    await writeCheckpoint(
      paths.checkpoints,
      { step: 2, data: { trainSeedCounter: 16 } },
      { config, metricsFile: paths.metrics },
    );
    writeFileSync(paths.metrics, [1, 2, 3, 4].map(line).join('\n') + '\n'); // the run went on, then died
    for (const s of [1, 2, 3, 4]) writeFileSync(rolloutFile(paths, s), '{}\n');
    const r = resumeRun(paths.root);
    expect(r.checkpoint.step).toBe(2);
    expect(r.state.data.trainSeedCounter).toBe(16);
    expect(r.config).toEqual(config);
    expect(readFileSync(paths.metrics, 'utf8')).toBe([1, 2].map(line).join('\n') + '\n');
    expect(readdirSync(paths.rollouts).sort()).toEqual(['step-1.jsonl', 'step-2.jsonl']);
    expect(resumeRun(paths.root, ['trainer.steps=99']).config.trainer.steps).toBe(99);
  });

  it('refuse to resume without a checkpoint', () => {
    const paths = createRun(loadConfig({ overrides: [`logging.runsDir=${runsDir()}`] }));
    expect(() => resumeRun(paths.root)).toThrow(CheckpointError);
    expect(() => resumeRun(join(paths.root, 'nope'))).toThrow(/not a run directory/);
  });
});
