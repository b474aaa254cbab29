import '../index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { ResetNeededError, Rng } from '../../util/index.js';
import { envSpec, makeEnv, resolveEnvConfig } from '../../env/index.js';
import {
  MOVE_NAMES,
  applyMove,
  isSolved,
  moveIndex,
  scrambleMoves,
  solveCube,
  solvedCube,
  type RubiksCubeConfig,
} from './index.js';

const scratch = new Uint8Array(24);
const run = (names: string[], cube = solvedCube()): Uint8Array => {
  for (const n of names) applyMove(cube, moveIndex(n), scratch);
  return cube;
};
const faces = (obs: string): Record<string, string> =>
  Object.fromEntries(
    [...obs.matchAll(/\((\w)\):\s+\[(\w), (\w)\] \[(\w), (\w)\]/g)].map((m) => [m[1]!, m.slice(2, 6).join('')]),
  );

describe('cube moves', () => {
  test('every move has order 4 and its prime undoes it', () => {
    for (let m = 0; m < 12; m++) {
      const c = solvedCube();
      for (let k = 0; k < 4; k++) applyMove(c, m, scratch);
      expect(c).toEqual(solvedCube());
      expect(run([MOVE_NAMES[m]!, MOVE_NAMES[m ^ 1]!])).toEqual(solvedCube());
    }
  });
  test('U turns the front top row to the left, as in Singmaster notation', () => {
    const obs = faces((makeEnv('rubikscube').reset({ seed: 0, options: { scramble: ['U'] } }) as any).observation);
    expect(obs).toEqual({ U: 'WWWW', L: 'GGOO', F: 'RRGG', R: 'BBRR', B: 'OOBB', D: 'YYYY' });
  });
  test('R turns the front right column up onto U', () => {
    const obs = faces((makeEnv('rubikscube').reset({ seed: 0, options: { scramble: ['R'] } }) as any).observation);
    expect(obs).toEqual({ U: 'WGWG', L: 'OOOO', F: 'GYGY', R: 'RRRR', B: 'WBWB', D: 'YBYB' });
  });
  test("the sexy move (R U R' U') has order 6 and opposite faces commute", () => {
    const c = solvedCube();
    for (let k = 0; k < 5; k++) run(['R', 'U', "R'", "U'"], c);
    expect(isSolved(c)).toBe(false);
    run(['R', 'U', "R'", "U'"], c);
    expect(c).toEqual(solvedCube());
    expect(run(['U', "D'"])).toEqual(run(["D'", 'U']));
  });
  test('opposite turns in the same direction rotate the whole cube (which counts as solved)', () => {
    expect(isSolved(run(['L', 'R']))).toBe(false);
    expect(isSolved(run(["L'", 'R']))).toBe(true);
    expect(isSolved(run(['U', "D'"]))).toBe(true);
    expect(isSolved(run(['F', "B'"]))).toBe(true);
  });
  test('move names match case-insensitively and accept typographic primes', () => {
    expect(moveIndex("r'")).toBe(7);
    expect(moveIndex('R’')).toBe(7);
    expect(moveIndex(' f ')).toBe(8);
    expect(moveIndex('R2')).toBe(-1);
  });
});

