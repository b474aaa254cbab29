import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { makeEnv } from '../env/index.js';
import { playInteractive, translateArrows, type PlayRecord } from './commands/play.js';
import type { SolveRecord } from './commands/solve.js';
import type { BenchEnvsReport } from '../bench/commands/bench-envs.js';
import { runCli } from './testing.js';

const run = runCli;

afterEach(() => vi.restoreAllMocks());

describe('ragen envs', () => {
  test('lists every id with its description', async () => {
    const { code, out } = await run('envs');
    expect(code).toBe(0);
    expect(out).toMatch(/^Bandit\s+Two-armed bandit/m);
    expect(out).toMatch(/^MetamathQA\s+Math word problems/m);
  });
  test('--json gives id, description, action cap and whether a solver exists', async () => {
    const rows = JSON.parse((await run('envs', '--json')).out) as {
      id: string;
      hasSolver: boolean;
      maxActionsPerEpisode: number;
    }[];
    expect(rows.find((r) => r.id === 'BanditTest')).toMatchObject({ hasSolver: true, maxActionsPerEpisode: 1 });
  });
});

describe('ragen play', () => {
  test('--actions --json prints {envId, seed, initial, steps} and stops at the episode end', async () => {
    const env = makeEnv('Bandit');
    env.reset({ seed: 4 });
    const [a, b] = env.actionNames!;
    const { code, out, err } = await run(
      'play',
      'bandit',
      '--seed',
      '4',
      '--actions',
      `nobody || ${a} || ${b}`,
      '--json',
      '--max-actions',
      '3',
    );
    expect(code).toBe(0);
    const rec = JSON.parse(out) as PlayRecord;
    expect(Object.keys(rec)).toEqual(['envId', 'seed', 'initial', 'steps']);
    expect([rec.envId, rec.seed]).toEqual(['Bandit', 4]);
    expect(rec.initial.observation).toContain(a);
    expect(rec.steps.map((s) => s.action)).toEqual(['nobody', a]);
    expect(Object.keys(rec.steps[0]!)).toEqual(['action', 'observation', 'reward', 'terminated', 'truncated', 'info']);
    expect(rec.steps[0]!.info.actionIsValid).toBe(false);
    expect(rec.steps[1]!.terminated).toBe(true);
    expect(err).toMatch(/ended after 2 action\(s\); ignored the remaining 1/);
  });
  test('--config values parse as JSON and reach the env', async () => {
    const { out } = await run(
      'play',
      'MetamathQA',
      '--seed',
      '0',
      '--actions',
      'x || y',
      '--json',
      '--config',
      'maxAttempts=2',
      '--max-actions',
      '2',
    );
    const rec = JSON.parse(out) as PlayRecord;
    expect(rec.steps.map((s) => s.terminated)).toEqual([false, true]);
  });
  test('--config may be repeated; non-JSON values stay strings', async () => {
    const { out } = await run(
      'play',
      'MetamathQA',
      '--config',
      'maxAttempts=2',
      '--config',
      'dataPath=data/metamathqa/val.jsonl',
      '--actions',
      'x || y',
      '--json',
      '--max-actions',
      '2',
    );
    const rec = JSON.parse(out) as PlayRecord;
    expect(rec.steps.map((s) => s.terminated)).toEqual([false, true]);
    expect(rec.steps[1]!.info.correctAnswer).toBe(
      (await import('../env/index.js')).envSpec('MetamathQA').solve!(
        { dataPath: 'data/metamathqa/val.jsonl', maxAttempts: 2 },
        0,
      )![0],
    );
  });
  test.each([
    ['SimpleSudoku', 'x'],
    ['game_2048', 'x'],
    ['Bandit', 'nobody'],
  ])('%s: a scripted episode ends truncated at the action cap `ragen envs --json` lists', async (id, action) => {
    const rows = JSON.parse((await run('envs', '--json')).out) as { id: string; maxActionsPerEpisode: number }[];
    const cap = rows.find((r) => r.id === id)!.maxActionsPerEpisode;
    const { code, out, err } = await run(
      'play',
      id,
      '--seed',
      '0',
      '--actions',
      Array.from({ length: cap + 30 }, () => action).join(' || '),
      '--json',
    );
    expect(code).toBe(0);
    const rec = JSON.parse(out) as PlayRecord;
    expect(rec.steps).toHaveLength(cap);
    expect([rec.steps.at(-1)!.terminated, rec.steps.at(-1)!.truncated]).toEqual([false, true]);
    expect(rec.steps.slice(0, -1).every((s) => !s.terminated && !s.truncated)).toBe(true);
    expect(err).toContain(
      `ended after ${cap} action(s) (the action cap; --max-actions changes it); ignored the remaining 30.`,
    );
  });
  test('--max-actions truncates the episode', async () => {
    const { out } = await run('play', 'Bandit', '--actions', 'x || y || z', '--json', '--max-actions', '2');
    const rec = JSON.parse(out) as PlayRecord;
    expect(rec.steps.map((s) => s.truncated)).toEqual([false, true]);
  });
  test('without a terminal and without --actions: the initial observation and a usage hint, exit 0', async () => {
    const { code, out } = await run('play', 'BanditTest', '--seed', '1');
    expect(code).toBe(0);
    expect(out).toContain('BanditTest  seed 1');
    expect(out).toMatch(/ragen play BanditTest --seed 1 --actions "\w+ \|\| \w+"/);
  });
  test('text output shows each action, reward and flags', async () => {
    const { out } = await run('play', 'MetamathQA', '--mode', 'val', '--seed', '0', '--actions', '-1');
    expect(out).toMatch(/> -1\nIncorrect\.\nreward 0 {2}\[terminated\] {2}attempts=1 correctAnswer=\S+/);
    expect(out).toMatch(/1 action\(s\), return 0, terminated, success false/);
  });
  test.each([
    [['play', 'Bandi'], /Environment `Bandi` does not exist\. Did you mean `Bandit`\?/],
    [['play', 'Bandit', '--seed', '1.5'], /Bad seed `1.5`/],
    [['play', 'Bandit', '--config', 'loArmScor=0.2'], /Unknown config key `loArmScor`.*Did you mean `loArmScore`\?/],
    [['play', 'Bandit', '--config', 'split=both'], /`split` = "both"/],
    [['play', 'Bandit', '--config', 'split'], /Bad --config `split`: write key=value/],
    [['play', 'Bandit', '--mode', 'test'], /Bad mode `test`/],
    [['play', 'Bandit', '--max-actions', '0'], /Bad --max-actions `0`/],
  ])('%j is one clear error line and exit code 2', async (argv, message) => {
    const { code, err } = await run(...argv);
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err.trim().split('\n')).toHaveLength(1);
  });
  test('interactive: shows the observation, plays typed actions, n starts the next seed, q quits', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const chunks: string[] = [];
    output.on('data', (c: Buffer) => chunks.push(c.toString()));
    const env = makeEnv('Bandit', {}, {});
    env.reset({ seed: 7 });
    const first = env.actionNames![0]!;
    input.end(`nope\n${first}\nn\nq\n`);
    await playInteractive(env, 'Bandit', 7, 'train', input, output);
    const text = chunks.join('');
    expect(text).toContain('Bandit  seed 7');
    expect(text).toMatch(/> nope\n[^]*\[invalid\]/);
    expect(text).toMatch(new RegExp(`> ${first}\\n${first}: [\\d.]+ points`));
    expect(text).toContain('n: next seed (8)');
    expect(text).toContain('Bandit  seed 8');
  });
});

