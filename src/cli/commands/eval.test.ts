import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { LocalEngine } from '../../engine/index.js';
import { modelConfig } from '../../model/index.js';
import { tinyTokenizerDir } from '../../tokenizer/index.js';
import { loadConfig, samplingOf, saveConfig } from '../../config/index.js';
import { agentEvalConfig, resolveModelDir, type EvalReport } from '../../eval/index.js';
import { runCli } from '../testing.js';
import { writeCheckpoint } from '../../train/index.js';

const run = runCli;

afterEach(() => vi.restoreAllMocks());
const tmp = mkdtempSync(join(tmpdir(), 'ragen-eval-'));

describe('ragen eval', () => {
  test('--policy oracle wins SimpleSokoban, CoordFrozenLake, Countdown and SimpleSudoku through the text loop and writes JSONL', async () => {
    const out = join(tmp, 'oracle.jsonl');
    const r = await run(
      'eval',
      '--env',
      'SimpleSokoban,CoordFrozenLake,Countdown,SimpleSudoku',
      '--policy',
      'oracle',
      '--groups',
      '8',
      '--json',
      '--out',
      out,
    );
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out) as EvalReport;
    expect(report.envs).toEqual(['SimpleSokoban', 'CoordFrozenLake', 'Countdown', 'SimpleSudoku']);
    for (const id of report.envs) expect(report.metrics[id]!['success'], id).toBe(1);
    for (const m of Object.values(report.metrics)) expect(m['format_error_rate']).toBe(0);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(32);
    expect(lines[8]).toMatchObject({
      env: 'CoordFrozenLake',
      seed: 131,
      group: 8,
      success: true,
      end_reason: 'terminated',
    });
    expect(lines[8].messages[0].role).toBe('system');
    expect(lines[8].messages.at(-1).content).toMatch(/^<think><\/think><answer>.*<\/answer>$/);
  });

  test('--config Tag.key=value sets one tag: slippery FrozenLake made deterministic is won by the oracle', async () => {
    const ok = await run(
      'eval',
      '--env',
      'SimpleSokoban,FrozenLake',
      '--policy',
      'oracle',
      '--groups',
      '16',
      '--config',
      'FrozenLake.successRate=1',
      '--json',
    );
    expect(ok.code, ok.err).toBe(0);
    const report = JSON.parse(ok.out) as EvalReport;
    expect(report.metrics['FrozenLake']!['success']).toBe(1);
    expect(report.metrics['SimpleSokoban']!['success']).toBe(1);
    expect((await run('eval', '--env', 'SimpleSokoban,FrozenLake', '--config', 'successRate=1')).err).toMatch(
      /Unknown config key `successRate` for environment `SimpleSokoban`/,
    );
    expect((await run('eval', '--env', 'SimpleSokoban', '--config', 'FrozenLake.successRate=1')).err).toMatch(
      /`FrozenLake` is not among the evaluated envs/,
    );
    expect((await run('eval', '--env', 'FrozenLake', '--config', 'FrozenLak.successRate=1')).err).toMatch(
      /Did you mean `FrozenLake`/,
    );
  });

  test('prints a table by default, and --policy random gives a well-formed floor', async () => {
    const r = await run('eval', '--env', 'CoordFrozenLake', '--policy', 'random', '--groups', '4', '--group-size', '2');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^env\s+success\s+pass@2\s+actions/m);
    expect(r.out).toMatch(/^CoordFrozenLake\s+\d+\.\d%/m);
    expect(r.out).toMatch(/format_err[\s\S]*0\.0%/);
  });

  test('--policy model runs a checkpoint through the local engine', async () => {
    const engine = LocalEngine.create(
      modelConfig({
        vocabSize: 1024,
        hiddenSize: 16,
        intermediateSize: 32,
        numLayers: 1,
        numHeads: 2,
        numKvHeads: 1,
        maxPositionEmbeddings: 4096,
      }),
      { seed: 1 },
    );
    const dir = await writeCheckpoint(
      join(tmp, 'run', 'checkpoints'),
      { step: 3, data: {} },
      {
        writeModel: async (d) => {
          await engine.save(d);
          for (const f of ['tokenizer.json', 'tokenizer_config.json'])
            copyFileSync(join(tinyTokenizerDir(), f), join(d, f));
        },
      },
    );
    expect(resolveModelDir(join(tmp, 'run'))).toBe(dir);
    const out = join(tmp, 'model.jsonl');
    const args = [
      'eval',
      '--env',
      'Countdown',
      '--policy',
      'model',
      '--model',
      join(tmp, 'run'),
      '--groups',
      '2',
      '--set',
      'maxNewTokens=12',
      '--json',
      '--out',
      out,
    ];
    const a = await run(...args);
    expect(a.code).toBe(0);
    const report = JSON.parse(a.out) as EvalReport;
    expect(report.policy).toBe('model(local)');
    expect(report.metrics['Countdown']!['response_length']).toBeLessThanOrEqual(12);
    const first = readFileSync(out, 'utf8');
    // same seed -> same trajectories
    expect((await run(...args)).code).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(first);
  });

  test('--greedy decodes greedily: the members of a group (same seed) play the same episode; sampling makes them differ', async () => {
    const dir = join(tmp, 'greedy');
    const engine = LocalEngine.create(
      modelConfig({
        vocabSize: 1024,
        hiddenSize: 16,
        intermediateSize: 32,
        numLayers: 1,
        numHeads: 2,
        numKvHeads: 1,
        maxPositionEmbeddings: 4096,
      }),
      { seed: 2 },
    );
    await engine.save(dir);
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(join(tinyTokenizerDir(), f), join(dir, f));
    const responses = async (...flags: string[]) => {
      const out = join(tmp, `greedy${flags.join('')}.jsonl`);
      const r = await run(
        'eval',
        '--env',
        'SimpleSokoban',
        '--model',
        dir,
        '--groups',
        '1',
        '--group-size',
        '3',
        '--max-turns',
        '2',
        '--set',
        'maxNewTokens=10',
        '--out',
        out,
        ...flags,
      );
      expect(r.code, r.err).toBe(0);
      return readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.stringify((JSON.parse(l) as { messages: unknown }).messages));
    };
    expect(new Set(await responses('--greedy')).size).toBe(1);
    expect(new Set(await responses('--temperature', '1')).size).toBeGreaterThan(1);
  });

  test('--preset takes the validation envs and agent settings of a preset', async () => {
    const r = await run('eval', '--preset', 'frozenlake-ppo', '--policy', 'oracle', '--groups', '6', '--json');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out) as EvalReport;
    expect(report.envs).toEqual(['CoordFrozenLake']);
    expect(report.seed).toBe(loadConfig({ config: 'frozenlake-ppo' }).seed.val);
    expect(report.metrics['CoordFrozenLake']!['success']).toBe(1); // deterministic moves, as RAGEN's success_rate 1
  });

  test('--run evaluates the latest checkpoint of a run with its config', async () => {
    const runDir = join(tmp, 'run2');
    saveConfig(loadConfig({ config: 'countdown-ppo', overrides: ['agent.maxNewTokens=6'] }), runDir);
    for (const step of [1, 4]) {
      const engine = LocalEngine.create(
        modelConfig({
          vocabSize: 1024,
          hiddenSize: 16,
          intermediateSize: 32,
          numLayers: 1,
          numHeads: 2,
          numKvHeads: 1,
          maxPositionEmbeddings: 4096,
        }),
        { seed: step },
      );
      await writeCheckpoint(
        join(runDir, 'checkpoints'),
        { step, data: {} },
        {
          writeModel: async (dir) => {
            await engine.save(dir);
            for (const f of ['tokenizer.json', 'tokenizer_config.json'])
              copyFileSync(join(tinyTokenizerDir(), f), join(dir, f));
          },
        },
      );
    }
    expect(resolveModelDir(runDir)).toBe(join(runDir, 'checkpoints', 'step-4'));
    const r = await run('eval', '--run', runDir, '--groups', '2', '--json');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out) as EvalReport;
    expect(report).toMatchObject({ policy: 'model(local)', envs: ['Countdown'] });
    expect(report.metrics['Countdown']!['response_length']).toBeLessThanOrEqual(6);
  });

  test('bad input is a clear error', async () => {
    expect((await run('eval', '--policy', 'oracle')).err).toMatch(/Give --env/);
    expect((await run('eval', '--env', 'SimpleSokobn')).err).toMatch(/Did you mean `SimpleSokoban`/);
    expect((await run('eval', '--env', 'Countdown', '--policy', 'gpt')).err).toMatch(/Bad --policy `gpt`/);
    expect((await run('eval', '--env', 'Countdown', '--policy', 'model')).err).toMatch(/needs --model/);
    expect((await run('eval', '--env', 'Countdown', '--set', 'maxTurn=2')).err).toMatch(/Did you mean `maxTurns`/);
    expect((await run('eval', '--env', 'Countdown', '--set', 'maxContextWindow=2')).err).toMatch(
      /needs `contextWindowMode` = "limited_multi_turn"/,
    );
    expect((await run('eval', '--env', 'game_2048', '--policy', 'oracle')).err).toMatch(/has no solver/);
    mkdirSync(join(tmp, 'empty'), { recursive: true });
    expect(() => resolveModelDir(join(tmp, 'empty'))).toThrow(/No model in/);
  });

  test('an --out that cannot be written fails before any rollout, with exit code 2, and leaves no file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-eval-out-'));
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    for (const out of [join(file, 'eval.jsonl'), dir]) {
      const t0 = performance.now();
      const r = await run('eval', '--env', 'SimpleSokoban', '--policy', 'random', '--groups', '64', '--out', out);
      expect(r.code).toBe(2);
      expect(r.err).toContain(`Cannot write --out \`${out}\``);
      expect(r.err).not.toMatch(/\n\s+at /); // no stack
      expect(performance.now() - t0).toBeLessThan(5000);
    }
    expect(readdirSync(dir).sort()).toEqual(['a-file']);
    // A good --out appears whole, with no .tmp beside it.
    const good = join(dir, 'sub', 'ok.jsonl');
    expect(
      (await run('eval', '--env', 'SimpleSokoban', '--policy', 'random', '--groups', '2', '--out', good)).code,
    ).toBe(0);
    expect(readdirSync(join(dir, 'sub'))).toEqual(['ok.jsonl']);
    expect(readFileSync(good, 'utf8').trim().split('\n')).toHaveLength(2);
  });

  test('a preset with agent programs: its whole val set through the gateway, seeds from --seed, --groups per entry; other policies refused', async () => {
    // The program's reward is its task seed's parity, once the model answered its one call: which seeds ran shows in
    // success.
    writeFileSync(
      join(tmp, 'parity.mjs'),
      `export async function solve(ctx) {
  const r = await fetch(ctx.baseUrl + '/chat/completions', { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 }) });
  const body = await r.json();
  return r.status === 200 && body.usage.completion_tokens > 0 ? ctx.seed % 2 : -5;
}
`,
    );
    const file = join(tmp, 'agent-val.yaml');
    writeFileSync(
      file,
      `env:\n  train: [{tag: Bandit, groups: 2, groupSize: 4}]\n  val: [{tag: Bandit, groups: 2}, {agent: {module: ${JSON.stringify(join(tmp, 'parity.mjs'))}, export: solve}, name: Parity, groups: 3}]\ntrainer: {miniBatchSize: 8, microBatchSize: 8}\nagent: {maxNewTokens: 64, maxContextTokens: 1024}\n`,
    );
    const refused = await run('eval', '--preset', file, '--policy', 'random');
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(
      /--policy random does not apply to agent programs \(env\.val\.1\); leave it out, or give --env <ids>/,
    );
    const out = join(tmp, 'agents.jsonl');
    const r = await run('eval', '--preset', file, '--seed', '100', '--json', '--out', out);
    expect(r.code, r.err).toBe(0);
    const report = JSON.parse(r.out) as EvalReport;
    expect(report.envs).toEqual(['Bandit', 'Parity']);
    expect(report.episodes).toBe(5);
    expect(report.metrics['Parity']!['success']).toBeCloseTo(1 / 3); // agent groups follow Bandit's 2: seeds 102, 103, 104
    const records = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(records.filter((x) => x.env === 'Parity').map((x) => [x.seed, x.success])).toEqual([
      [102, false],
      [103, true],
      [104, false],
    ]);
    // the table: an agent row has no env actions to be valid or effective
    const table = (await run('eval', '--preset', file, '--seed', '100')).out.split('\n');
    expect(
      table
        .find((l) => l.startsWith('Parity'))!
        .split(/\s+/)
        .slice(4, 6),
    ).toEqual(['-', '-']);
    expect(table.find((l) => l.startsWith('Bandit'))!.split(/\s+/)[4]).toMatch(/^\d+\.\d%$/);
    const more = JSON.parse(
      (await run('eval', '--preset', file, '--seed', '100', '--groups', '3', '--json')).out,
    ) as EvalReport;
    expect(more.episodes).toBe(6);
    expect(more.metrics['Parity']!['success']).toBeCloseTo(2 / 3); // seeds 103, 104, 105
    expect((await run('eval', '--preset', file, '--policy', 'random', '--env', 'Bandit', '--groups', '2')).code).toBe(
      0,
    );
    // A program that fails is said on stderr (first failure, how many more), not only a success of 0.
    writeFileSync(
      join(tmp, 'broken.mjs'),
      'export async function solve() { throw new Error("no such tool: calc"); }\n',
    );
    const broken = join(tmp, 'broken.yaml');
    writeFileSync(broken, readFileSync(file, 'utf8').replace('parity.mjs', 'broken.mjs'));
    const b = await run('eval', '--preset', broken, '--json');
    expect(b.code, b.err).toBe(0);
    expect((JSON.parse(b.out) as EvalReport).metrics['Parity']!['success']).toBe(0);
    expect(b.err).toMatch(/validation: .*no such tool: calc.*\(and 2 more failed episode\(s\)\)/);
  }, 60_000);
});

