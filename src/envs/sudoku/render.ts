// Sudoku text rendering: RAGEN's `with_feedback` view (clues in [brackets], *conflicts*, feedback, candidates)
// and its plain `simple` grid.
import { boxSide, type Grid } from './grid.js';

/** What the renderer needs to know about a game. */
export interface SudokuView {
  n: number;
  board: Grid;
  /** 1 where the cell is a clue of the puzzle. */
  given: Uint8Array;
  /** 1 where the cell's digit repeats in its row, column or box. */
  conflict: Uint8Array;
  conflicts: number;
  empty: number;
  steps: number;
  maxSteps: number;
  difficulty: string;
  feedback: string;
}

export const SUDOKU_LEGEND =
  '[N] = given clue (cannot be changed), N = a digit you placed (can be overwritten), *N* = a digit that repeats in ' +
  'its row, column or box, . = empty cell. Rows and columns are numbered from 1, top-left is row 1 col 1.';

/** Most empty cells for which `with_feedback` lists the digits still possible. */
export const MAX_CANDIDATE_CELLS = 10;

const UNITS = new Map<number, Int32Array>();

/** The cells of every row, column and box of an n x n grid: unit u holds units[u * n .. u * n + n). */
function unitsOf(n: number): Int32Array {
  let units = UNITS.get(n);
  if (units) return units;
  const b = boxSide(n);
  units = new Int32Array(3 * n * n);
  for (let u = 0; u < n; u++) {
    const r0 = ((u / b) | 0) * b,
      c0 = (u % b) * b;
    for (let k = 0; k < n; k++) {
      units[u * n + k] = u * n + k; // row u
      units[(n + u) * n + k] = k * n + u; // column u
      units[(2 * n + u) * n + k] = (r0 + ((k / b) | 0)) * n + c0 + (k % b); // box u
    }
  }
  UNITS.set(n, units);
  return units;
}

/** Mark cells whose digit repeats in a row, column or box; returns how many cells are marked. */
export function markConflicts(board: Grid, n: number, out: Uint8Array): number {
  const units = unitsOf(n);
  out.fill(0);
  const first = new Int16Array(n + 1); // first cell + 1 holding each digit in the current unit, 0 = none
  for (let u = 0; u < 3 * n; u++) {
    first.fill(0);
    for (let k = 0; k < n; k++) {
      const i = units[u * n + k]!;
      const v = board[i]!;
      if (v === 0) continue;
      if (first[v]! > 0) {
        out[i] = 1;
        out[first[v]! - 1] = 1;
      } else first[v] = i + 1;
    }
  }
  let count = 0;
  for (let i = 0; i < n * n; i++) count += out[i]!;
  return count;
}

/** The digits that fit cell `i` given its row, column and box. */
export function candidates(board: Grid, n: number, i: number): number[] {
  const b = boxSide(n);
  const r = (i / n) | 0,
    c = i % n;
  const used = new Uint8Array(n + 1);
  for (let k = 0; k < n; k++) {
    used[board[r * n + k]!] = 1;
    used[board[k * n + c]!] = 1;
  }
  const r0 = ((r / b) | 0) * b,
    c0 = ((c / b) | 0) * b;
  for (let dr = 0; dr < b; dr++) for (let dc = 0; dc < b; dc++) used[board[(r0 + dr) * n + c0 + dc]!] = 1;
  const out: number[] = [];
  for (let d = 1; d <= n; d++) if (!used[d]) out.push(d);
  return out;
}

/** The plain grid: digits and '.', one row per line, boxes separated by '|'. */
export function renderSimple(v: SudokuView): string {
  const b = boxSide(v.n);
  const w = String(v.n).length;
  const lines: string[] = [];
  for (let r = 0; r < v.n; r++) {
    let line = '';
    for (let c = 0; c < v.n; c++) {
      if (c > 0) line += c % b === 0 ? ' | ' : ' ';
      const d = v.board[r * v.n + c]!;
      line += (d === 0 ? '.' : String(d)).padStart(w);
    }
    lines.push(line);
  }
  return lines.join('\n');
}

/** The feedback view: header, annotated grid, last-action feedback, conflicts, candidates near the end. */
export function renderWithFeedback(v: SudokuView, showConflicts: boolean, showValidNumbers: boolean): string {
  const { n } = v;
  const b = boxSide(n);
  const w = String(n).length;
  const cellW = w + 2;
  const lines: string[] = [];
  const total = n * n;
  lines.push(`Sudoku ${n}x${n} (${v.difficulty}). Step ${v.steps}/${v.maxSteps}. Filled ${total - v.empty}/${total}.`);
  let header = ' '.repeat(w + 1);
  for (let c = 0; c < n; c++) {
    if (c > 0 && c % b === 0) header += '|';
    header += String(c + 1)
      .padStart(w)
      .padStart(w + 1)
      .padEnd(cellW);
  }
  lines.push(header.trimEnd());
  const rule = ' '.repeat(w + 1) + Array.from({ length: b }, () => '-'.repeat(cellW * b)).join('+');
  for (let r = 0; r < n; r++) {
    if (r > 0 && r % b === 0) lines.push(rule);
    let line = String(r + 1).padStart(w) + ' ';
    for (let c = 0; c < n; c++) {
      if (c > 0 && c % b === 0) line += '|';
      const i = r * n + c;
      const d = v.board[i]!;
      const s = String(d).padStart(w);
      line +=
        d === 0
          ? ' ' + '.'.padStart(w) + ' '
          : v.given[i]
            ? `[${s}]`
            : showConflicts && v.conflict[i]
              ? `*${s}*`
              : ` ${s} `;
    }
    lines.push(line.trimEnd());
  }
  if (v.feedback) lines.push(v.feedback);
  if (showConflicts && v.conflicts > 0) {
    const cells: string[] = [];
    for (let i = 0; i < total; i++) if (v.conflict[i]) cells.push(`(${((i / n) | 0) + 1},${(i % n) + 1})`);
    lines.push(`Conflicting cells (row,col): ${cells.join(' ')}`);
  }
  if (showValidNumbers && v.empty > 0 && v.empty <= MAX_CANDIDATE_CELLS) {
    const parts: string[] = [];
    for (let i = 0; i < total; i++) {
      if (v.board[i] !== 0) continue;
      const cand = candidates(v.board, n, i);
      parts.push(`(${((i / n) | 0) + 1},${(i % n) + 1}): ${cand.length ? cand.join(' ') : 'none'}`);
    }
    lines.push(`Possible digits for the empty cells (row,col): ${parts.join('; ')}`);
  }
  return lines.join('\n');
}