describe('cube solver', () => {
  test('finds optimal solutions: known lengths', () => {
    expect(solveCube(solvedCube())).toEqual([]);
    expect(solveCube(run(['R']))).toHaveLength(1);
    expect(solveCube(run(['R', 'U']))).toHaveLength(2);
    expect(solveCube(run(['R', 'R']))).toHaveLength(2);
    expect(solveCube(run(['R', 'U', "R'", "U'"]))).toHaveLength(4);
  });
  test('solves deep random scrambles within 14 quarter turns', () => {
    const rng = new Rng(4);
    for (let k = 0; k < 5; k++) {
      const c = solvedCube();
      for (let i = 0; i < 40; i++) applyMove(c, rng.int(12), scratch);
      const sol = solveCube(c)!;
      expect(sol.length).toBeLessThanOrEqual(14);
      for (const m of sol) applyMove(c, m, scratch);
      expect(isSolved(c)).toBe(true);
    }
  });
  test('rejects an illegal cube (a twisted corner)', () => {
    const c = solvedCube();
    // Twist the corner at U/F/R: its three stickers cycle.
    const ufr = [3, 9, 12];
    [c[ufr[0]!], c[ufr[1]!], c[ufr[2]!]] = [c[ufr[1]!]!, c[ufr[2]!]!, c[ufr[0]!]!];
    expect(solveCube(c)).toBeUndefined();
  });
  test.each([1, 5])('solves 200 seeds at scramble depth %i through step', (depth) => {
    const spec = envSpec('rubikscube');
    const config = resolveEnvConfig('rubikscube', { scrambleDepth: depth }) as RubiksCubeConfig;
    const env = makeEnv('rubikscube', { scrambleDepth: depth });
    for (let seed = 0; seed < 200; seed++) {
      const actions = spec.solve!(config, seed)!;
      expect(actions.length).toBeLessThanOrEqual(depth);
      expect(actions.length).toBeGreaterThan(0);
      env.reset({ seed });
      let last: any;
      for (const a of actions) last = env.step(a);
      expect(last).toMatchObject({ reward: 1, terminated: true, truncated: false, info: { success: true } });
    }
  });
});

describe('rubikscube env', () => {
  test('scrambles deterministically per seed, never solved, never undoing a move', () => {
    const env = makeEnv('rubikscube', { scrambleDepth: 6 });
    const a = (env.reset({ seed: 11 }) as any).observation;
    expect((makeEnv('rubikscube', { scrambleDepth: 6 }).reset({ seed: 11 }) as any).observation).toBe(a);
    for (let seed = 0; seed < 300; seed++) {
      const moves = scrambleMoves(2, seed);
      expect(moves[1]).not.toBe(moves[0]! ^ 1);
      expect(isSolved(run(moves.map((m) => MOVE_NAMES[m]!)))).toBe(false);
    }
  });
  test('rewards +1 only on solving; invalid text changes nothing', () => {
    const env = makeEnv('rubikscube');
    const first = env.reset({ seed: 0, options: { scramble: ['R', 'U'] } }) as any;
    const bad = env.step('R2') as any;
    expect(bad).toMatchObject({
      reward: 0,
      terminated: false,
      observation: first.observation,
      info: { actionIsValid: false, steps: 0 },
    });
    expect(bad.info.reason).toMatch(/not a move/);
    expect(env.step("U'")).toMatchObject({ reward: 0, terminated: false, info: { actionIsValid: true, steps: 1 } });
    const done = env.step("r'") as any;
    expect(done).toMatchObject({ reward: 1, terminated: true, info: { success: true } });
    expect(done.observation).toContain('Solved');
    expect(() => env.step('U')).toThrow(ResetNeededError);
  });
  test('truncates after maxSteps valid moves without penalty', () => {
    const env = makeEnv('rubikscube', { maxSteps: 3 });
    env.reset({ seed: 0, options: { scramble: ['R'] } });
    env.step('U');
    env.step('U');
    expect(env.step('U')).toMatchObject({ reward: 0, terminated: false, truncated: true });
  });
  test('stepping before reset throws; hostile text never throws', () => {
    const env = makeEnv('rubikscube');
    expect(() => env.step('U')).toThrow(ResetNeededError);
    env.reset({ seed: 1 });
    for (const h of ['', 'a'.repeat(100_000), '\u0000', '🙂', "U' || R"])
      expect(env.step(h)).toMatchObject({ info: { actionIsValid: false } });
  });
  test('uses the tag defaults: scramble depth 1, 20 moves', () => {
    expect(resolveEnvConfig('rubikscube')).toEqual({ scrambleDepth: 1, maxSteps: 20 });
    expect(makeEnv('rubikscube').actionNames).toEqual(MOVE_NAMES);
  });
});
