import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMetricsFile } from '../../metrics/index.js';
import { writeMicroModel } from '../../train/testing.js';
import { runCli } from '../testing.js';

let root: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-train-cli-'));
  await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const run = (argv: string[]) => runCli(...argv);

const micro = (runDir: string) => [
  `model.path=${join(root, 'model')}`,
  `logging.runDir=${runDir}`,
  'env.train=[{tag: SimpleSokoban, groups: 2, groupSize: 2}]',
  'env.val=[{tag: SimpleSokoban, groups: 2}]',
  'agent.maxNewTokens=4',
  'agent.maxTurns=1',
  'trainer.collapse.every=0',
];

describe('ragen train', () => {
  it('trains, stops after a step, and resumes to the end with a summary table', async () => {
    const dir = join(root, 'run');
    const first = await run(['train', ...micro(dir), '--steps', '2', '--stop-after', '1']);
    expect(first.code).toBe(0);
    expect(first.out).toContain(`continue with \`ragen train --resume ${dir}\``);
    const second = await run(['train', '--resume', dir]);
    expect(second.code).toBe(0);
    expect(second.out).toMatch(/Trained steps 2-2 of 2/);
    expect(second.out).toMatch(/SimpleSokoban\s+0\.\d{3}\s+0\.\d{3}/);
    expect(readMetricsFile(join(dir, 'metrics.jsonl')).map((r) => r.step)).toEqual([0, 1, 2]);
  });

  it('exits 2 with one clear line on bad input', async () => {
    const bad = await run(['train', 'trainer.stepz=3']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/Unknown config key `trainer\.stepz`.*Did you mean `trainer\.steps`/);
    const preset = await run(['train', 'frozenlake-ppo']);
    expect(preset.code).toBe(2);
    expect(preset.err).toContain('Did you mean `--config frozenlake-ppo`?');
    const both = await run(['train', '--resume', root, '--config', 'sokoban-ppo']);
    expect(both.code).toBe(2);
    const missing = await run(['train', '--resume', join(root, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/is not a run directory/);
  });

  it('prints the resolved config', async () => {
    const r = await run(['train', '--print-config', '--config', 'bandit-ppo', 'trainer.steps=7']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/steps: 7/);
  });
});
