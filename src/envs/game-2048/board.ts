// 2048 board logic on exponents (0 = empty, k = tile 2^k): slide-and-merge per direction, spawning, game over.
// Standard rules (each tile merges at most once per move, merges resolve from the edge the tiles move to).
import type { Rng } from '../../util/index.js';

/** The four moves in RAGEN's order: 0 Up, 1 Right, 2 Down, 3 Left. */
export const DIRECTIONS = ['Up', 'Right', 'Down', 'Left'] as const;

/** A square board of exponents, row-major. */
export class Board2048 {
  readonly cells: Uint8Array;
  /** lines[d][l * size + p]: the cell at position p of line l when moving in direction d (p = 0 at the far edge). */
  private readonly lines: Int32Array[];
  private readonly scratch: Uint8Array;

  constructor(readonly size: number) {
    this.cells = new Uint8Array(size * size);
    this.scratch = new Uint8Array(size);
    const s = size;
    this.lines = [0, 1, 2, 3].map((d) => {
      const t = new Int32Array(s * s);
      for (let l = 0; l < s; l++) {
        for (let p = 0; p < s; p++) {
          t[l * s + p] =
            d === 0 ? p * s + l : d === 1 ? l * s + (s - 1 - p) : d === 2 ? (s - 1 - p) * s + l : l * s + p;
        }
      }
      return t;
    });
  }

  /**
   * Slide every line toward direction `d` and merge equal neighbours once. Returns the merge score (the sum
   * of the new tiles' values) or -1 when nothing moved. With `apply = false` the board is left unchanged.
   */
  move(d: number, apply = true): number {
    const s = this.size;
    const line = this.lines[d]!;
    const cells = this.cells;
    const out = this.scratch;
    let score = 0;
    let moved = false;
    for (let l = 0; l < s; l++) {
      const base = l * s;
      let n = 0;
      let pending = 0; // exponent waiting for a possible merge partner
      for (let p = 0; p < s; p++) {
        const v = cells[line[base + p]!]!;
        if (v === 0) continue;
        if (pending === v) {
          out[n++] = v + 1;
          score += 2 ** (v + 1);
          pending = 0;
        } else {
          if (pending !== 0) out[n++] = pending;
          pending = v;
        }
      }
      if (pending !== 0) out[n++] = pending;
      for (let p = n; p < s; p++) out[p] = 0;
      for (let p = 0; p < s; p++) {
        const i = line[base + p]!;
        if (cells[i] !== out[p]) {
          moved = true;
          if (apply) cells[i] = out[p]!;
        }
      }
    }
    return moved ? score : -1;
  }

  /** Whether direction `d` would change the board. */
  canMove(d: number): boolean {
    return this.move(d, false) >= 0;
  }

  /** Put a 2 (probability `twoProb`) or a 4 on a uniformly chosen empty cell; false when the board is full. */
  spawn(rng: Rng, twoProb: number): boolean {
    let empty = 0;
    for (let i = 0; i < this.cells.length; i++) if (this.cells[i] === 0) empty++;
    if (empty === 0) return false;
    let k = rng.int(empty);
    const value = rng.random() < twoProb ? 1 : 2;
    for (let i = 0; i < this.cells.length; i++) {
      if (this.cells[i] === 0 && k-- === 0) {
        this.cells[i] = value;
        break;
      }
    }
    return true;
  }

  /** No empty cell and no two equal neighbours: no move changes the board. */
  isGameOver(): boolean {
    const s = this.size,
      c = this.cells;
    for (let r = 0; r < s; r++) {
      for (let col = 0; col < s; col++) {
        const v = c[r * s + col]!;
        if (v === 0) return false;
        if (col + 1 < s && c[r * s + col + 1] === v) return false;
        if (r + 1 < s && c[(r + 1) * s + col] === v) return false;
      }
    }
    return true;
  }

  /** The largest tile's value (0 on an empty board). */
  maxTile(): number {
    let m = 0;
    for (const v of this.cells) if (v > m) m = v;
    return m === 0 ? 0 : 2 ** m;
  }

  /** The tile value at cell i (0 = empty). */
  value(i: number): number {
    const v = this.cells[i]!;
    return v === 0 ? 0 : 2 ** v;
  }
}

/** log2 of a tile value, or -1 when it is not 0 or a power of two >= 2. */
export function tileExponent(value: number): number {
  if (value === 0) return 0;
  const e = Math.log2(value);
  return Number.isInteger(e) && e >= 1 && e < 256 ? e : -1;
}
