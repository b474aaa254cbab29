import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { writeMicroModel } from '../../train/testing.js';
import { main } from '../../cli/main.js';
import { learningMarkdown, learningRuns, type LearningReport } from './bench-learning.js';
import { gatewayMarkdown } from './bench-learning-gateway.js';

let root: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-bench-learning-'));
  await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('ragen bench learning', () => {
  it('resolves run names: the defaults by name, anything else as presets and key=value overrides joined by +', () => {
    expect(learningRuns(undefined).map((r) => r.name)).toContain('sokoban-ppo+no-filter');
    expect(
      learningRuns('bandit-ppo,sokoban-ppo+filter/top-k-0.25,sokoban-ppo+model.engine=torch+trainer.steps=3'),
    ).toEqual([
      { name: 'bandit-ppo', presets: ['bandit-ppo'] },
      { name: 'sokoban-ppo+filter/top-k-0.25', presets: ['sokoban-ppo', 'filter/top-k-0.25'], overrides: [] },
      {
        name: 'sokoban-ppo+model.engine=torch+trainer.steps=3',
        presets: ['sokoban-ppo'],
        overrides: ['model.engine=torch', 'trainer.steps=3'],
      },
    ]);
  });

  it('fails before training when a model directory is missing, naming the run and the key', async () => {
    const err: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
    try {
      expect(
        await main([
          'bench',
          'learning',
          '--runs',
          'bandit-ppo',
          `model.path=${join(root, 'missing')}`,
          '--runs-dir',
          root,
        ]),
      ).toBe(2);
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
      const args = [
        'bench',
        'learning',
        '--runs',
        'bandit-ppo',
        '--steps',
        '1',
        '--out',
        out,
        '--runs-dir',
        root,
        `model.path=${join(root, 'model')}`,
      ];
      const small = [
        'env.train=[{tag: Bandit, groups: 2, groupSize: 2}]',
        'env.val=[{tag: Bandit, groups: 4}]',
        'agent.maxNewTokens=4',
        'trainer.collapse.every=0',
      ];
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

  it('`--runs gateway` is the agent through the gateway and the built-in env, 3 training seeds each', () => {
    const runs = learningRuns('gateway');
    expect(runs.map((r) => [r.name, r.presets[0], r.overrides![0]])).toEqual([
      ['guessnumber-gateway-s1', 'guessnumber-agent-ppo', 'seed.train=10000'],
      ['guessnumber-builtin-s1', 'guessnumber-ppo', 'seed.train=10000'],
      ['guessnumber-gateway-s2', 'guessnumber-agent-ppo', 'seed.train=20000'],
      ['guessnumber-builtin-s2', 'guessnumber-ppo', 'seed.train=20000'],
      ['guessnumber-gateway-s3', 'guessnumber-agent-ppo', 'seed.train=30000'],
      ['guessnumber-builtin-s3', 'guessnumber-ppo', 'seed.train=30000'],
    ]);
    expect(learningRuns('guessnumber-builtin-s2')).toEqual([
      {
        name: 'guessnumber-builtin-s2',
        presets: ['guessnumber-ppo'],
        overrides: ['seed.train=20000', 'env.val.0.groups=128', 'trainer.valEvery=20'],
      },
    ]);
    // every run validates on the same 128 seeds, at the start and after step 20
    for (const r of runs) expect(r.overrides!.slice(1)).toEqual(['env.val.0.groups=128', 'trainer.valEvery=20']);
  });

  it('item 1: `--runs frameworks` is the agent written with each framework beside the built-in loop, 3 training seeds each', () => {
    const runs = learningRuns('frameworks');
    expect(runs.filter((r) => r.name.endsWith('-s1')).map((r) => [r.name, r.presets[0], r.overrides![0]])).toEqual([
      ['guessnumber-gateway-s1', 'guessnumber-agent-ppo', 'seed.train=10000'],
      ['guessnumber-builtin-s1', 'guessnumber-ppo', 'seed.train=10000'],
      ['guessnumber-openai-agents-s1', 'guessnumber-agent-openai-agents-ppo', 'seed.train=10000'],
      ['guessnumber-langchain-s1', 'guessnumber-agent-langchain-ppo', 'seed.train=10000'],
    ]);
    expect(runs).toHaveLength(12);
    expect(new Set(runs.map((r) => r.overrides![0]))).toEqual(
      new Set(['seed.train=10000', 'seed.train=20000', 'seed.train=30000']),
    );
    expect(learningRuns('guessnumber-langchain-s3')).toEqual([
      {
        name: 'guessnumber-langchain-s3',
        presets: ['guessnumber-agent-langchain-ppo'],
        overrides: ['seed.train=30000', 'env.val.0.groups=128', 'trainer.valEvery=20'],
      },
    ]);
    const run = (name: string, after: number) => ({
      name,
      before: { t: 0.5 },
      after: { t: after },
      stepsDone: 1,
      episodesPerS: 1,
      meanStepSeconds: 10,
    });
    const lines = gatewayMarkdown(
      [
        run('guessnumber-openai-agents-s1', 0.75),
        run('guessnumber-openai-agents-s2', 0.25),
        run('guessnumber-langchain-s1', 0.5),
      ],
      undefined,
    );
    expect(lines.filter((l) => l.startsWith('| guessnumber') || l.startsWith('| **'))).toEqual([
      '| guessnumber-openai-agents-s1 | 1 | 50.0% | 75.0% | +25.0 pts | 1.00 | 10.0 |',
      '| guessnumber-openai-agents-s2 | 1 | 50.0% | 25.0% | -25.0 pts | 1.00 | 10.0 |',
      '| guessnumber-langchain-s1 | 1 | 50.0% | 50.0% | +0.0 pts | 1.00 | 10.0 |',
      '| **OpenAI Agents SDK agent, gateway, mean of 2 seeds** | 1/1 | 50.0% | 50.0% | +0.0 pts | 1.00 | 10.0 |',
    ]);
  });

  it('the gateway comparison table: a row per run, the mean of each path over its seeds, and the per-call overhead', () => {
    const run = (name: string, before: number, after: number, episodesPerS: number) => ({
      name,
      before: { t: before },
      after: { t: after },
      stepsDone: 4,
      episodesPerS,
      meanStepSeconds: 10,
    });
    const lines = gatewayMarkdown(
      [
        run('guessnumber-gateway-s1', 0.25, 0.5, 1),
        run('guessnumber-gateway-s2', 0.25, 0.25, 2),
        run('guessnumber-builtin-s1', 0.5, 0.75, 8),
        run('sokoban-ppo', 0, 1, 1),
      ],
      { calls: 20, promptTokens: 431, completionTokens: 50, engineMs: 100, gatewayMs: 103.5, overheadMs: 3.5 },
    );
    expect(lines.filter((l) => l.startsWith('| guessnumber') || l.startsWith('| **'))).toEqual([
      '| guessnumber-gateway-s1 | 4 | 25.0% | 50.0% | +25.0 pts | 1.00 | 10.0 |',
      '| guessnumber-gateway-s2 | 4 | 25.0% | 25.0% | +0.0 pts | 2.00 | 10.0 |',
      '| guessnumber-builtin-s1 | 4 | 50.0% | 75.0% | +25.0 pts | 8.00 | 10.0 |',
      '| **AI SDK agent, gateway, mean of 2 seeds** | 4/4 | 25.0% | 37.5% | +12.5 pts | 1.50 | 10.0 |',
    ]);
    expect(lines.at(-1)).toBe(
      'Per chat call (greedy, 431-token prompt with the tools block, 50 tokens out, 20 calls each): engine 100.0 ms, through the gateway 103.5 ms, overhead 3.5 ms.',
    );
    expect(gatewayMarkdown([run('sokoban-ppo', 0, 1, 1)], undefined)).toEqual([]);
  });
});
