// `ragen eval --env X --model ragen-tiny`, the command eval's own --help shows: without a run or preset the agent's
// context budget is the schema's (RAGEN's 3600 tokens), past the tiny model's 1,024 positions. It must run with the
// model's positions as the budget, and an explicit budget past them must still be refused.
import { describe, expect, test } from 'vitest';
import { runCli } from '../testing.js';
import type { EvalReport } from '../../eval/index.js';

describe('ragen eval --env with a model and no preset', () => {
  test('runs within the model positions instead of refusing the default budget', async () => {
    const r = await runCli('eval', '--env', 'Bandit', '--model', 'ragen-tiny', '--groups', '2', '--json');
    expect(r.err).not.toMatch(/maxContextTokens/);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as EvalReport).metrics['Bandit']!['episodes']).toBe(2);
  }, 120_000);

  test('an explicit budget past the model positions is still refused, naming it', async () => {
    const r = await runCli('eval', '--env', 'Bandit', '--model', 'ragen-tiny', '--set', 'maxContextTokens=3600');
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/maxContextTokens` = 3600 is past the model's 1024 positions/);
  }, 120_000);
});
