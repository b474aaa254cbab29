// FrozenLake: registers RAGEN's FrozenLake and CoordFrozenLake ids, VisualFrozenLake (text+image), and exports the env and its map helpers.
import { registerEnv } from '../../env/index.js';
import { FrozenLakeEnv, frozenLakeConfigSchema, type FrozenLakeConfig } from './frozen-lake-env.js';
import {
  VisualFrozenLakeEnv,
  visualFrozenLakeConfigSchema,
  visualFrozenLakeSpace,
  type VisualFrozenLakeConfig,
} from './visual.js';

export {
  FrozenLakeEnv,
  frozenLakeConfigSchema,
  type FrozenLakeConfig,
  type FrozenLakeConfigInput,
} from './frozen-lake-env.js';
export {
  VisualFrozenLakeEnv,
  drawLake,
  visualFrozenLakeConfigSchema,
  visualFrozenLakeSpace,
  LAKE_COLOURS,
  type VisualFrozenLakeConfig,
  type VisualFrozenLakeConfigInput,
} from './visual.js';
export { generateLake, parseLake, renderLake, shortestPath, type LakeMap } from './lake.js';

const base = {
  schema: frozenLakeConfigSchema,
  create: (config: FrozenLakeConfig) => new FrozenLakeEnv(config),
  maxActionsPerEpisode: 10,
  /** The shortest safe path; optimal when moves cannot slip (successRate 1), a plan otherwise. */
  solve(config: FrozenLakeConfig, seed: number): string[] | undefined {
    const env = new FrozenLakeEnv(config);
    env.reset({ seed });
    return env.solution();
  },
  solverMayFail: (config: FrozenLakeConfig) => config.isSlippery && config.successRate < 1,
};

registerEnv<FrozenLakeConfig>('FrozenLake', {
  ...base,
  description:
    'FrozenLake, random 4x4 lake, slippery (moves go the intended way with probability 0.8), grid observation.',
  defaults: { size: 4, p: 0.9, successRate: 0.8, observationFormat: 'grid' },
});

registerEnv<FrozenLakeConfig>('CoordFrozenLake', {
  ...base,
  description: 'FrozenLake, random 4x4 lake, deterministic moves, observation as coordinates plus the grid.',
  defaults: { size: 4, p: 0.9, successRate: 1, observationFormat: 'grid_coord' },
});

registerEnv<VisualFrozenLakeConfig>('VisualFrozenLake', {
  description:
    'FrozenLake, random 4x4 lake, slippery (probability 0.8), grid text plus an RGB image (16 pixels per cell).',
  schema: visualFrozenLakeConfigSchema,
  create: (config: VisualFrozenLakeConfig) => new VisualFrozenLakeEnv(config),
  observationSpace: visualFrozenLakeSpace,
  maxActionsPerEpisode: 10,
  defaults: { size: 4, p: 0.9, successRate: 0.8, observationFormat: 'grid', observation: 'text+image' },
  solve(config: VisualFrozenLakeConfig, seed: number): string[] | undefined {
    const env = new VisualFrozenLakeEnv(config);
    env.reset({ seed });
    return env.solution();
  },
  solverMayFail: (config: VisualFrozenLakeConfig) => config.isSlippery && config.successRate < 1,
});
