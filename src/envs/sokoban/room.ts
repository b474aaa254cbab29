// Sokoban rooms as flat typed arrays: a padded grid of flags (wall, target, box) plus the player's cell.
// Parsing a room from a grid string; the symbols of the grid text and their legend.
import { ConfigError } from '../../util/index.js';

/** Cell flags. Walls and targets are fixed for a room; the box flag moves. */
export const WALL = 1;
export const TARGET = 2;
export const BOX = 4;

/** Symbols of the grid observation, one character each (RAGEN's `grid_lookup`, named). */
export interface SokobanVocab {
  wall: string;
  floor: string;
  target: string;
  boxOnTarget: string;
  box: string;
  player: string;
  playerOnTarget: string;
}

/** RAGEN's default symbols. */
export const DEFAULT_VOCAB: SokobanVocab = {
  wall: '#',
  floor: '_',
  target: 'O',
  boxOnTarget: '√',
  box: 'X',
  player: 'P',
  playerOnTarget: 'S',
};

/** Cell kinds in RAGEN's numbering (0 wall ... 6 player on target); index into `vocabSymbols`. */
const KIND_NAMES = ['wall', 'floor', 'target', 'boxOnTarget', 'box', 'player', 'playerOnTarget'] as const;
const KIND_WORDS = ['wall', 'floor', 'target', 'box on target', 'box', 'player', 'player on target'];

/** The symbols of a vocabulary in kind order. */
export function vocabSymbols(vocab: SokobanVocab): string[] {
  return KIND_NAMES.map((k) => vocab[k]);
}

/** "# wall, _ floor, ..." for the prompt: exactly the symbols the grid uses. */
export function vocabLegend(vocab: SokobanVocab): string {
  return 'Symbols: ' + KIND_NAMES.map((k, i) => `${vocab[k]} ${KIND_WORDS[i]}`).join(', ') + '.';
}

/**
 * The fixed part of a room. The grid is padded with one ring of walls so moves never index outside it:
 * visible cell (r, c) is at padded index (r + 1) * width + (c + 1). Immutable once built; every reset
 * builds a new one, so an observation rendered later still shows the room it was taken in.
 */
export interface SokobanLayout {
  /** Visible rows and columns (including the room's own border walls). */
  rows: number;
  cols: number;
  /** Padded row length, cols + 2. */
  width: number;
  /** WALL | TARGET flags per padded cell. */
  statics: Uint8Array;
  /** Padded indices of the targets, ascending. */
  targets: Int32Array;
}

/** A room with its movable parts. `boxes` are padded indices in any order. */
export interface SokobanRoom {
  layout: SokobanLayout;
  player: number;
  boxes: Int32Array;
}

/** Build a layout from its padded statics (walls and targets). */
export function makeLayout(rows: number, cols: number, statics: Uint8Array): SokobanLayout {
  const targets: number[] = [];
  for (let i = 0; i < statics.length; i++) if (statics[i]! & TARGET) targets.push(i);
  return { rows, cols, width: cols + 2, statics, targets: Int32Array.from(targets) };
}

/** "(r, c)" text of every padded index, per padded width (shared by all rooms of that width). */
const positionTexts = new Map<number, string[]>();

/** "(r, c)" of a padded index. */
export function position(index: number, width: number): string {
  let texts = positionTexts.get(width);
  if (!texts || texts.length <= index) {
    texts = [];
    for (let i = 0; i <= Math.max(index, width * width); i++)
      texts.push(`(${((i / width) | 0) - 1}, ${(i % width) - 1})`);
    positionTexts.set(width, texts);
  }
  return texts[index]!;
}

/** "[(r, c), ...]" of padded indices (sorted, so the text does not depend on their order). */
export function positionList(indices: ArrayLike<number>, width: number): string {
  if (indices.length === 0) return '[]';
  if (indices.length === 1) return `[${position(indices[0]!, width)}]`;
  const sorted = Array.from(indices).sort((a, b) => a - b);
  return '[' + sorted.map((i) => position(i, width)).join(', ') + ']';
}

/**
 * Parse a room from a grid string in the given vocabulary: one line per row, one symbol per cell, rows
 * of equal length. Needs exactly one player, at least one box, and as many targets as boxes.
 * Bad input is a `ConfigError` naming the row, the column and the symbol.
 */
export function parseGrid(text: string, vocab: SokobanVocab = DEFAULT_VOCAB): SokobanRoom {
  const lines = text
    .replace(/\r\n/g, '\n')
    .replace(/^\n+|\n+$/g, '')
    .split('\n');
  const rowsOfSymbols = lines.map((line) => [...line]);
  const rows = rowsOfSymbols.length;
  const cols = rowsOfSymbols[0]!.length;
  if (cols === 0) throw new ConfigError('Sokoban grid is empty; give one line per row, one symbol per cell.');
  const symbols = vocabSymbols(vocab);
  const width = cols + 2;
  const statics = new Uint8Array((rows + 2) * width).fill(WALL);
  const boxes: number[] = [];
  const players: number[] = [];
  rowsOfSymbols.forEach((line, r) => {
    if (line.length !== cols)
      throw new ConfigError(
        `Sokoban grid row ${r} has ${line.length} cells but row 0 has ${cols}; rows must have equal length.`,
      );
    line.forEach((symbol, c) => {
      const kind = symbols.indexOf(symbol);
      if (kind < 0)
        throw new ConfigError(
          `Unknown symbol ${JSON.stringify(symbol)} at row ${r}, column ${c} of the Sokoban grid. ${vocabLegend(vocab)}`,
        );
      const i = (r + 1) * width + c + 1;
      statics[i] = kind === 0 ? WALL : kind === 2 || kind === 3 || kind === 6 ? TARGET : 0;
      if (kind === 3 || kind === 4) boxes.push(i);
      if (kind === 5 || kind === 6) players.push(i);
    });
  });
  const layout = makeLayout(rows, cols, statics);
  if (players.length !== 1)
    throw new ConfigError(
      `Sokoban grid needs exactly one player (${vocab.player} or ${vocab.playerOnTarget}), found ${players.length}.`,
    );
  if (boxes.length === 0)
    throw new ConfigError(`Sokoban grid needs at least one box (${vocab.box} or ${vocab.boxOnTarget}).`);
  if (boxes.length !== layout.targets.length) {
    throw new ConfigError(
      `Sokoban grid has ${boxes.length} boxes but ${layout.targets.length} targets; they must be equal.`,
    );
  }
  return { layout, player: players[0]!, boxes: Int32Array.from(boxes) };
}
