// Optimal Sokoban solver: breadth-first search over (player, boxes) states, fewest moves first.
import type { SokobanRoom } from './room.js';
import { ACTION_NAMES, FloorGraph, StateCodec, StateTable, moveSortedBox } from './search.js';

/** Default cap on visited states; rooms needing more are reported unsolved (undefined). */
export const SOLVER_MAX_STATES = 2_000_000;

/**
 * The shortest action sequence ("Up", "Down", "Left", "Right") that puts every box on a target, `[]` when
 * the room is already solved, or `undefined` when it cannot be solved (or needs more than `maxStates`
 * states). Breadth-first over moves, so the sequence is optimal in moves, hence in Sokoban's reward.
 */
export function solveSokoban(room: SokobanRoom, maxStates = SOLVER_MAX_STATES): string[] | undefined {
  const graph = new FloorGraph(room.layout);
  const F = graph.size;
  const k = room.boxes.length;
  const codec = new StateCodec(F, k);
  const { next, isTarget } = graph;
  const boxes = new Int32Array(k);
  const moved = new Int32Array(k);
  const occupied = new Uint8Array(F);
  const solved = (sortedBoxes: Int32Array): boolean => {
    for (let b = 0; b < k; b++) if (!isTarget[sortedBoxes[b]!]) return false;
    return true;
  };

  for (let b = 0; b < k; b++) boxes[b] = graph.floorOf[room.boxes[b]!]!;
  boxes.sort();
  if (solved(boxes)) return [];
  const start = graph.floorOf[room.player]! + F * codec.encodeBoxes(boxes);

  // parent link: the parent's queue position * 4 + the action that led here.
  const table = new StateTable();
  table.clear(codec.capacity);
  const queue: number[] = [start];
  const link: number[] = [-1];
  table.set(start, 0);
  for (let head = 0; head < queue.length; head++) {
    const code = queue[head]!;
    const p = code % F;
    const boxCode = (code - p) / F;
    codec.decodeBoxes(boxCode, boxes);
    for (let b = 0; b < k; b++) occupied[boxes[b]!] = 1;
    for (let dir = 0; dir < 4; dir++) {
      const q = next[p * 4 + dir]!;
      if (q < 0) continue;
      let child: number;
      let done = false;
      if (occupied[q]) {
        const beyond = next[q * 4 + dir]!;
        if (beyond < 0 || occupied[beyond]) continue;
        moved.set(boxes);
        moveSortedBox(moved, q, beyond);
        child = q + F * codec.encodeBoxes(moved);
        done = solved(moved);
      } else {
        child = q + F * boxCode;
      }
      if (table.get(child) >= 0) continue;
      table.set(child, queue.length);
      queue.push(child);
      link.push(head * 4 + dir);
      if (done) return path(link, queue.length - 1);
      if (queue.length >= maxStates) return undefined;
    }
    for (let b = 0; b < k; b++) occupied[boxes[b]!] = 0;
  }
  return undefined;
}

function path(link: number[], at: number): string[] {
  const actions: string[] = [];
  while (link[at]! >= 0) {
    actions.push(ACTION_NAMES[link[at]! & 3]!);
    at = link[at]! >> 2;
  }
  return actions.reverse();
}
