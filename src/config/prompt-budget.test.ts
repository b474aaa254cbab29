import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { train } from '../train/index.js';
import { microConfig, writeMicroModel } from '../train/testing.js';
import { ConfigError } from '../util/index.js';

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
