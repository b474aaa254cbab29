// Sokoban: registers RAGEN's four text Sokoban ids and VisualSimpleSokoban (text+image) and exports the env, its generator and its solver.
import { registerEnv } from '../../env/index.js';
import { sokobanConfigSchema, type SokobanConfig } from './config.js';
import { SokobanEnv } from './sokoban-env.js';
import { VisualSokobanEnv, visualSokobanConfigSchema, visualSokobanSpace, type VisualSokobanConfig } from './visual.js';

export { SokobanEnv } from './sokoban-env.js';
export { SokobanGenerator, type GenerateOptions, type GeneratedRoom } from './generate.js';
export { solveSokoban } from './solve.js';
export { renderObservation, SokobanRenderer, type ObservationFormat } from './render.js';
export { parseGrid, DEFAULT_VOCAB, type SokobanVocab, type SokobanRoom, type SokobanLayout } from './room.js';
export {
  VisualSokobanEnv,
  drawSokoban,
  visualSokobanConfigSchema,
  visualSokobanSpace,
  SOKOBAN_COLOURS,
  type VisualSokobanConfig,
  type VisualSokobanConfigInput,
} from './visual.js';
export { sokobanConfigSchema, type SokobanConfig, type SokobanConfigInput } from './config.js';

const base = {
  schema: sokobanConfigSchema,
  create: (config: SokobanConfig) => new SokobanEnv(config),
  // searchDepth is the exact optimal solution length here (reverse BFS), so every id caps it at the
  // 10-action episode budget: an episode that cannot be solved within its budget teaches nothing.
  maxActionsPerEpisode: 10,
  solve(config: SokobanConfig, seed: number): string[] | undefined {
    const env = new SokobanEnv(config);
    env.reset({ seed });
    return env.solution();
  },
};

registerEnv<SokobanConfig>('SimpleSokoban', {
  ...base,
  description: 'Sokoban, 6x6 room, 1 box, solvable in at most 10 moves, grid observation.',
  defaults: { dimRoom: [6, 6], numBoxes: 1, searchDepth: 10, observationFormat: 'grid' },
});

registerEnv<SokobanConfig>('LargerSokoban', {
  ...base,
  description: 'Sokoban, 8x8 room, 2 boxes, solvable in at most 10 moves, grid observation.',
  defaults: { dimRoom: [8, 8], numBoxes: 2, searchDepth: 10, observationFormat: 'grid' },
});

registerEnv<SokobanConfig>('SokobanDifferentGridVocab', {
  ...base,
  description: 'Sokoban, 6x6 room, 1 box, grid drawn with other symbols (W . G C B A @).',
  defaults: {
    dimRoom: [6, 6],
    numBoxes: 1,
    searchDepth: 10,
    observationFormat: 'grid',
    gridVocab: { wall: 'W', floor: '.', target: 'G', boxOnTarget: 'C', box: 'B', player: 'A', playerOnTarget: '@' },
  },
});

registerEnv<SokobanConfig>('CoordSokoban', {
  ...base,
  description: 'Sokoban, 6x6 room, 1 box, solvable in at most 10 moves, coordinates plus the grid.',
  defaults: { dimRoom: [6, 6], numBoxes: 1, searchDepth: 10, observationFormat: 'grid_coord' },
});

registerEnv<VisualSokobanConfig>('VisualSimpleSokoban', {
  description:
    'Sokoban, 6x6 room, 1 box, solvable in at most 10 moves, grid text plus an RGB image (16 pixels per cell).',
  schema: visualSokobanConfigSchema,
  create: (config: VisualSokobanConfig) => new VisualSokobanEnv(config),
  observationSpace: visualSokobanSpace,
  maxActionsPerEpisode: 10,
  defaults: { dimRoom: [6, 6], numBoxes: 1, searchDepth: 10, observationFormat: 'grid', observation: 'text+image' },
  solve(config: VisualSokobanConfig, seed: number): string[] | undefined {
    const env = new VisualSokobanEnv(config);
    env.reset({ seed });
    return env.solution();
  },
});
