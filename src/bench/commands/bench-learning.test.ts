import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { writeMicroModel } from '../../train/testing.js';
import { main } from '../../cli/main.js';
import { learningMarkdown, learningRuns, type LearningReport } from './bench-learning.js';

let root: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-bench-learning-'));
  await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('ragen bench learning', () => {
  it('resolves run names: the defaults by name, anything else as presets and key=value overrides joined by +', () => {
    expect(learningRuns(undefined).map((r) => r.name)).toContain('sokoban-ppo+no-filter');
    expect(learningRuns('bandit-ppo,sokoban-ppo+filter/top-k-0.25,sokoban-ppo+model.engine=torch+trainer.steps=3')).toEqual([
      { name: 'bandit-ppo', presets: ['bandit-ppo'] },
      { name: 'sokoban-ppo+filter/top-k-0.25', presets: ['sokoban-ppo', 'filter/top-k-0.25'], overrides: [] },
      { name: 'sokoban-ppo+model.engine=torch+trainer.steps=3', presets: ['sokoban-ppo'], overrides: ['model.engine=torch', 'trainer.steps=3'] },
    ]);
  });

  it('fails before training when a model directory is missing, naming the run and the key', async () => {
    const err: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
    try {
      expect(await main(['bench', 'learning', '--runs', 'bandit-ppo', `model.path=${join(root, 'missing')}`, '--runs-dir', root])).toBe(2);
    } finally {
      spy.mockRestore();
    }
    expect(err.join('\n')).toMatch(/bench learning cannot start:\nrun `bandit-ppo`: Bad config value `model\.path`/);
  });

  it('trains a run and reports before/after, curve, kept ratio and step time', async () => {
    const out = join(root, 'report.json');
    const logs: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void logs.push(a.join(' ')));
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const args = ['bench', 'learning', '--runs', 'bandit-ppo', '--steps', '1', '--out', out, '--runs-dir', root, `model.path=${join(root, 'model')}`];
      const small = ['env.train=[{tag: Bandit, groups: 2, groupSize: 2}]', 'env.val=[{tag: Bandit, groups: 4}]', 'agent.maxNewTokens=4', 'trainer.collapse.every=0'];
      expect(await main([...args, ...small])).toBe(0);
    } finally {
      log.mockRestore();
      err.mockRestore();
      write.mockRestore();
    }
    const report = JSON.parse(readFileSync(out, 'utf8')) as LearningReport;
    const run = report.runs[0]!;
    expect(run).toMatchObject({ name: 'bandit-ppo', algo: 'gae', filter: 'none', stepsDone: 1 });
    expect(Object.keys(run.before)).toEqual(['Bandit']);
    expect(run.valCurve.map((p) => p.step)).toEqual([0, 1]);
    expect(run.steps[0]!.keptRatio).toBe(1);
    expect(logs.join('\n')).toContain('| bandit-ppo | Bandit | gae | none | 1/1 |');
    expect(learningMarkdown(report)).toMatch(/- bandit-ppo: 0: \d+\.\d%, 1: \d+\.\d%/);
  });
});