describe('ragen eval of agent programs: the options reach the config the val set runs with', () => {
  const base = loadConfig({ config: 'guessnumber-agent-ppo' });
  test('--greedy and --temperature set validation sampling (what the gateway samples with), --seed the task seeds', () => {
    expect(samplingOf(agentEvalConfig(base, {}), 'val', 0).temperature).toBe(samplingOf(base, 'val', 0).temperature);
    expect(samplingOf(agentEvalConfig(base, { greedy: true }), 'val', 0).temperature).toBe(0);
    expect(samplingOf(agentEvalConfig(base, { temperature: 0.9 }), 'val', 0).temperature).toBe(0.9);
    expect(agentEvalConfig(base, { seed: 777 }).seed.val).toBe(777);
  });
  test('--groups and --group-size apply to every val entry; --set to the agent settings', () => {
    const c = agentEvalConfig(base, { groups: 5, groupSize: 3, set: ['maxNewTokens=32'] });
    expect(c.env.val.map((e) => [e.groups, e.groupSize])).toEqual(base.env.val.map(() => [5, 3]));
    expect(c.agent.maxNewTokens).toBe(32);
    expect(() => agentEvalConfig(base, { set: ['maxNewTokens=-1'] })).toThrow(/Bad --set/);
  });
  test('refuses what does not apply to agent programs, by name', async () => {
    for (const [args, what] of [
      [['--config', 'x=1'], '--config'],
      [['--max-turns', '2'], '--max-turns'],
      [['--policy', 'oracle'], '--policy oracle'],
    ] as const) {
      const r = await run('eval', '--preset', 'guessnumber-agent-ppo', ...args);
      expect(r.code, what).toBe(2);
      expect(r.err).toContain(`${what} does not apply to agent programs (env.val.0)`);
    }
  });
});

describe('ragen eval --help', () => {
  test('its --policy model examples name models that exist (shipped names resolve from any folder)', async () => {
    const { out } = await run('eval', '--help');
    const models = [...out.matchAll(/--policy model --model (\S+)/g)].map((m) => m[1]!);
    expect(models.length).toBeGreaterThan(0);
    for (const m of models) expect(() => resolveModelDir(m), m).not.toThrow();
  });
});
