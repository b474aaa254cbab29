import '../envs/index.js'; // the built-in environments
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { train } from '../train/index.js';
import { microConfig, writeMicroModel } from '../train/testing.js';
import { ConfigError } from '../util/index.js';
import { runEval } from '../eval/index.js';
import { LocalEngine } from '../engine/index.js';

let root: string;
let model: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-budget-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The error `train` throws for `overrides`, or undefined when the run trains. */
async function trainError(runDir: string, overrides: string[]): Promise<unknown> {
  try {
    await train({ config: microConfig(model, runDir, ['trainer.steps=1', ...overrides]) });
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('checkPromptBudget at train start', () => {
  it('refuses a maxContextTokens below the first prompt before any step, naming the tag, the lengths and the fix', async () => {
    const runDir = join(root, 'small');
    const err = await trainError(runDir, ['agent.maxContextTokens=200']);
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    expect(msg).toContain('`env.train` tag `SimpleSokoban`');
    expect(msg).toMatch(/the first prompt \(seed \d+\) is \d+ tokens/);
    expect(msg).toContain('`agent.maxContextTokens` = 200');
    expect(existsSync(runDir)).toBe(false); // refused before the run directory or any step
    const least = Number(/at least (\d+)/.exec(msg)?.[1]);
    expect(least).toBeGreaterThan(200);
    // The number it names is the real boundary: one token less is refused, that budget trains.
    expect(await trainError(join(root, 'below'), [`agent.maxContextTokens=${least - 1}`])).toBeInstanceOf(ConfigError);
    expect(await trainError(join(root, 'least'), [`agent.maxContextTokens=${least}`])).toBeUndefined();
  });
});

describe('contexts within the model (issue 34, item 12)', () => {
  let short: string;
  beforeAll(async () => void (short = await writeMicroModel(join(root, 'short'), { maxPositionEmbeddings: 256 })));

  it('item 12: train refuses agent.maxContextTokens past the model positions, naming both numbers', async () => {
    const err = await trainError(join(root, 'past'), [`model.path=${short}`, 'agent.maxContextTokens=1024']);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      /`agent.maxContextTokens` = 1024 is past the model's 256 positions .*Lower `agent.maxContextTokens` to at most 256/,
    );
  });

  it('item 12: a first prompt past the model positions is refused without advising a budget the model cannot hold', async () => {
    const err = await trainError(join(root, 'prompt'), [`model.path=${short}`, 'agent.maxContextTokens=200']);
    const msg = (err as Error).message;
    expect(Number(/ makes (\d+)/.exec(msg)?.[1])).toBeGreaterThan(256); // the case under test: prompt + generation past 256
    expect(msg).toMatch(/The model holds 256 positions, so a larger `agent.maxContextTokens` cannot help/);
    expect(msg).not.toMatch(/Raise `agent.maxContextTokens`/);
  });

  it('item 12: eval refuses what train refuses (it reported 0.0% with every episode truncated)', async () => {
    await expect(
      runEval({ env: 'SimpleSokoban', policy: 'model', model, groups: 2, set: ['maxContextTokens=200'] }),
    ).rejects.toThrow(/`--env` tag `SimpleSokoban`: the first prompt .* over `agent.maxContextTokens` = 200/);
    await expect(
      runEval({ env: 'SimpleSokoban', policy: 'random', groups: 2, set: ['maxContextTokens=200'] }),
    ).rejects.toThrow(/over `agent.maxContextTokens` = 200/);
    await expect(
      runEval({ env: 'SimpleSokoban', policy: 'model', model: short, groups: 2, set: ['maxContextTokens=1024'] }),
    ).rejects.toThrow(/past the model's 256 positions/);
    // a preset whose val set holds agent programs runs its built-in tags through the same check
    const preset = join(root, 'agents.yaml');
    writeFileSync(
      preset,
      `model: {path: ${JSON.stringify(short)}}\nenv:\n  train: [{tag: Bandit, groups: 2, groupSize: 4}]\n  val: [{tag: Bandit, groups: 2}, {agent: {command: "node -e 0"}, name: Noop, groups: 1}]\ntrainer: {miniBatchSize: 8, microBatchSize: 8}\nagent: {maxContextTokens: 1024}\n`,
    );
    await expect(runEval({ preset })).rejects.toThrow(
      /`agent.maxContextTokens` = 1024 is past the model's 256 positions/,
    );
  });

  it('item 12: the engine refuses a prompt plus generation past the position table, naming both numbers', async () => {
    const engine = await LocalEngine.fromPretrained(short);
    try {
      const prompt = Array.from({ length: 250 }, (_, i) => 10 + (i % 50));
      await expect(engine.generate([prompt], { maxNewTokens: 7, temperature: 0, seed: 0 })).rejects.toThrow(
        /prompt 0 has 250 tokens and may generate 7 more \(257 in all\), past the model's 256 positions/,
      );
      expect(
        (await engine.generate([prompt], { maxNewTokens: 6, temperature: 0, seed: 0 }))[0]!.tokens.length,
      ).toBeLessThanOrEqual(6);
    } finally {
      engine.dispose();
    }
  });
});
