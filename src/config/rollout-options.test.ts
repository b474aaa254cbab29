import '../envs/index.js'; // the built-in environments
import { describe, expect, it } from 'vitest';
import { loadConfig } from './load.js';
import { envGroupsOptions, samplingOf } from './rollout-options.js';

describe('rollout options', () => {
  it('build env-group settings per split with the split seed, per-tag configs and the action cap', () => {
    const c = loadConfig({
      config: 'bandit-ppo',
      overrides: ['env.config.BanditTest.loArmScore=0.2', 'agent.maxActionsPerEpisode=1'],
    });
    expect(envGroupsOptions(c, 'val')).toEqual({
      tags: [
        { env: 'Bandit', nGroups: 64, config: {}, maxActionsPerEpisode: 1 },
        { env: 'BanditTest', nGroups: 64, config: { loArmScore: 0.2 }, maxActionsPerEpisode: 1 },
      ],
      groupSize: 1,
      mode: 'val',
      seed: 123,
    });
    expect(envGroupsOptions(c, 'train')).toMatchObject({ groupSize: 8, seed: 10000, mode: 'train' });
    expect(envGroupsOptions(loadConfig({ config: 'bandit-ppo' }), 'train').tags[0]).not.toHaveProperty(
      'maxActionsPerEpisode',
    );
  });

  it('sample validation at its own temperature, or greedily', () => {
    const c = loadConfig({ overrides: ['generation.topK=5'] });
    expect(samplingOf(c, 'train', 7)).toEqual({ temperature: 1, topP: 1, topK: 5, seed: 7 });
    expect(samplingOf(c, 'val', 7).temperature).toBe(0.5);
    expect(samplingOf(loadConfig({ overrides: ['generation.val.greedy=true'] }), 'val', 7).temperature).toBe(0);
  });
});
