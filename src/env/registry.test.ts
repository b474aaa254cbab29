import '../envs/index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { testSandbox } from '../sandbox/testing.js';
import { ConfigError, EnvNotFoundError } from '../util/index.js';
import { envSpec, listEnvs, makeEnv, registerEnv, resolveEnvConfig, resolveEnvId } from './index.js';

describe('the env registry', () => {
  test('an unknown id is an EnvNotFoundError suggesting the nearest id', () => {
    expect(() => makeEnv('Bandi')).toThrow(EnvNotFoundError);
    expect(() => makeEnv('Bandi')).toThrow('Environment `Bandi` does not exist. Did you mean `Bandit`?');
    expect(() => makeEnv('BanditTset')).toThrow(/Did you mean `BanditTest`\?/);
  });
  test('an id far from every registered one gets no suggestion but points at `ragen envs`', () => {
    expect(() => makeEnv('Zzzzzzzzzzzzzz')).toThrow(/does not exist\. Run `ragen envs`/);
  });
  test('ids match ignoring case when exactly one id fits', () => {
    expect(resolveEnvId('bandit')).toBe('Bandit');
    expect(resolveEnvId('MetaMathQA')).toBe('MetamathQA');
    expect(makeEnv('BANDITTEST').actionNames).toEqual([]);
  });
  test('an unknown config key is a ConfigError naming the key, the nearest key and the valid keys', () => {
    expect(() => makeEnv('Bandit', { loArmScor: 0.2 })).toThrow(ConfigError);
    expect(() => makeEnv('Bandit', { loArmScor: 0.2 })).toThrow(
      /Unknown config key `loArmScor` for environment `Bandit`\. Did you mean `loArmScore`\?.*Valid keys: split, loArmScore/,
    );
  });
  test('an unknown key inside a nested config object is a ConfigError naming its path and the nearest key', () => {
    const err =
      /Unknown config key `gridVocab.wal` for environment `SimpleSokoban`\. Did you mean `wall`\? Valid keys of gridVocab: wall, floor/;
    expect(() => makeEnv('SimpleSokoban', { gridVocab: { wal: 'W' } })).toThrow(ConfigError);
    expect(() => makeEnv('SimpleSokoban', { gridVocab: { wal: 'W' } })).toThrow(err);
    expect(makeEnv('SimpleSokoban', { gridVocab: { wall: 'W' } }).legend).toContain('W wall');
  });
  test.each(listEnvs().map((e) => e.id))(
    '%s: an unknown reset option is a ConfigError, not silently ignored',
    async (id) => {
      const env = makeEnv(id);
      await expect(async () => env.reset({ seed: 0, options: { sed: 1 } })).rejects.toThrow(ConfigError);
      await expect(async () => env.reset({ seed: 0, options: { sed: 1 } })).rejects.toThrow(/reset option `sed`/);
      // A service env (Lean) needs its server to reset; DeepCoder's reset starts its sandbox (see testSandbox).
      if (!envSpec(id).requires && (id !== 'DeepCoder' || testSandbox())) await env.reset({ seed: 0 });
    },
  );
  test('a misspelt reset option gets a suggestion', () => {
    expect(() => makeEnv('Bandit').reset({ seed: 0, options: { drawSed: 1 } })).toThrow(
      /Unknown Bandit reset option `drawSed`\. Did you mean `drawSeed`\? Valid options: drawSeed\./,
    );
    expect(() => makeEnv('MetamathQA').reset({ seed: 0, options: { x: 1 } })).toThrow(/takes no reset options/);
  });
  test('a bad config value is a ConfigError naming the key and the value', () => {
    expect(() => makeEnv('Bandit', { hiArmHiscoreProb: 1.5 })).toThrow(/`hiArmHiscoreProb` = 1.5/);
    expect(() => makeEnv('Bandit', { split: 'tset' })).toThrow(/`split` = "tset"/);
  });
  test('per-id defaults sit between the schema defaults and the overrides', () => {
    expect(resolveEnvConfig('BanditTest')).toMatchObject({ split: 'test', loArmScore: 0.1 });
    expect(resolveEnvConfig('BanditTest', { split: 'train' })).toMatchObject({ split: 'train' });
  });
  test('registering an id twice is an error', () => {
    expect(() => registerEnv('Bandit', envSpec('Bandit'))).toThrow(/already registered/);
  });
  test('listEnvs gives each id once with a description', () => {
    const envs = listEnvs();
    expect(new Set(envs.map((e) => e.id)).size).toBe(envs.length);
    for (const e of envs) expect(e.description.length).toBeGreaterThan(10);
  });
});
