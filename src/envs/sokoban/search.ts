// State-space search for Sokoban: rooms as graphs of floor cells, (player, boxes) states packed into one
// number, and the visited table shared by the generator's reverse breadth-first search and the solver.
import { ConfigError } from '../../util/index.js';
import { TARGET, WALL, type SokobanLayout } from './room.js';

/** Actions in our order: Up, Down, Left, Right. The opposite of direction d is d ^ 1. */
export const ACTION_NAMES = ['Up', 'Down', 'Left', 'Right'] as const;

/** Padded-index offsets of the four directions for a grid of the given padded width. */
export function directionDeltas(width: number): Int32Array<ArrayBuffer> {
  return Int32Array.from([-width, width, -1, 1]);
}

/** The floor cells of a layout numbered 0..size-1, with each one's floor neighbour per direction. */
export class FloorGraph {
  /** Number of floor (non-wall) cells. */
  readonly size: number;
  /** Floor number -> padded index. */
  readonly cellOf: Int32Array;
  /** Padded index -> floor number, or -1 for walls. */
  readonly floorOf: Int32Array;
  /** next[f * 4 + d]: the floor neighbour of f in direction d, or -1 when it is a wall. */
  readonly next: Int32Array;
  /** 1 where the floor cell is a target. */
  readonly isTarget: Uint8Array;

  constructor(readonly layout: SokobanLayout) {
    const { statics, width } = layout;
    const cells: number[] = [];
    const floorOf = new Int32Array(statics.length).fill(-1);
    for (let i = 0; i < statics.length; i++) {
      if (!(statics[i]! & WALL)) {
        floorOf[i] = cells.length;
        cells.push(i);
      }
    }
    this.size = cells.length;
    this.cellOf = Int32Array.from(cells);
    this.floorOf = floorOf;
    this.next = new Int32Array(cells.length * 4);
    this.isTarget = new Uint8Array(cells.length);
    const delta = directionDeltas(width);
    for (let f = 0; f < cells.length; f++) {
      this.isTarget[f] = statics[cells[f]!]! & TARGET ? 1 : 0;
      for (let d = 0; d < 4; d++) this.next[f * 4 + d] = floorOf[cells[f]! + delta[d]!]!;
    }
  }
}

/**
 * Packs (player, boxes) into one integer: player + F * (b0 + F * (b1 + ...)) with the box floor
 * numbers sorted ascending, F the number of floor cells. Exact while F^(boxes+1) <= 2^53.
 */
export class StateCodec {
  /** Number of distinct codes, F^(boxes + 1). */
  readonly capacity: number;

  constructor(
    readonly floorCells: number,
    readonly numBoxes: number,
  ) {
    this.capacity = floorCells ** (numBoxes + 1);
    if (!(this.capacity <= Number.MAX_SAFE_INTEGER)) {
      throw new ConfigError(
        `Sokoban search cannot index ${numBoxes} boxes on ${floorCells} floor cells; use fewer boxes or a smaller dimRoom.`,
      );
    }
  }

  /** The code of sorted box floor numbers (the part above the player). */
  encodeBoxes(boxes: Int32Array): number {
    let code = 0;
    for (let i = boxes.length - 1; i >= 0; i--) code = code * this.floorCells + boxes[i]!;
    return code;
  }

  /** Writes the sorted box floor numbers of `boxCode` into `out`. */
  decodeBoxes(boxCode: number, out: Int32Array): void {
    const F = this.floorCells;
    for (let i = 0; i < out.length; i++) {
      const b = boxCode % F;
      out[i] = b;
      boxCode = (boxCode - b) / F;
    }
  }
}

/** Replace `from` by `to` in the sorted array `boxes` (in place) and keep it sorted. */
export function moveSortedBox(boxes: Int32Array, from: number, to: number): void {
  let i = boxes.indexOf(from);
  boxes[i] = to;
  while (i > 0 && boxes[i - 1]! > boxes[i]!) {
    boxes[i] = boxes[i - 1]!;
    boxes[i - 1] = to;
    i--;
  }
  while (i < boxes.length - 1 && boxes[i + 1]! < boxes[i]!) {
    boxes[i] = boxes[i + 1]!;
    boxes[i + 1] = to;
    i++;
  }
}

/** Largest state table kept as a dense typed array; beyond it a Map is used. */
const DENSE_LIMIT = 1 << 20;

/** state code -> a non-negative integer (a depth, a parent link); -1 when unseen. Reusable across searches. */
export class StateTable {
  private dense = new Int32Array(0);
  private sparse: Map<number, number> | undefined;

  /** Forget everything and prepare for codes in [0, capacity). */
  clear(capacity: number): void {
    if (capacity <= DENSE_LIMIT) {
      this.sparse = undefined;
      if (this.dense.length < capacity) this.dense = new Int32Array(Math.max(capacity, 2 * this.dense.length));
      this.dense.fill(-1, 0, capacity);
    } else {
      this.sparse = new Map();
    }
  }

  get(code: number): number {
    return this.sparse ? (this.sparse.get(code) ?? -1) : this.dense[code]!;
  }

  set(code: number, value: number): void {
    if (this.sparse) this.sparse.set(code, value);
    else this.dense[code] = value;
  }
}
