// Registers RAGEN's bandit tags: `Bandit` (train name pairs) and `BanditTest` (held-out name pairs).
import { registerEnv } from '../../env/index.js';
import { BanditEnv, banditArms, type BanditConfig, banditSchema } from './bandit.js';

export { BanditEnv, banditArms, TRAIN_PAIRS, TEST_PAIRS, type BanditConfig } from './bandit.js';

const spec = {
  schema: banditSchema,
  create: (config: BanditConfig) => new BanditEnv(config),
  maxActionsPerEpisode: 1,
  /** The arm with the higher expected value: the high-risk one by default (0.25 vs 0.1). */
  solve: (config: BanditConfig, seed: number) => {
    const arms = banditArms(config.split, seed);
    const highValue =
      config.hiArmHiscoreProb * config.hiArmHiscore + (1 - config.hiArmHiscoreProb) * config.hiArmLoscore;
    return [arms.names[highValue >= config.loArmScore ? arms.highArm : 1 - arms.highArm]!];
  },
};

registerEnv<BanditConfig>('Bandit', {
  ...spec,
  description: 'Two-armed bandit, arms named by professions (train name pairs); one pull.',
});
registerEnv<BanditConfig>('BanditTest', {
  ...spec,
  description: 'Two-armed bandit with held-out profession names (test split); one pull.',
  defaults: { split: 'test' },
});
