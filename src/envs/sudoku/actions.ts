// Sudoku action text -> (row, col, digit), 1-based as the model writes them. The formats are RAGEN's.
// Expected failures are values: a parse returns {ok: false, reason} naming the formats.

/** A placement, 0-based row and column, digit 1..n. */
export interface Placement {
  row: number;
  col: number;
  digit: number;
}

export type ParsedPlacement = { ok: true; placement: Placement } | { ok: false; reason: string };

/** The formats we accept, for error messages. */
export const ACTION_FORMATS =
  "'place N at row R col C', 'place N at (R,C)', 'place N at R,C', 'N at R,C', '(R,C,N)' or 'R,C,N'";

const MAX_ACTION_CHARS = 100;

// Each pattern names which capture is the digit, row and column. None has nested quantifiers (no backtracking blow-up).
const PATTERNS: { re: RegExp; digit: number; row: number; col: number }[] = [
  { re: /^place\s+(\d+)\s+at\s+row\s+(\d+)\s*,?\s*(?:col|column)\s+(\d+)$/, digit: 1, row: 2, col: 3 },
  { re: /^place\s+(\d+)\s+at\s+\(\s*(\d+)\s*,\s*(\d+)\s*\)$/, digit: 1, row: 2, col: 3 },
  { re: /^(?:place\s+)?(\d+)\s+at\s+(\d+)\s*,\s*(\d+)$/, digit: 1, row: 2, col: 3 },
  { re: /^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$/, digit: 3, row: 1, col: 2 },
  { re: /^(\d+)\s*,\s*(\d+)\s*,\s*(\d+)$/, digit: 3, row: 1, col: 2 },
];

/** Parse a placement for a grid of side `n`. Case and surrounding whitespace are ignored; a final '.' is allowed. */
export function parsePlacement(text: string, n: number): ParsedPlacement {
  if (text.length > MAX_ACTION_CHARS)
    return {
      ok: false,
      reason: `the action is ${text.length} characters long; write one placement such as ${ACTION_FORMATS}`,
    };
  const s = text.trim().toLowerCase().replace(/\.$/, '');
  for (const p of PATTERNS) {
    const m = p.re.exec(s);
    if (!m) continue;
    const digit = Number(m[p.digit]),
      row = Number(m[p.row]),
      col = Number(m[p.col]);
    if (!(row >= 1 && row <= n)) return { ok: false, reason: `row ${m[p.row]} is outside 1..${n}` };
    if (!(col >= 1 && col <= n)) return { ok: false, reason: `column ${m[p.col]} is outside 1..${n}` };
    if (!(digit >= 1 && digit <= n)) return { ok: false, reason: `digit ${m[p.digit]} is outside 1..${n}` };
    return { ok: true, placement: { row: row - 1, col: col - 1, digit } };
  }
  return { ok: false, reason: `could not read a placement; use ${ACTION_FORMATS} (rows and columns count from 1)` };
}

/** The canonical text of a placement (what the solver emits). */
export function formatPlacement(p: Placement): string {
  return `place ${p.digit} at row ${p.row + 1} col ${p.col + 1}`;
}
