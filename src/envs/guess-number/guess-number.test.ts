// GuessNumber: the hidden number's spread over seeds, the higher/lower answers, invalid guesses, the solver, the
// conformance check.
import '../index.js';
import { describe, expect, test } from 'vitest';
import { ResetNeededError } from '../../util/index.js';
import { checkRegisteredEnv, envSpec, resolveEnvConfig } from '../../env/index.js';
import { binarySearchGuesses, GuessNumberEnv, guessNumberSecret, type GuessNumberConfig } from './index.js';

describe('GuessNumber', () => {
  test('the hidden number covers 1..maxNumber over seeds and stays in range', () => {
    const seen = new Map<number, number>();
    for (let seed = 0; seed < 1600; seed++) {
      const s = guessNumberSecret(seed, 16);
      expect(Number.isInteger(s) && s >= 1 && s <= 16).toBe(true);
      seen.set(s, (seen.get(s) ?? 0) + 1);
    }
    expect(seen.size).toBe(16);
    for (const count of seen.values()) expect(count).toBeGreaterThan(50); // 100 expected per number
    expect(guessNumberSecret(123456789012, 16)).toBe(guessNumberSecret(123456789012, 16));
  });

  test('answers higher, lower and correct, counts guesses and ends on the last one', () => {
    const env = new GuessNumberEnv({ maxNumber: 16, maxGuesses: 3 });
    const seed = [...Array(100).keys()].find((s) => guessNumberSecret(s, 16) === 9)!;
    expect(env.reset({ seed }).observation).toBe('Guess the hidden number between 1 and 16. You have 3 guesses.');
    let r = env.step('4');
    expect([r.observation, r.reward, r.terminated, r.info.guesses]).toEqual([
      'Guess the hidden number between 1 and 16. Your guesses: 4 higher. 2 guesses left.',
      0,
      false,
      1,
    ]);
    r = env.step(' 12 ');
    expect([r.observation, r.terminated]).toEqual([
      'Guess the hidden number between 1 and 16. Your guesses: 4 higher, 12 lower. 1 guesses left.',
      false,
    ]);
    r = env.step('10');
    expect([r.observation, r.reward, r.terminated, r.info.success]).toEqual([
      'Guess the hidden number between 1 and 16. Your guesses: 4 higher, 12 lower, 10 lower. 0 guesses left.',
      0,
      true,
      false,
    ]);
    expect(() => env.step('9')).toThrow(ResetNeededError);
    env.reset({ seed });
    r = env.step('9');
    expect([r.observation, r.reward, r.terminated, r.info.success]).toEqual([
      'Guess the hidden number between 1 and 16. Your guesses: 9 correct. 2 guesses left.',
      1,
      true,
      true,
    ]);
  });

  test('an invalid guess costs nothing and says why', () => {
    const env = new GuessNumberEnv(resolveEnvConfig('GuessNumber') as GuessNumberConfig);
    env.reset({ seed: 1 });
    for (const bad of ['0', '17', 'eight', '3.5', '-2', '']) {
      const r = env.step(bad);
      expect([r.info.actionIsValid, r.terminated, r.info.guesses]).toEqual([false, false, 0]);
      expect(r.info.reason).toMatch(/not a number from 1 to 16/);
    }
  });

  test('binary search finds every number of 1..16 within 5 guesses, and the solver wins every seed it plays', () => {
    for (let secret = 1; secret <= 16; secret++) {
      const g = binarySearchGuesses(secret, 16);
      expect(g[g.length - 1]).toBe(secret);
      expect(g.length).toBeLessThanOrEqual(5);
    }
    const cfg = resolveEnvConfig('GuessNumber') as GuessNumberConfig;
    const env = new GuessNumberEnv(cfg);
    for (let seed = 0; seed < 40; seed++) {
      env.reset({ seed });
      const plan = envSpec('GuessNumber').solve!(cfg, seed)!;
      let last;
      for (const a of plan) last = env.step(a);
      expect(last).toMatchObject({ reward: 1, terminated: true });
    }
  });

  test('passes the registry conformance check', async () => {
    await checkRegisteredEnv('GuessNumber');
  });
});
