// 2048: registers the `game_2048` id (RAGEN's tag). No solver: the game has no practical optimal policy.
import { registerEnv } from '../../env/index.js';
import { Game2048Env, type Game2048Config, game2048Schema } from './game-2048-env.js';

export {
  Game2048Env,
  GAME_2048_INSTRUCTION,
  game2048Instruction,
  type Game2048Config,
  game2048Schema,
} from './game-2048-env.js';
export { Board2048, DIRECTIONS } from './board.js';

registerEnv<Game2048Config>('game_2048', {
  description: '2048 on a 4x4 board: slide Up/Right/Down/Left to merge tiles toward 2048 (log merge reward).',
  schema: game2048Schema,
  create: (config) => new Game2048Env(config),
  maxActionsPerEpisode: 700,
});
