// Sokoban observations as text: the grid (one symbol per cell) and the coordinate lists (RAGEN's formats),
// with per-room row caches so that rendering every step stays cheap.
import { TARGET, WALL, position, positionList, type SokobanLayout, type SokobanRoom } from './room.js';

/** The observation formats: a grid, (row, column) lists, or both. */
export type ObservationFormat = 'grid' | 'coord' | 'grid_coord';

/**
 * Renders one env's observations. Per room it keeps the rows as they look without boxes and player,
 * each row with only the player or only one box in a given column (filled on first use), and the
 * board-size and targets lines; only rows holding two or more movable things are built symbol by symbol.
 */
export class SokobanRenderer {
  private layout: SokobanLayout | undefined;
  private baseRows: string[] = [];
  /** [r * cols + c]: row r with the player at column c; [cells + r * cols + c]: with a box there. */
  private singleRows: (string | undefined)[] = [];
  private coordHeader = '';
  /** With one box: the box lines per box cell (filled on first use). */
  private oneBoxLines: (string | undefined)[] = [];

  constructor(
    readonly format: ObservationFormat,
    readonly symbols: readonly string[],
  ) {}

  /** The observation of the player at `player` and the boxes at `boxes` (padded indices) in `layout`. */
  render(layout: SokobanLayout, player: number, boxes: Int32Array): string {
    if (layout !== this.layout) this.setLayout(layout);
    const format = this.format;
    if (format === 'grid') return this.grid(player, boxes);
    if (format === 'coord') return this.coord(player, boxes);
    return 'Coordinates:\n' + this.coord(player, boxes) + '\nGrid:\n' + this.grid(player, boxes);
  }

  private setLayout(layout: SokobanLayout): void {
    this.layout = layout;
    this.baseRows = [];
    this.singleRows = new Array(2 * layout.rows * layout.cols);
    this.oneBoxLines = new Array(layout.statics.length);
    if (this.format !== 'coord') for (let r = 0; r < layout.rows; r++) this.baseRows.push(this.row(r, -1, undefined));
    this.coordHeader =
      `Board size: ${layout.rows} rows x ${layout.cols} columns; positions are (row, column), zero-indexed from the top left.\n` +
      `Targets: ${positionList(layout.targets, layout.width)}\n`;
  }

  /** One line per row, one symbol per cell. */
  private grid(player: number, boxes: Int32Array): string {
    const { rows, cols, width } = this.layout!;
    let out = '';
    for (let r = 0; r < rows; r++) {
      const first = (r + 1) * width;
      const last = first + width;
      let things = player >= first && player < last ? 1 : 0;
      let single = things ? r * cols + player - first - 1 : -1;
      for (let b = 0; b < boxes.length; b++) {
        if (boxes[b]! >= first && boxes[b]! < last) {
          things++;
          single = rows * cols + r * cols + boxes[b]! - first - 1;
        }
      }
      if (r > 0) out += '\n';
      if (things === 0) out += this.baseRows[r]!;
      else if (things === 1) out += this.singleRows[single] ??= this.row(r, player, boxes);
      else out += this.row(r, player, boxes);
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
    const width = this.layout!.width;
    if (boxes.length === 1)
      return this.coordHeader + (this.oneBoxLines[boxes[0]!] ??= this.boxLines(boxes)) + position(player, width);
    return this.coordHeader + this.boxLines(boxes) + position(player, width);
  }

  /** "Boxes: [...]\nBoxes on target: [...]\nPlayer: ". */
  private boxLines(boxes: Int32Array): string {
    const { statics, width } = this.layout!;
    const onTarget: number[] = [];
    for (let b = 0; b < boxes.length; b++) if (statics[boxes[b]!]! & TARGET) onTarget.push(boxes[b]!);
    return `Boxes: ${positionList(boxes, width)}\nBoxes on target: ${positionList(onTarget, width)}\nPlayer: `;
  }
}

/** The observation of a room in one format (for tests and one-off use). */
export function renderObservation(room: SokobanRoom, format: ObservationFormat, symbols: readonly string[]): string {
  return new SokobanRenderer(format, symbols).render(room.layout, room.player, room.boxes);
}
