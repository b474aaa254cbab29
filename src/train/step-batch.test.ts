import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/index.js';
import { family, stepSettings } from './step-batch.js';

describe('family', () => {
  it('puts each name under the prefix and leaves undefined values out', () => {
    expect(family('critic', { vf_loss: 0.5, lr: undefined, grad_norm: 2 })).toEqual({
      'critic/vf_loss': 0.5,
      'critic/grad_norm': 2,
    });
  });
});

describe('stepSettings', () => {
  it('gives each stage its slice of the config, read once', () => {
    const config = loadConfig({
      config: 'sokoban-ppo',
      overrides: ['agent.useTurnScores=true', 'trainer.ppoEpochs=3', 'algo.kl.useKlLoss=true', 'algo.kl.coef=0.05'],
    });
    const s = stepSettings(config);
    expect(s.collate.scoreBy).toBe('turn');
    expect(s.update.epochs).toBe(3);
    expect(s.update.useKlLoss).toBe(true);
    expect(s.update.actorLoss.klCoef).toBe(0.05);
    expect(s.score.critic).toBe(true); // the preset's GAE needs values
    expect(s.update.optimizer('critic', 1).weightDecay).toBe(config.trainer.weightDecay);
  });
});
