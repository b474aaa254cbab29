import '../index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { ResetNeededError, Rng } from '../../util/index.js';
import { envSpec, makeEnv } from '../../env/index.js';
import { Board2048 } from './index.js';

/** A board from rows of tile values, and back. */
function board(rows: number[][]): Board2048 {
  const b = new Board2048(rows.length);
  rows.flat().forEach((v, i) => (b.cells[i] = v ? Math.log2(v) : 0));
  return b;
}
const rowsOf = (b: Board2048): number[][] =>
  Array.from({ length: b.size }, (_, r) => Array.from({ length: b.size }, (_, c) => b.value(r * b.size + c)));
const gridOf = (obs: string): number[][] =>
  [...obs.matchAll(/Row \d+: \[([^\]]*)\]/g)].map((m) => m[1]!.split(', ').map(Number));

describe('Board2048 moves', () => {
  const UP = 0,
    RIGHT = 1,
    DOWN = 2,
    LEFT = 3;
  test('merge each tile at most once, from the edge the tiles move to', () => {
    const b = board([
      [2, 2, 2, 2],
      [2, 2, 4, 0],
      [4, 2, 2, 0],
      [0, 0, 0, 2],
    ]);
    expect(b.move(LEFT)).toBe(8 + 4 + 4);
    expect(rowsOf(b)).toEqual([
      [4, 4, 0, 0],
      [4, 4, 0, 0],
      [4, 4, 0, 0],
      [2, 0, 0, 0],
    ]);
  });
  test('slide right, up and down by the same rules', () => {
    const r = board([
      [4, 2, 2, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
    ]);
    expect(r.move(RIGHT)).toBe(4);
    expect(rowsOf(r)[0]).toEqual([0, 0, 4, 4]);
    const u = board([
      [0, 0, 0, 0],
      [2, 0, 0, 0],
      [2, 0, 0, 8],
      [4, 0, 0, 8],
    ]);
    expect(u.move(UP)).toBe(4 + 16);
    expect(rowsOf(u)).toEqual([
      [4, 0, 0, 16],
      [4, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
    ]);
    expect(u.move(DOWN)).toBe(8);
    expect(rowsOf(u)).toEqual([
      [0, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
      [8, 0, 0, 16],
    ]);
  });
  test('report a move that changes nothing as -1 and leave the board alone', () => {
    const b = board([
      [2, 4, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
    ]);
    expect(b.move(LEFT)).toBe(-1);
    expect(b.move(UP)).toBe(-1);
    expect(b.canMove(RIGHT)).toBe(true);
    expect(rowsOf(b)[0]).toEqual([2, 4, 0, 0]);
  });
  test('detect game over only with a full board and no equal neighbours', () => {
    expect(
      board([
        [2, 4],
        [4, 2],
      ]).isGameOver(),
    ).toBe(true);
    expect(
      board([
        [2, 4],
        [2, 8],
      ]).isGameOver(),
    ).toBe(false);
    expect(
      board([
        [2, 0],
        [4, 2],
      ]).isGameOver(),
    ).toBe(false);
  });
  test('spawn 2s with probability twoProb on empty cells', () => {
    const rng = new Rng(1);
    let twos = 0;
    for (let k = 0; k < 5000; k++) {
      const b = new Board2048(4);
      b.spawn(rng, 0.9);
      const v = b.cells.find((x) => x > 0)!;
      if (v === 1) twos++;
    }
    expect(Math.abs(twos / 5000 - 0.9)).toBeLessThan(0.02);
    expect(
      board([
        [2, 4],
        [4, 2],
      ]).spawn(rng, 0.9),
    ).toBe(false);
  });
});

describe('game_2048 env', () => {
  const hand = (rows: number[][], config: Record<string, unknown> = {}) => {
    const env = makeEnv('game_2048', config);
    env.reset({ seed: 0, options: { board: rows } });
    return env;
  };
  test('starts with two tiles, deterministic per seed', () => {
    const env = makeEnv('game_2048');
    const a = (env.reset({ seed: 5 }) as any).observation;
    expect(
      gridOf(a)
        .flat()
        .filter((v) => v > 0),
    ).toHaveLength(2);
    expect((makeEnv('game_2048').reset({ seed: 5 }) as any).observation).toBe(a);
    const trajectory = (seed: number) => {
      const e = makeEnv('game_2048');
      e.reset({ seed });
      return ['Up', 'Left', 'Down', 'Right', 'Up', 'Left'].map((m) => (e.step(m) as any).observation).join('|');
    };
    expect(trajectory(3)).toBe(trajectory(3));
  });
  test('rewards 0.1 * log2(merge sum + 1), or the raw sum without log reward', () => {
    const rows = [
      [2, 2, 4, 4],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
    ];
    const r = hand(rows).step('left') as any;
    expect(r.reward).toBeCloseTo(0.1 * Math.log2(13), 12);
    expect(r.info).toMatchObject({
      actionIsValid: true,
      actionIsEffective: true,
      rawReward: 12,
      score: 12,
      maxTile: 8,
    });
    expect(
      gridOf(r.observation)
        .flat()
        .filter((v) => v > 0),
    ).toHaveLength(3);
    expect((hand(rows, { useLogReward: false }).step('Left') as any).reward).toBe(12);
    const slide = hand([
      [0, 2, 0, 4],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
    ]).step('Left') as any;
    expect(slide).toMatchObject({ reward: 0, info: { actionIsValid: true, rawReward: 0 } });
  });
  test('a move that changes nothing is invalid, penalised even with log reward, and changes nothing', () => {
    const env = hand([
      [2, 4, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 0, 0],
    ]);
    const before = env.render();
    const r = env.step('Left') as any;
    expect(r).toMatchObject({
      reward: -0.1,
      terminated: false,
      observation: before,
      info: { actionIsValid: false, actionIsEffective: false },
    });
    expect(r.info.reason).toMatch(/Left moves no tile; valid now: Right, Down/);
  });
  test('unknown text is invalid with reward 0 and names the actions', () => {
    const r = hand(
      [
        [2, 0],
        [0, 0],
      ],
      { size: 2 },
    ).step('jump') as any;
    expect(r).toMatchObject({
      reward: 0,
      info: { actionIsValid: false, reason: expect.stringContaining('Up, Right, Down, Left') },
    });
  });
  test('terminates when no move is left, and reports success by the max tile', () => {
    // Left merges row 1 into [4, 4, 0] and a 2 spawns there: moves remain; the 8 already meets targetTile 8.
    const going = hand(
      [
        [2, 2, 4],
        [4, 8, 2],
        [2, 4, 8],
      ],
      { size: 3, targetTile: 8, twoProb: 1 },
    ).step('Left') as any;
    expect(going).toMatchObject({ terminated: false, info: { success: true } });
    // Left slides row 3 to [8, 16, 0]; the spawned 2 fills the board with no equal neighbours.
    const last = hand(
      [
        [2, 4, 2],
        [4, 2, 4],
        [0, 8, 16],
      ],
      { size: 3, twoProb: 1 },
    );
    const fin = last.step('Left') as any;
    expect(gridOf(fin.observation)).toEqual([
      [2, 4, 2],
      [4, 2, 4],
      [8, 16, 2],
    ]);
    expect(fin).toMatchObject({ terminated: true, truncated: false, info: { success: false, maxTile: 16 } });
    expect(fin.observation).toContain('Game over');
    expect(() => last.step('Up')).toThrow(ResetNeededError);
  });
  test('stepping before reset throws ResetNeededError', () => {
    expect(() => makeEnv('game_2048').step('Up')).toThrow(ResetNeededError);
  });
  test('hostile text never throws', () => {
    const env = makeEnv('game_2048');
    env.reset({ seed: 1 });
    for (const h of ['', 'a'.repeat(100_000), '\u0000', 'ＵＰ', '🙂', ' up ']) expect(() => env.step(h)).not.toThrow();
  });
  test('has no solver and RAGEN action names', () => {
    expect(envSpec('game_2048').solve).toBeUndefined();
    expect(makeEnv('game_2048').actionNames).toEqual(['Up', 'Right', 'Down', 'Left']);
  });
  test('the instruction states the configured board size (RAGEN always said 4x4)', () => {
    expect(makeEnv('game_2048').instruction).toContain('on a 4x4 grid');
    const env = makeEnv('game_2048', { size: 5 });
    expect(env.instruction).toContain('on a 5x5 grid');
    expect(gridOf((env.reset({ seed: 0 }) as { observation: string }).observation)).toHaveLength(5);
  });
});
