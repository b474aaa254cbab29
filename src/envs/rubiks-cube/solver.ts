// An optimal 2x2 solver (fewest quarter turns): bidirectional breadth-first search over U, R, F turns.
// Turning L, D or B equals turning R, U or F plus a whole-cube rotation, and "solved" ignores the cube's
// orientation, so keeping the down-back-left corner fixed loses no optimality.
import { FACES, MOVE_NAMES, applyMove, inverseMove, isSolved, stickerAt } from './cube.js';

/** The moves that leave the down-back-left corner in place. */
const URF = ['U', "U'", 'R', "R'", 'F', "F'"].map((n) => (MOVE_NAMES as readonly string[]).indexOf(n));
/** God's number of the 2x2 in the quarter-turn metric: no position needs more. */
export const MAX_QUARTER_TURNS = 14;

const DBL = {
  D: stickerAt([-1, -1, -1], [0, -1, 0]),
  L: stickerAt([-1, -1, -1], [-1, 0, 0]),
  B: stickerAt([-1, -1, -1], [0, 0, -1]),
};
// Colours c and OPPOSITE[c] sit on opposite faces of a solved cube (U-D, L-R, F-B).
const OPPOSITE = [5, 3, 4, 1, 2, 0];

/** The solved cube that shares `state`'s down-back-left corner: the goal reachable with U, R and F turns. */
export function cornerFixedGoal(state: Uint8Array): Uint8Array {
  const colour: Record<(typeof FACES)[number], number> = {
    D: state[DBL.D]!,
    L: state[DBL.L]!,
    B: state[DBL.B]!,
    U: OPPOSITE[state[DBL.D]!]!,
    R: OPPOSITE[state[DBL.L]!]!,
    F: OPPOSITE[state[DBL.B]!]!,
  };
  return Uint8Array.from({ length: 24 }, (_, i) => colour[FACES[(i / 4) | 0]!]);
}

const keyOf = (s: Uint8Array): string => String.fromCharCode(...s);

/**
 * The shortest move sequence (indices into MOVE_NAMES) that solves `state`, or undefined when the state is
 * not a legal cube (no sequence of at most 14 quarter turns reaches the goal).
 */
export function solveCube(state: Uint8Array): number[] | undefined {
  if (isSolved(state)) return [];
  const goal = cornerFixedGoal(state);
  const fwd = new Map<string, [string, number]>([[keyOf(state), ['', -1]]]); // key -> [previous key, move applied to previous]
  const bwd = new Map<string, [string, number]>([[keyOf(goal), ['', -1]]]); // key -> [next key, move taking key to next]
  let fwdFrontier: Uint8Array[] = [Uint8Array.from(state)];
  let bwdFrontier: Uint8Array[] = [goal];
  const scratch = new Uint8Array(24);
  for (let depth = 0; depth < MAX_QUARTER_TURNS; depth++) {
    const forward = fwdFrontier.length <= bwdFrontier.length;
    const frontier = forward ? fwdFrontier : bwdFrontier;
    const mine = forward ? fwd : bwd;
    const other = forward ? bwd : fwd;
    const next: Uint8Array[] = [];
    for (const s of frontier) {
      const k = keyOf(s);
      for (const m of URF) {
        const t = Uint8Array.from(s);
        applyMove(t, m, scratch);
        const tk = keyOf(t);
        if (mine.has(tk)) continue;
        // Forward: t = m(s), so t's parent is s via m. Backward: t = m(s), so from t the move m' leads to s.
        mine.set(tk, forward ? [k, m] : [k, inverseMove(m)]);
        if (other.has(tk)) return joinPaths(tk, fwd, bwd);
        next.push(t);
      }
    }
    if (forward) fwdFrontier = next;
    else bwdFrontier = next;
    if (next.length === 0) return undefined;
  }
  return undefined;
}

function joinPaths(meet: string, fwd: Map<string, [string, number]>, bwd: Map<string, [string, number]>): number[] {
  const head: number[] = [];
  for (let k = meet; fwd.get(k)![1] >= 0; k = fwd.get(k)![0]) head.push(fwd.get(k)![1]);
  head.reverse();
  for (let k = meet; bwd.get(k)![1] >= 0; k = bwd.get(k)![0]) head.push(bwd.get(k)![1]);
  return head;
}
