// The Sudoku environment: fill a seeded puzzle with a unique solution, one placement per action.
// Follows RAGEN's ragen/env/sudoku (formats, rewards, render), adding the missing uniqueness check.
import { z } from 'zod';
import { ResetNeededError, Rng } from '../../util/index.js';
import {
  checkResetOptions,
  invalidInfo,
  type Env,
  type EnvInfo,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';
import { formatPlacement, parsePlacement } from './actions.js';
import { countSolutions, generatePuzzle, type Puzzle } from './grid.js';
import { SUDOKU_LEGEND, markConflicts, renderSimple, renderWithFeedback, type SudokuView } from './render.js';

/** Sudoku's configuration (RAGEN's SudokuEnvConfig; keys in camelCase). */
export const sudokuSchema = z.object({
  /** Side of the grid: 4, 9 or 16. RAGEN `grid_size`. @default 9 */
  gridSize: z.union([z.literal(4), z.literal(9), z.literal(16)]).default(9),
  /** Share of cells left empty: easy 40%, medium 50%, hard 60%. @default 'easy' */
  difficulty: z.enum(['easy', 'medium', 'hard']).default('easy'),
  /**
   * `with_feedback` (alias `detailed`): annotated grid with feedback; `simple`: digits only. @default 'with_feedback'
   */
  renderFormat: z.enum(['with_feedback', 'detailed', 'simple']).default('with_feedback'),
  /** Mark repeated digits as *N* and list the conflicting cells. @default true */
  showConflicts: z.boolean().default(true),
  /** List the digits still possible for each empty cell once at most 10 remain. @default true */
  showValidNumbers: z.boolean().default(true),
  /** Placements after which the episode is truncated. @default 81 */
  maxSteps: z.number().int().min(1).default(81),
  /** Reward of an unreadable action, a clue cell or a placement that repeats a digit. @default -0.1 */
  penalty: z.number().default(-0.1),
  /** Reward for filling an empty cell with its solution digit. @default 1.0 */
  correctReward: z.number().default(1.0),
  /** Reward for filling an empty cell with a digit that fits but is not the solution's. @default 0.5 */
  fitReward: z.number().default(0.5),
  /** Bonus when the grid is solved. @default 10 */
  solvedBonus: z.number().default(10),
});

export type SudokuConfig = z.infer<typeof sudokuSchema>;

/** The puzzle `reset({seed})` poses for a config. */
export function sudokuPuzzle(config: SudokuConfig, seed: number): Puzzle {
  return generatePuzzle(config.gridSize, config.difficulty, new Rng(seed));
}

/** The solver: the unique solution's digits for the empty cells, row-major, as actions. */
export function solveSudoku(puzzle: Puzzle): string[] {
  const actions: string[] = [];
  const { n } = puzzle;
  for (let i = 0; i < n * n; i++) {
    if (puzzle.puzzle[i] === 0)
      actions.push(formatPlacement({ row: (i / n) | 0, col: i % n, digit: puzzle.solution[i]! }));
  }
  return actions;
}

function instruction(n: number): string {
  const b = Math.round(Math.sqrt(n));
  return (
    `You are solving a Sudoku puzzle. Fill in the grid so that every row, column, and ${b}x${b} box contains the numbers 1-${n} without repetition.\n` +
    'Initial cells are shown in [brackets] and cannot be modified. Empty cells are shown as dots (.).\n' +
    'Place numbers one at a time using the format: <answer>place 5 at row 2 col 3</answer> or <answer>2,3,5</answer>\n' +
    'The environment will provide feedback on valid/invalid moves and show conflicts if any occur.'
  );
}

/**
 * Sudoku (multi turn).
 *
 * ## Description
 * Fill an n x n grid (4, 9 or 16) so that each row, column and box holds 1..n once. Puzzles are generated
 * from the seed and have exactly one solution (RAGEN claimed it but did not check).
 *
 * ## Action Space
 * Free text, one placement, 1-based: `place N at row R col C`, `place N at (R,C)`, `place N at R,C`,
 * `N at R,C`, `(R,C,N)` or `R,C,N` (case-insensitive).
 *
 * ## Observation
 * `with_feedback`: a header with step and progress, the grid with `[N]` clues, `N` placed digits, `*N*`
 * repeated digits and `.` empty cells, the last action's feedback, the conflicting cells, and the digits
 * still possible per empty cell once at most 10 are empty. `simple`: the digits only.
 *
 * ## Starting State
 * A random full grid; cells emptied in random order while the solution stays unique, up to 40/50/60% of
 * the cells for easy/medium/hard. `mode` does not change the puzzle: seeds do.
 *
 * ## Rewards
 * Invalid (unreadable text, an index out of range, a clue cell): `penalty` (-0.1), board unchanged.
 * Filling an empty cell: `correctReward` (+1) with the solution's digit, `fitReward` (+0.5) with another digit
 * that repeats nothing, `penalty` (-0.1) with a digit that repeats one in its row, column or box (the digit
 * is placed and shown as `*N*`, as in RAGEN). Overwriting your own digit: 0, or `penalty` if it repeats
 * one; placing the digit a cell already holds is ineffective (0). Each cell thus earns its fill reward once
 * (RAGEN re-paid every overwrite, so rewriting one cell farmed reward). `solvedBonus` (+10) when solved.
 *
 * ## Episode End
 * Terminated when the grid is full with no repeated digit. Truncated after `maxSteps` valid actions
 * (invalid ones do not count: they leave the state unchanged).
 *
 * ## Info
 * `success` (solved), `actionIsValid`, `actionIsEffective` (the board changed), `reason`, and the metrics
 * `emptyCells` and `conflicts`.
 *
 * ## Arguments
 * See {@link SudokuConfig}.
 */
export class SudokuEnv implements Env {
  readonly instruction: string;
  readonly legend = SUDOKU_LEGEND;
  readonly actionNames = undefined;
  private readonly n: number;
  private puzzle: Puzzle | undefined;
  private board = new Uint8Array(0);
  private given = new Uint8Array(0);
  private conflict = new Uint8Array(0);
  private conflicts = 0;
  private empty = 0;
  private steps = 0;
  private done = false;
  private feedback = '';
  private observation = '';

  constructor(readonly config: SudokuConfig) {
    this.n = config.gridSize;
    this.instruction = instruction(this.n);
  }

  /**
   * `options.puzzle` (n*n digits, 0 or '.' for empty; a string for n <= 9 or a number array) poses a hand-built puzzle.
   */
  reset({ seed, options }: ResetOptions): ResetResult {
    checkResetOptions('Sudoku', options, ['puzzle']);
    const n = this.n;
    this.puzzle = options?.puzzle !== undefined ? this.handBuilt(options.puzzle) : sudokuPuzzle(this.config, seed);
    this.board = Uint8Array.from(this.puzzle.puzzle);
    this.given = this.board.map((d) => (d ? 1 : 0));
    this.conflict = new Uint8Array(n * n);
    this.conflicts = markConflicts(this.board, n, this.conflict);
    this.empty = this.board.reduce((k, d) => k + (d === 0 ? 1 : 0), 0);
    this.steps = 0;
    this.done = false;
    this.feedback = '';
    this.observation = this.draw();
    return { observation: this.observation, info: this.info(false, true, false) };
  }

  step(action: string): StepResult {
    if (this.puzzle === undefined)
      throw new ResetNeededError('Sudoku.step() called before reset(); call reset({seed}) first.');
    if (this.done)
      throw new ResetNeededError(
        'Sudoku.step() called after the episode ended; call reset({seed}) to start a new one.',
      );
    const { n, config } = this;
    const parsed = parsePlacement(action, n);
    if (!parsed.ok) return this.invalid(parsed.reason);
    const { row, col, digit } = parsed.placement;
    const i = row * n + col;
    const where = `row ${row + 1} col ${col + 1}`;
    if (this.given[i]) return this.invalid(`${where} is a given clue (${this.board[i]}) and cannot be changed`);

    const before = this.board[i]!;
    this.steps++;
    let reward = 0;
    let effective = true;
    if (before === digit) {
      effective = false;
      this.feedback = `Row ${row + 1} col ${col + 1} already holds ${digit}; nothing changed.`;
    } else {
      this.board[i] = digit;
      if (before === 0) this.empty--;
      this.conflicts = markConflicts(this.board, n, this.conflict);
      const repeats = this.conflict[i] === 1;
      if (repeats) reward = config.penalty;
      else if (before === 0) reward = digit === this.puzzle.solution[i] ? config.correctReward : config.fitReward;
      this.feedback = `Placed ${digit} at ${where}${repeats ? `: ${digit} repeats in its row, column or box` : ''}.`;
    }
    const solved = this.empty === 0 && this.conflicts === 0;
    if (solved) {
      reward += config.solvedBonus;
      this.feedback += ' The puzzle is solved!';
    }
    this.done = solved || this.steps >= config.maxSteps;
    this.observation = this.draw();
    return {
      observation: this.observation,
      reward,
      terminated: solved,
      truncated: !solved && this.steps >= config.maxSteps,
      info: this.info(solved, true, effective),
    };
  }

  render(): string {
    return this.observation;
  }

  close(): void {}

  /** An invalid action changes no state: its feedback shows in this step's observation only, not in render(). */
  private invalid(reason: string): StepResult {
    const kept = this.feedback;
    this.feedback = `Invalid action: ${reason}.`;
    const observation = this.draw();
    this.feedback = kept;
    const info = { ...invalidInfo(reason), emptyCells: this.empty, conflicts: this.conflicts };
    return { observation, reward: this.config.penalty, terminated: false, truncated: false, info };
  }

  private info(success: boolean, valid: boolean, effective: boolean): EnvInfo {
    return {
      success,
      actionIsValid: valid,
      actionIsEffective: effective,
      emptyCells: this.empty,
      conflicts: this.conflicts,
    };
  }

  private draw(): string {
    const view: SudokuView = {
      n: this.n,
      board: this.board,
      given: this.given,
      conflict: this.conflict,
      conflicts: this.conflicts,
      empty: this.empty,
      steps: this.steps,
      maxSteps: this.config.maxSteps,
      difficulty: this.config.difficulty,
      feedback: this.feedback,
    };
    return this.config.renderFormat === 'simple'
      ? renderSimple(view)
      : renderWithFeedback(view, this.config.showConflicts, this.config.showValidNumbers);
  }

  private handBuilt(spec: unknown): Puzzle {
    const n = this.n;
    const digits =
      typeof spec === 'string' ? [...spec.replace(/\s/g, '')].map((ch) => (ch === '.' ? 0 : Number(ch))) : spec;
    if (
      !Array.isArray(digits) ||
      digits.length !== n * n ||
      !digits.every((d) => Number.isInteger(d) && d >= 0 && d <= n)
    ) {
      throw new TypeError(
        `Sudoku reset options.puzzle must hold ${n * n} digits 0..${n} (0 or '.' = empty), got ${JSON.stringify(spec)}`,
      );
    }
    const puzzle = Uint8Array.from(digits as number[]);
    const solution = new Uint8Array(n * n);
    if (countSolutions(puzzle, n, 1, undefined, solution) === 0)
      throw new TypeError(`Sudoku reset options.puzzle has no solution: ${JSON.stringify(spec)}`);
    return { n, puzzle, solution };
  }
}
