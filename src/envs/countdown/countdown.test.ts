import '../index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { ResetNeededError } from '../../util/index.js';
import { envSpec, makeEnv, resolveEnvConfig } from '../../env/index.js';
import { scoreAnswer } from './expression.js';
import { countdownTask, solveCountdown, type CountdownConfig } from './index.js';

const config = (): CountdownConfig => resolveEnvConfig('Countdown') as CountdownConfig;

describe('Countdown tasks', () => {
  test('are deterministic per seed and differ across seeds', () => {
    expect(countdownTask(config(), 7)).toEqual(countdownTask(config(), 7));
    const distinct = new Set(Array.from({ length: 50 }, (_, s) => JSON.stringify(countdownTask(config(), s))));
    expect(distinct.size).toBeGreaterThan(45);
  });
  test('respect the configured ranges and are never trivial', () => {
    for (let s = 0; s < 300; s++) {
      const t = countdownTask(config(), s);
      expect(t.numbers.length).toBeGreaterThanOrEqual(3);
      expect(t.numbers.length).toBeLessThanOrEqual(4);
      for (const n of t.numbers) expect(n >= 1 && n <= 100).toBe(true);
      expect(Number.isInteger(t.target) && t.target >= 1 && t.target <= 100).toBe(true);
      expect(t.numbers).not.toContain(t.target);
      expect(scoreAnswer(t.witness, t.numbers, t.target).correct).toBe(true);
    }
  });
  test('honour numbers-count config', () => {
    const c = resolveEnvConfig('Countdown', { minNumbers: 5, maxNumbers: 5, maxTarget: 1000 }) as CountdownConfig;
    expect(countdownTask(c, 1).numbers).toHaveLength(5);
  });
});

describe('Countdown solver', () => {
  test('solves the classic 24 game case that needs fractions', () => {
    const expr = solveCountdown([1, 5, 5, 5], 24)!;
    expect(scoreAnswer(expr, [1, 5, 5, 5], 24).correct).toBe(true);
    expect(solveCountdown([1, 1, 1], 100)).toBeUndefined();
  });
  test('solves 200 seeds through step', () => {
    const spec = envSpec('Countdown');
    const c = config();
    for (let seed = 0; seed < 200; seed++) {
      const actions = spec.solve!(c, seed)!;
      expect(actions).toHaveLength(1);
      const env = makeEnv('Countdown');
      env.reset({ seed });
      const r = env.step(actions[0]!) as any;
      expect(r).toMatchObject({
        reward: 1,
        terminated: true,
        truncated: false,
        info: { success: true, actionIsValid: true },
      });
    }
  });
});

describe('CountdownEnv', () => {
  test('observes the task as RAGEN does', () => {
    const env = makeEnv('Countdown');
    const r = env.reset({ seed: 0 }) as any;
    const t = countdownTask(config(), 0);
    expect(r.observation).toBe(`Target: ${t.target}, nums: [${t.numbers.join(', ')}]`);
    expect(r.info).toMatchObject({ success: false, actionIsValid: true });
    expect(env.actionNames).toBeUndefined();
  });
  test('scores a hand-built task: right, wrong value, repeated number', () => {
    const env = makeEnv('Countdown');
    const hand = { seed: 0, options: { numbers: [3, 5, 2], target: 4 } };
    env.reset(hand);
    expect((env.step('5 - 3 + 2') as any).reward).toBe(1);
    env.reset(hand);
    expect(env.step('5 + 3 + 2') as any).toMatchObject({ reward: 0.1, terminated: true, info: { success: false } });
    env.reset(hand);
    const rep = env.step('5 - 3 + 2 - 2 + 2') as any;
    expect(rep).toMatchObject({ reward: 0, terminated: true, info: { success: false, actionIsValid: true } });
    env.reset(hand);
    expect((env.step('(5 + 3) / (2 - 2 * 1)') as any).reward).toBe(0);
  });
  test('an invalid answer leaves the episode running and says why', () => {
    const env = makeEnv('Countdown');
    const first = env.reset({ seed: 3 }) as any;
    const r = env.step('the answer is 42') as any;
    expect(r).toMatchObject({ reward: 0, terminated: false, truncated: false, observation: first.observation });
    expect(r.info.actionIsValid).toBe(false);
    expect(r.info.reason).toMatch(/unexpected character/);
  });
  test('stepping before reset or after the answer throws ResetNeededError', () => {
    const env = makeEnv('Countdown');
    expect(() => env.step('1 + 2')).toThrow(ResetNeededError);
    env.reset({ seed: 1, options: { numbers: [1, 2], target: 3 } });
    env.step('1 + 2');
    expect(() => env.step('1 + 2')).toThrow(ResetNeededError);
  });
  test('hostile text never throws', () => {
    const env = makeEnv('Countdown');
    for (const h of [
      '',
      'a'.repeat(100_000),
      '\u0000\u001b',
      '🙂',
      '('.repeat(10_000) + '1' + ')'.repeat(10_000),
      '9'.repeat(100_000),
    ]) {
      env.reset({ seed: 2 });
      const r = env.step(h) as any;
      expect(r.reward).toBe(0);
    }
  });
  test('rejects a bad config with the key named', () => {
    expect(() => makeEnv('Countdown', { minNumbers: 5, maxNumbers: 3 })).toThrow(/minNumbers/);
    expect(() => makeEnv('Countdown', { maxNumbrs: 5 })).toThrow(/maxNumbers/);
  });
});
