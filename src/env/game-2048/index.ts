// 2048: registers the `game_2048` id (RAGEN's tag). No solver: the game has no practical optimal policy.
import { z } from 'zod';
import { registerEnv } from '../registry.js';
import { Game2048Env, type Game2048Config } from './game-2048-env.js';

export { Game2048Env, GAME_2048_INSTRUCTION, game2048Instruction, type Game2048Config } from './game-2048-env.js';
export { Board2048, DIRECTIONS } from './board.js';

/** 2048's config: see {@link Game2048Config} for each field's meaning. */
export const game2048Schema = z.object({
  size: z.number().int().min(2).max(8).default(4),
  twoProb: z.number().min(0).max(1).default(0.9),
  useLogReward: z.boolean().default(true),
  invalidMovePenalty: z.number().default(-0.1),
  targetTile: z.number().int().min(4).default(2048),
});

registerEnv<Game2048Config>('game_2048', {
  description: '2048 on a 4x4 board: slide Up/Right/Down/Left to merge tiles toward 2048 (log merge reward).',
  schema: game2048Schema,
  create: (config) => new Game2048Env(config),
  maxActionsPerEpisode: 700,
});
