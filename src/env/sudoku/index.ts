// Sudoku: registers `SimpleSudoku` (4x4, easy) and `MediumSudoku` (9x9, medium) with their solver.
import { z } from 'zod';
import { registerEnv } from '../registry.js';
import { SudokuEnv, solveSudoku, sudokuPuzzle, type SudokuConfig } from './sudoku-env.js';

export { SudokuEnv, solveSudoku, sudokuPuzzle, type SudokuConfig } from './sudoku-env.js';
export { countSolutions, generatePuzzle, randomFullGrid, type Puzzle, type Difficulty } from './grid.js';
export { parsePlacement, formatPlacement, ACTION_FORMATS, type Placement } from './actions.js';

/** Sudoku's config: see {@link SudokuConfig} for each field's meaning. */
export const sudokuSchema = z.object({
  gridSize: z.union([z.literal(4), z.literal(9), z.literal(16)]).default(9),
  difficulty: z.enum(['easy', 'medium', 'hard']).default('easy'),
  renderFormat: z.enum(['with_feedback', 'detailed', 'simple']).default('with_feedback'),
  showConflicts: z.boolean().default(true),
  showValidNumbers: z.boolean().default(true),
  maxSteps: z.number().int().min(1).default(81),
  penalty: z.number().default(-0.1),
  correctReward: z.number().default(1.0),
  fitReward: z.number().default(0.5),
  solvedBonus: z.number().default(10),
});

const common = {
  schema: sudokuSchema,
  create: (config: SudokuConfig) => new SudokuEnv(config),
  solve: (config: SudokuConfig, seed: number) => solveSudoku(sudokuPuzzle(config, seed)),
};

// RAGEN's SimpleSudoku is 9x9 easy with a 20-action cap (32 empty cells: unsolvable within the cap); ours is 4x4.
registerEnv<SudokuConfig>('SimpleSudoku', {
  ...common,
  description: 'Sudoku 4x4, easy (6 empty cells), unique solution; one placement per action.',
  defaults: { gridSize: 4, difficulty: 'easy' },
  maxActionsPerEpisode: 20,
});

// RAGEN caps MediumSudoku at 30 actions, fewer than its 41 empty cells; we allow a full grid's worth.
registerEnv<SudokuConfig>('MediumSudoku', {
  ...common,
  description: 'Sudoku 9x9, medium (41 empty cells), unique solution; one placement per action.',
  defaults: { gridSize: 9, difficulty: 'medium' },
  maxActionsPerEpisode: 81,
});
