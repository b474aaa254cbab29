import '../envs/index.js'; // the built-in environments
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/index.js';
import { listPresets, loadConfig, resolveConfig } from './load.js';
import { checkRunConfig, trainEpisodesPerStep, valEpisodes } from './check.js';

const problems = (overrides: string[], skipModel = true): string => {
  try {
    checkRunConfig(resolveConfig([], overrides), { skipModel });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  return '';
};

describe('run-time config checks', () => {
  it.each(listPresets())('preset %s names registered envs with valid env configs', (name) => {
    const config = loadConfig({ config: name });
    const resolved = checkRunConfig(config, { skipModel: true });
    // built-in tags resolve to env configs; a preset of agent programs only (guessnumber-agent-ppo) has none
    const tags = [...config.env.train, ...config.env.val].flatMap((e) => (e.tag ? [e.tag] : []));
    expect(Object.keys(resolved).length > 0).toBe(tags.length > 0);
  });

  it('name an unknown env tag with the nearest registered one', () => {
    expect(problems(['env.train.0.tag=SimpleSokobann'])).toBe(
      'Bad config value `env.train.0.tag` = "SimpleSokobann": no environment has this id. Did you mean `SimpleSokoban`? Run `ragen envs` for the list.',
    );
  });

  it('reject env configs for unused tags and keys the env does not have', () => {
    expect(problems(['env.config.FrozenLak.successRate=1'])).toMatch(
      /^Bad config key `env.config.FrozenLak`: no entry of `env.train` or `env.val` uses the tag `FrozenLak`./,
    );
    expect(
      problems(['env.train.0.tag=FrozenLake', 'env.val.0.tag=FrozenLake', 'env.config.FrozenLake.succesRate=1']),
    ).toMatch(/^Bad config `env.config.FrozenLake`: .*Did you mean `successRate`/);
    expect(
      problems(['env.train.0.tag=FrozenLake', 'env.val.0.tag=FrozenLake', 'env.config.FrozenLake.successRate=1']),
    ).toBe('');
  });

  it('check the model directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-model-'));
    expect(problems([`model.path=${join(dir, 'none')}`], false)).toMatch(
      /^Bad config value `model.path` = ".*none": no such directory/,
    );
    mkdirSync(join(dir, 'm'));
    expect(problems([`model.path=${join(dir, 'm')}`], false)).toMatch(/has no config.json/);
    writeFileSync(join(dir, 'm', 'config.json'), '{}');
    expect(problems([`model.path=${join(dir, 'm')}`], false)).toBe('');
  });

  it('count episodes per step', () => {
    const c = loadConfig({ config: 'bandit-ppo' });
    expect([trainEpisodesPerStep(c), valEpisodes(c)]).toEqual([64, 128]);
  });
});