describe('ragen play: arrow keys', () => {
  const play = async (id: string, typed: string): Promise<string> => {
    const input = new PassThrough();
    const output = new PassThrough();
    const chunks: string[] = [];
    output.on('data', (c: Buffer) => chunks.push(c.toString()));
    input.end(typed);
    await playInteractive(makeEnv(id), id, 3, 'train', input, output);
    return chunks.join('');
  };

  test("become the env's directional actions (both escape forms a terminal sends), one per key", async () => {
    const text = await play('SimpleSokoban', '\x1b[A\x1bOD\nq\n');
    expect(text).toMatch(/\n> Up\n/);
    expect(text).toMatch(/\n> Left\n/);
    expect(text).not.toContain('[invalid');
    expect(text).not.toContain('\x1b');
  });

  test('in an env without directions are dropped with a hint instead of played as invalid actions', async () => {
    const text = await play('Bandit', '\x1b[B\nq\n');
    expect(text).toMatch(/arrow keys play Bandit's actions only when it has Up\/Down\/Left\/Right/);
    expect(text).not.toContain('[invalid');
  });

  test("keep the env's spelling of the action names", () => {
    expect(translateArrows('\x1b[C', ['left', 'right']).line.trim()).toBe('|| right ||');
    expect(translateArrows('\x1b[3~Up', ['Up'])).toEqual({ line: ' Up', unmapped: false }); // Delete: dropped
  });
});

describe('ragen solve', () => {
  test('--json prints {envId, seed, actions, solved: true} checked by stepping', async () => {
    const { code, out } = await run('solve', 'Bandit', '--seed', '11', '--json');
    expect(code).toBe(0);
    const rec = JSON.parse(out) as SolveRecord;
    expect(rec).toMatchObject({ envId: 'Bandit', seed: 11, solved: true });
    const env = makeEnv('Bandit');
    env.reset({ seed: 11 });
    expect(env.actionNames).toContain(rec.actions[0]);
  });
  test('text output is the action list and a summary', async () => {
    const { out } = await run('solve', 'MetamathQA', '--seed', '3', '--mode', 'val');
    expect(out).toMatch(/^\S+\nMetamathQA seed 3: solved in 1 action\(s\), return 1$/);
  });
  test('an unknown id is exit code 2 with a suggestion', async () => {
    const { code, err } = await run('solve', 'BanditTset');
    expect([code, err.trim()]).toEqual([
      2,
      'ragen: Environment `BanditTset` does not exist. Did you mean `BanditTest`? Run `ragen envs` for the list.',
    ]);
  });
});

describe('ragen bench envs', () => {
  test('--json reports resets/s and steps/s per requested id', async () => {
    const { code, out } = await run(
      'bench',
      'envs',
      '--ids',
      'Bandit,MetamathQA',
      '--seconds',
      '0.03',
      '--repeat',
      '2',
      '--json',
    );
    expect(code).toBe(0);
    const report = JSON.parse(out) as BenchEnvsReport;
    expect(report.results.map((r) => r.id)).toEqual(['Bandit', 'MetamathQA']);
    expect(report.repeat).toBe(2);
    for (const r of report.results) {
      expect(r.resetsPerSecond).toBeGreaterThan(1000);
      expect(r.stepsPerSecond).toBeGreaterThan(1000);
      expect([r.actions, r.meanEpisodeLength]).toEqual(['solver', 1]);
    }
  });
  test('ragen bench --help lists every subcommand of the lab, in its list order', async () => {
    const out = (await run('bench', '--help')).out;
    const names = [...out.matchAll(/^  (\w+)(?: \S+)*\s{2,}\S/gm)].map((m) => m[1]);
    expect(names.filter((n) => n !== 'help')).toEqual([
      'envs',
      'engine',
      'learning',
      'retrieval',
      'sandbox',
      'serve',
      'gpu',
      'ragen2',
    ]);
  });
  test('bad --seconds and unknown ids are exit code 2', async () => {
    expect((await run('bench', 'envs', '--seconds', '0')).code).toBe(2);
    expect((await run('bench', 'envs', '--ids', 'Bandot')).err).toMatch(/Did you mean `Bandit`\?/);
  });
});

describe('--help', () => {
  test.each([['envs'], ['play'], ['solve'], ['bench'], ['bench', 'envs']])(
    'ragen %s --help exits 0 and shows examples',
    async (...cmd) => {
      const { code, out } = await run(...cmd, '--help');
      expect(code).toBe(0);
      expect(out).toContain('Examples:');
      expect(out).toContain(`$ ragen ${cmd.join(' ')}`);
    },
  );
});
