// Sokoban observations as text: the grid (one symbol per cell) and the coordinate lists (RAGEN's formats),
// with per-room caches so that rendering every step stays cheap.
import { TARGET, WALL, position, positionList, type SokobanLayout, type SokobanRoom } from './room.js';

/** The observation formats: a grid, (row, column) lists, or both. */
export type ObservationFormat = 'grid' | 'coord' | 'grid_coord';

/** Observations remembered per room (by packed state); beyond this many, new ones are not stored. */
const MEMO_LIMIT = 50_000;

/**
 * Renders one env's observations. Per room it keeps the rows as they look without boxes and player,
 * the board-size and targets lines, and every observation already rendered (keyed by the packed
 * (player, boxes) state): a random walk in a small room revisits states often.
 */
export class SokobanRenderer {
  private layout: SokobanLayout | undefined;
  private baseRows: string[] = [];
  private coordHeader = '';
  private memo = new Map<number, string>();

  constructor(
    readonly format: ObservationFormat,
    readonly symbols: readonly string[],
  ) {}

  /**
   * The observation of the player at `player` and the boxes at `boxes` (padded indices) in `layout`.
   * `code` must identify (player, boxes) within this layout, or be -1 to skip the memo.
   */
  render(layout: SokobanLayout, player: number, boxes: Int32Array, code: number): string {
    if (layout !== this.layout) this.setLayout(layout);
    if (code >= 0) {
      const hit = this.memo.get(code);
      if (hit !== undefined) return hit;
    }
    const format = this.format;
    const text =
      format === 'grid'
        ? this.grid(player, boxes)
        : format === 'coord'
          ? this.coord(player, boxes)
          : 'Coordinates:\n' + this.coord(player, boxes) + '\nGrid:\n' + this.grid(player, boxes);
    if (code >= 0 && this.memo.size < MEMO_LIMIT) this.memo.set(code, text);
    return text;
  }

  private setLayout(layout: SokobanLayout): void {
    this.layout = layout;
    this.memo = new Map();
    this.baseRows = [];
    if (this.format !== 'coord') for (let r = 0; r < layout.rows; r++) this.baseRows.push(this.row(r, -1, undefined));
    this.coordHeader =
      `Board size: ${layout.rows} rows x ${layout.cols} columns; positions are (row, column), zero-indexed from the top left.\n` +
      `Targets: ${positionList(layout.targets, layout.width)}\n`;
  }

  /** One line per row, one symbol per cell; rows without the player or a box come from the cache. */
  private grid(player: number, boxes: Int32Array): string {
    const { rows, width } = this.layout!;
    let out = '';
    for (let r = 0; r < rows; r++) {
      const first = (r + 1) * width;
      let dirty = player >= first && player < first + width;
      for (let b = 0; b < boxes.length && !dirty; b++) dirty = boxes[b]! >= first && boxes[b]! < first + width;
      if (r > 0) out += '\n';
      out += dirty ? this.row(r, player, boxes) : this.baseRows[r]!;
    }
    return out;
  }

  /** One row's symbols with the player and boxes drawn in. */
  private row(r: number, player: number, boxes: Int32Array | undefined): string {
    const { cols, width, statics } = this.layout!;
    const symbols = this.symbols;
    let out = '';
    for (let c = 0, i = (r + 1) * width + 1; c < cols; c++, i++) {
      const s = statics[i]!;
      let kind = s & WALL ? 0 : s & TARGET ? 2 : 1;
      if (i === player) kind = s & TARGET ? 6 : 5;
      else if (boxes) for (let b = 0; b < boxes.length; b++) if (boxes[b] === i) kind = s & TARGET ? 3 : 4;
      out += symbols[kind]!;
    }
    return out;
  }

  /** Board size, targets, boxes, boxes on target and the player; walls are not listed (as in RAGEN). */
  private coord(player: number, boxes: Int32Array): string {
    const { statics, width } = this.layout!;
    let onTarget: number[] | undefined;
    for (let b = 0; b < boxes.length; b++) if (statics[boxes[b]!]! & TARGET) (onTarget ??= []).push(boxes[b]!);
    return (
      this.coordHeader +
      'Boxes: ' +
      positionList(boxes, width) +
      '\nBoxes on target: ' +
      (onTarget ? positionList(onTarget, width) : '[]') +
      '\nPlayer: ' +
      position(player, width)
    );
  }
}

/** The observation of a room in one format (no caching; for tests and one-off use). */
export function renderObservation(room: SokobanRoom, format: ObservationFormat, symbols: readonly string[]): string {
  return new SokobanRenderer(format, symbols).render(room.layout, room.player, room.boxes, -1);
}
