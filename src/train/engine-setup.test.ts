import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/index.js';
import { localEngineOptions, needsReference } from './engine-setup.js';

describe('engine options from the config', () => {
  it('load LoRA only with a rank, a critic only for GAE estimators, a reference only for KL', () => {
    const ppo = loadConfig({ config: 'sokoban-ppo', overrides: ['model.lora.rank=8', 'model.critic.mode=shared', 'model.backend=js'] });
    expect(localEngineOptions(ppo)).toEqual({
      backend: 'js',
      lora: { r: 8, alpha: 64, dropout: 0, targetModules: 'all-linear' },
      critic: 'shared',
      reference: false,
      seed: 10000,
    });
    const grpo = loadConfig({ config: 'sokoban-grpo', overrides: ['algo.kl.useKlLoss=true', 'model.lora.targetModules=[q_proj]'] });
    expect(localEngineOptions(grpo)).toMatchObject({ lora: null, critic: null, reference: true });
  });

  it('load the reference when asked to, or when a KL term is on', () => {
    expect(needsReference(loadConfig({ overrides: ['model.reference=always'] }))).toBe(true);
    expect(needsReference(loadConfig({ overrides: ['algo.kl.inReward=true'] }))).toBe(true);
    expect(needsReference(loadConfig({ overrides: ['model.reference=never'] }))).toBe(false);
    expect(needsReference(loadConfig({}))).toBe(false);
  });
});
