import '../index.js';
import { describe, expect, test } from 'vitest';
import { ResetNeededError } from '../../util/index.js';
import type { StepResult } from '../../env/index.js';
import { envSpec, makeEnv, resolveEnvConfig } from '../../env/index.js';
import { BanditEnv, TEST_PAIRS, TRAIN_PAIRS, type BanditConfig } from './index.js';

const config = (over: Partial<BanditConfig> = {}): BanditConfig => ({
  ...(resolveEnvConfig('Bandit') as BanditConfig),
  ...over,
});
const highName = (env: BanditEnv, seed: number): string =>
  envSpec('Bandit').solve!(config({ split: env.config.split }), seed)![0]!;

describe('Bandit', () => {
  test('train and test name pairs: 12 and 8, all names distinct', () => {
    expect(TRAIN_PAIRS).toHaveLength(12);
    expect(TEST_PAIRS).toHaveLength(8);
    const all = [...TRAIN_PAIRS, ...TEST_PAIRS].flat().map((n) => n.toLowerCase());
    expect(new Set(all).size).toBe(40);
  });
  test('Bandit draws names from the train pairs and BanditTest from the test pairs', () => {
    const trainNames = new Set(TRAIN_PAIRS.flat());
    const testNames = new Set(TEST_PAIRS.flat());
    const a = makeEnv('Bandit'),
      b = makeEnv('BanditTest');
    for (let seed = 0; seed < 50; seed++) {
      a.reset({ seed });
      b.reset({ seed });
      for (const n of a.actionNames!) expect(trainNames.has(n)).toBe(true);
      for (const n of b.actionNames!) expect(testNames.has(n)).toBe(true);
    }
  });
  test('the high-risk name lands in either position depending on the seed', () => {
    const env = new BanditEnv(config());
    const positions = new Set<number>();
    for (let seed = 0; seed < 40; seed++) {
      env.reset({ seed });
      positions.add(env.actionNames.indexOf(highName(env, seed)));
    }
    expect([...positions].sort()).toEqual([0, 1]);
  });
  test('the low arm always pays 0.1 and fails; the high arm pays 1 about a quarter of the time and succeeds', () => {
    const env = new BanditEnv(config());
    let pays = 0;
    const n = 4000;
    for (let seed = 0; seed < n; seed++) {
      env.reset({ seed });
      const high = highName(env, seed);
      const low = env.actionNames.find((x) => x !== high)!;
      const r = env.step(high);
      expect(r.info.success).toBe(true);
      expect([0, 1]).toContain(r.reward);
      if (r.reward === 1) pays++;
      env.reset({ seed });
      const l = env.step(low.toUpperCase());
      expect([l.reward, l.info.success, l.terminated]).toEqual([0.1, false, true]);
      expect(l.observation).toBe(`${low}: 0.1 points`);
    }
    expect(Math.abs(pays / n - 0.25)).toBeLessThan(0.03);
  });
  test('an invalid name changes nothing and says which names are valid', () => {
    const env = new BanditEnv(config());
    env.reset({ seed: 3 });
    const before = env.render();
    const r = env.step('Astronaut');
    expect([r.info.actionIsValid, r.terminated, r.reward]).toEqual([false, false, 0]);
    expect(r.info.reason).toContain(env.actionNames[0]);
    expect(env.render()).toBe(before);
    expect(env.step(env.actionNames[0]!).terminated).toBe(true);
  });
  test('one pull per episode: a second step throws ResetNeededError', () => {
    const env = new BanditEnv(config());
    expect(() => env.step('x')).toThrow(ResetNeededError);
    env.reset({ seed: 0 });
    env.step(env.actionNames[0]!);
    expect(() => env.step(env.actionNames[0]!)).toThrow(ResetNeededError);
  });
  test('drawSeed varies the payout draw but not the names; the same (seed, drawSeed) repeats', () => {
    const env = new BanditEnv(config());
    const pull = (drawSeed?: number): [readonly string[], number] => {
      env.reset({ seed: 5, options: drawSeed === undefined ? {} : { drawSeed } });
      const names = [...env.actionNames];
      return [names, (env.step(highName(env, 5)) as StepResult).reward];
    };
    const rewards = new Set<number>();
    for (let k = 0; k < 40; k++) {
      const [names, r] = pull(k);
      expect(names).toEqual(pull()[0]);
      expect(pull(k)[1]).toBe(r);
      rewards.add(r);
    }
    expect([...rewards].sort()).toEqual([0, 1]);
  });
  test('the solver picks the arm with the higher expected value', () => {
    const solve = envSpec('Bandit').solve!;
    const env = new BanditEnv(config());
    env.reset({ seed: 9 });
    const high = solve(config(), 9)![0]!;
    expect(env.step(high).info.success).toBe(true);
    // with a low arm worth more than 0.25 the low arm is the better choice
    const low = solve(config({ loArmScore: 0.5 }), 9)![0]!;
    expect(low).not.toBe(high);
    expect(env.actionNames).toContain(low);
  });
});
