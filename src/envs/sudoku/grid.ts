// Sudoku grids: a bitmask backtracking solver (most-constrained cell first) that counts solutions up to a
// limit, a seeded full-grid generator, and a generator of puzzles with a unique solution.
import { Rng } from '../../util/index.js';

/** A Sudoku grid of side `n` (4, 9 or 16), row-major, 0 for an empty cell. */
export type Grid = Uint8Array;

/** The side of a box: 2 for 4x4, 3 for 9x9, 4 for 16x16. */
export function boxSide(n: number): number {
  const b = Math.round(Math.sqrt(n));
  if (b * b !== n || b < 2) throw new RangeError(`Sudoku grid size must be a square (4, 9, 16), got ${n}`);
  return b;
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/**
 * Count the solutions of `grid` (side `n`), stopping at `limit`. The first solution found is written to
 * `firstSolution` when given. With `rng`, candidate digits are tried in random order (to fill empty grids).
 * A grid whose clues already conflict has 0 solutions. `grid` itself is not modified.
 */
export function countSolutions(grid: Grid, n: number, limit: number, rng?: Rng, firstSolution?: Grid): number {
  const b = boxSide(n);
  const full = (1 << n) - 1;
  const rows = new Int32Array(n),
    cols = new Int32Array(n),
    boxes = new Int32Array(n);
  const boxOf = new Uint8Array(n * n);
  const cells = Uint8Array.from(grid);
  const empties: number[] = [];
  for (let i = 0; i < n * n; i++) {
    const r = (i / n) | 0,
      c = i % n;
    boxOf[i] = ((r / b) | 0) * b + ((c / b) | 0);
    const v = cells[i]!;
    if (v === 0) {
      empties.push(i);
      continue;
    }
    const bit = 1 << (v - 1);
    if ((rows[r]! | cols[c]! | boxes[boxOf[i]!]!) & bit) return 0;
    rows[r]! |= bit;
    cols[c]! |= bit;
    boxes[boxOf[i]!]! |= bit;
  }
  let count = 0;
  const digits = new Uint8Array(n);
  const dfs = (remaining: number): void => {
    if (remaining === 0) {
      if (count === 0 && firstSolution) firstSolution.set(cells);
      count++;
      return;
    }
    let bestK = -1,
      bestMask = 0,
      bestCount = n + 1;
    for (let k = 0; k < remaining; k++) {
      const i = empties[k]!;
      const mask = full & ~(rows[(i / n) | 0]! | cols[i % n]! | boxes[boxOf[i]!]!);
      const c = popcount(mask);
      if (c < bestCount) {
        bestK = k;
        bestMask = mask;
        bestCount = c;
        if (c <= 1) break;
      }
    }
    if (bestCount === 0) return;
    const i = empties[bestK]!;
    empties[bestK] = empties[remaining - 1]!;
    empties[remaining - 1] = i;
    const r = (i / n) | 0,
      c = i % n,
      bx = boxOf[i]!;
    let m = 0;
    for (let d = 0; d < n; d++) if (bestMask & (1 << d)) digits[m++] = d + 1;
    const order = Array.from(digits.subarray(0, m));
    if (rng) rng.shuffle(order);
    for (const v of order) {
      const bit = 1 << (v - 1);
      cells[i] = v;
      rows[r]! |= bit;
      cols[c]! |= bit;
      boxes[bx]! |= bit;
      dfs(remaining - 1);
      rows[r]! &= ~bit;
      cols[c]! &= ~bit;
      boxes[bx]! &= ~bit;
      cells[i] = 0;
      if (count >= limit) break;
    }
    empties[remaining - 1] = empties[bestK]!;
    empties[bestK] = i;
  };
  dfs(empties.length);
  return count;
}

/** A uniformly shuffled complete grid: backtracking over the empty grid with random digit order. */
export function randomFullGrid(n: number, rng: Rng): Grid {
  const out = new Uint8Array(n * n);
  const found = countSolutions(new Uint8Array(n * n), n, 1, rng, out);
  if (found !== 1) throw new Error(`Sudoku: could not fill an empty ${n}x${n} grid`);
  return out;
}

/** Fraction of cells removed per difficulty (RAGEN: easy 40%, medium 50%, hard 60%). */
export const HOLE_FRACTION = { easy: 0.4, medium: 0.5, hard: 0.6 } as const;
export type Difficulty = keyof typeof HOLE_FRACTION;

/** A puzzle and its unique solution. */
export interface Puzzle {
  n: number;
  puzzle: Grid;
  solution: Grid;
}

const MAX_GRIDS = 20;

/**
 * A puzzle with exactly one solution and `round(fraction * n^2)` empty cells. Cells of a random full grid are
 * visited in random order and emptied whenever the puzzle stays uniquely solvable. If a pass ends before the
 * target (a minimal puzzle with fewer holes), a new full grid is tried; after 20 grids the puzzle with the
 * most holes is kept (never reached at the default sizes and difficulties).
 */
export function generatePuzzle(n: number, difficulty: Difficulty, rng: Rng): Puzzle {
  const target = Math.round(HOLE_FRACTION[difficulty] * n * n);
  let best: Puzzle | undefined;
  let bestHoles = -1;
  for (let attempt = 0; attempt < MAX_GRIDS; attempt++) {
    const solution = randomFullGrid(n, rng);
    const puzzle = Uint8Array.from(solution);
    const order = rng.shuffle(Array.from({ length: n * n }, (_, i) => i));
    let holes = 0;
    for (const i of order) {
      if (holes >= target) break;
      const keep = puzzle[i]!;
      puzzle[i] = 0;
      if (countSolutions(puzzle, n, 2) === 1) holes++;
      else puzzle[i] = keep;
    }
    if (holes > bestHoles) {
      best = { n, puzzle, solution };
      bestHoles = holes;
    }
    if (holes >= target) break;
  }
  return best!;
}
