// Sudoku: registers `SimpleSudoku` (4x4, easy) and `MediumSudoku` (9x9, medium) with their solver.
import { registerEnv } from '../../env/index.js';
import { SudokuEnv, solveSudoku, sudokuPuzzle, type SudokuConfig, sudokuSchema } from './sudoku-env.js';

export { SudokuEnv, solveSudoku, sudokuPuzzle, type SudokuConfig, sudokuSchema } from './sudoku-env.js';
export { countSolutions, generatePuzzle, randomFullGrid, type Puzzle, type Difficulty } from './grid.js';
export { parsePlacement, formatPlacement, ACTION_FORMATS, type Placement } from './actions.js';

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
