import { describe, expect, it } from 'vitest';
import { agentConfig } from '../agent/index.js';
import { defaultConfig, loadConfig } from './config.js';
import { agentSettings, envGroupsOptions, localEngineOptions, needsReference, optimizerSettings, samplingOf } from './config-bridge.js';

describe('config bridge', () => {
  it('gives the agent loop its own defaults from ours (the two schemas agree)', () => {
    expect(agentSettings(defaultConfig())).toEqual(agentConfig({}));
  });

  it('maps renamed keys', () => {
    const c = loadConfig({ config: '2048-ppo', overrides: ['agent.rewardMode=turn', 'generation.maxNewTokens=32'] });
    expect(agentSettings(c)).toMatchObject({ contextWindowMode: 'limited_multi_turn', maxContextWindow: 2, useTurnScores: true, maxNewTokens: 32, maxTurns: 30 });
  });

  it('builds env-group settings per split with the split seed and per-tag configs', () => {
    const c = loadConfig({ config: 'bandit-ppo', overrides: ['env.config.BanditTest.loArmScore=0.2', 'agent.maxActionsPerEpisode=1'] });
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
  });

  it('samples validation at its own temperature, or greedily', () => {
    const c = loadConfig({ overrides: ['generation.topK=5'] });
    expect(samplingOf(c, 'train', 7)).toEqual({ temperature: 1, topP: 1, topK: 5, seed: 7 });
    expect(samplingOf(c, 'val', 7).temperature).toBe(0.5);
    expect(samplingOf(loadConfig({ overrides: ['generation.val.greedy=true'] }), 'val', 7).temperature).toBe(0);
  });

  it('sets up the engine: LoRA only with a rank, a critic only for GAE estimators, a reference only for KL', () => {
    const ppo = loadConfig({ config: 'sokoban-ppo', overrides: ['model.lora.rank=8', 'model.critic.mode=shared'] });
    expect(localEngineOptions(ppo)).toEqual({
      backend: 'auto',
      lora: { r: 8, alpha: 64, dropout: 0, targetModules: 'all-linear' },
      critic: 'shared',
      reference: false,
      seed: 10000,
    });
    const grpo = loadConfig({ config: 'sokoban-grpo', overrides: ['algo.kl.useKlLoss=true', 'model.lora.targetModules=[q_proj]'] });
    expect(localEngineOptions(grpo)).toMatchObject({ lora: null, critic: null, reference: true });
    expect(needsReference(loadConfig({ overrides: ['model.reference=always'] }))).toBe(true);
  });

  it('gives AdamW settings with the scheduled learning rate', () => {
    const c = loadConfig({ overrides: ['trainer.warmupSteps=4', 'trainer.actorLr=0.001'] });
    expect(optimizerSettings(c, 'actor', 2)).toEqual({ lr: 0.0005, weightDecay: 0.01, betas: [0.9, 0.999], eps: 1e-8, maxGradNorm: 1 });
    expect(optimizerSettings(c, 'critic', 8).lr).toBe(1e-5);
  });
});
