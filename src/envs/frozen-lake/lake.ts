// FrozenLake maps: seeded random maps with a guaranteed safe path, Gymnasium-style map strings, the
// shortest safe path, and the text renderings (grid and coordinates).
import { ConfigError, type Rng } from '../../util/index.js';

/** Tile kinds. The start tile is frozen ice; only the player's first position marks it. */
export const FROZEN = 0;
export const HOLE = 1;
export const GOAL = 2;

/** Actions in Gymnasium's order (0 Left, 1 Down, 2 Right, 3 Up). */
export const ACTION_NAMES = ['Left', 'Down', 'Right', 'Up'] as const;
const DR = [0, 1, 0, -1];
const DC = [-1, 0, 1, 0];

/** A lake: `tiles[r * cols + c]` is FROZEN, HOLE or GOAL. Immutable once built. */
export interface LakeMap {
  rows: number;
  cols: number;
  tiles: Uint8Array;
  start: number;
  goal: number;
}

/** The cell reached from `cell` by moving in direction `dir`; the same cell at an edge. */
export function move(map: LakeMap, cell: number, dir: number): number {
  const r = ((cell / map.cols) | 0) + DR[dir]!;
  const c = (cell % map.cols) + DC[dir]!;
  return r < 0 || r >= map.rows || c < 0 || c >= map.cols ? cell : r * map.cols + c;
}

/** Fewest moves from `from` to the goal over frozen cells, as action names; undefined when there is no path. */
export function shortestPath(map: LakeMap, from: number): string[] | undefined {
  const n = map.tiles.length;
  const link = new Int32Array(n).fill(-1); // previous cell * 4 + action
  const queue = [from];
  link[from] = from * 4;
  for (let head = 0; head < queue.length; head++) {
    const cell = queue[head]!;
    if (cell === map.goal) {
      const actions: string[] = [];
      for (let at = cell; at !== from; at = link[at]! >> 2) actions.push(ACTION_NAMES[link[at]! & 3]!);
      return actions.reverse();
    }
    if (map.tiles[cell] === HOLE) continue;
    for (let dir = 0; dir < 4; dir++) {
      const next = move(map, cell, dir);
      if (link[next] !== -1) continue;
      link[next] = cell * 4 + dir;
      queue.push(next);
    }
  }
  return undefined;
}

/** Most maps drawn per seed before giving up (only tiny p on tiny lakes can need many). */
const MAX_ATTEMPTS = 100_000;

/**
 * A random size x size lake: each cell frozen with probability `p`, else a hole; start and goal on two
 * distinct random cells (both frozen). Redrawn until a path from start to goal avoids every hole.
 */
export function generateLake(rng: Rng, size: number, p: number): LakeMap {
  const n = size * size;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const tiles = new Uint8Array(n);
    for (let i = 0; i < n; i++) tiles[i] = rng.random() < p ? FROZEN : HOLE;
    const start = rng.int(n);
    let goal = rng.int(n - 1);
    if (goal >= start) goal++;
    tiles[start] = FROZEN;
    tiles[goal] = GOAL;
    const map = { rows: size, cols: size, tiles, start, goal };
    if (shortestPath(map, start)) return map;
  }
  throw new ConfigError(
    `Could not draw a ${size}x${size} FrozenLake map with a safe path at p = ${p} in ${MAX_ATTEMPTS} tries; raise p.`,
  );
}

/**
 * A lake from Gymnasium-style rows of S (start), F (frozen), H (hole), G (goal), e.g. "SFFF\nFHFH\nFFFH\nHFFG".
 * Needs exactly one S and one G and rows of equal length; bad input is a `ConfigError`.
 */
export function parseLake(text: string): LakeMap {
  const lines = text
    .trim()
    .split(/\r?\n/)
    .map((line) => line.trim());
  const rows = lines.length;
  const cols = lines[0]!.length;
  const tiles = new Uint8Array(rows * cols);
  const starts: number[] = [];
  const goals: number[] = [];
  lines.forEach((line, r) => {
    if (line.length !== cols)
      throw new ConfigError(
        `FrozenLake map row ${r} has ${line.length} cells but row 0 has ${cols}; rows must have equal length.`,
      );
    [...line].forEach((ch, c) => {
      const i = r * cols + c;
      if (ch === 'S') starts.push(i);
      else if (ch === 'G') goals.push(i);
      else if (ch === 'H') tiles[i] = HOLE;
      else if (ch !== 'F')
        throw new ConfigError(
          `Unknown FrozenLake map letter ${JSON.stringify(ch)} at row ${r}, column ${c}; use S (start), F (frozen), H (hole), G (goal).`,
        );
      if (ch === 'G') tiles[i] = GOAL;
    });
  });
  if (cols === 0) throw new ConfigError('FrozenLake map is empty; give rows of S, F, H, G.');
  if (starts.length !== 1 || goals.length !== 1) {
    throw new ConfigError(
      `FrozenLake map needs exactly one S and one G, found ${starts.length} S and ${goals.length} G.`,
    );
  }
  return { rows, cols, tiles, start: starts[0]!, goal: goals[0]! };
}

/** The observation formats: a grid, (row, column) lists, or both. */
export type ObservationFormat = 'grid' | 'coord' | 'grid_coord';

/** Grid symbols. The start tile is drawn as frozen ice: once left, it is ordinary ice. */
const SYMBOL = { player: 'P', frozen: '_', hole: 'O', goal: 'G', playerInHole: 'X', playerOnGoal: '√' };

/** The legend of the grid symbols (all of them can appear: X and √ in the last observation). */
export const GRID_LEGEND = `Symbols: ${SYMBOL.player} player, ${SYMBOL.frozen} frozen ice, ${SYMBOL.hole} hole, ${SYMBOL.goal} goal, ${SYMBOL.playerInHole} player in a hole, ${SYMBOL.playerOnGoal} player on the goal.`;

function grid(map: LakeMap, player: number): string {
  let out = '';
  for (let i = 0; i < map.tiles.length; i++) {
    if (i > 0 && i % map.cols === 0) out += '\n';
    const tile = map.tiles[i];
    if (i === player) out += tile === HOLE ? SYMBOL.playerInHole : tile === GOAL ? SYMBOL.playerOnGoal : SYMBOL.player;
    else out += tile === HOLE ? SYMBOL.hole : tile === GOAL ? SYMBOL.goal : SYMBOL.frozen;
  }
  return out;
}

const position = (map: LakeMap, cell: number): string => `(${(cell / map.cols) | 0}, ${cell % map.cols})`;

function coord(map: LakeMap, player: number): string {
  const holes: string[] = [];
  for (let i = 0; i < map.tiles.length; i++) if (map.tiles[i] === HOLE) holes.push(position(map, i));
  return (
    `Board size: ${map.rows} rows x ${map.cols} columns; positions are (row, column), zero-indexed from the top left.\n` +
    `Goal: ${position(map, map.goal)}\nHoles: [${holes.join(', ')}]\nPlayer: ${position(map, player)}`
  );
}

/** The observation of the player at `player` on `map`. */
export function renderLake(map: LakeMap, player: number, format: ObservationFormat): string {
  if (format === 'grid') return grid(map, player);
  if (format === 'coord') return coord(map, player);
  return `Coordinates:\n${coord(map, player)}\nGrid:\n${grid(map, player)}`;
}
