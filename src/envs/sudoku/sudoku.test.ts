import '../index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { ResetNeededError, Rng } from '../../util/index.js';
import { envSpec, makeEnv, resolveEnvConfig } from '../../env/index.js';
import {
  countSolutions,
  generatePuzzle,
  parsePlacement,
  randomFullGrid,
  sudokuPuzzle,
  type SudokuConfig,
} from './index.js';

// A 4x4 puzzle with one solution:   solution
//  1 . | . .                        1 2 | 3 4
//  . . | 1 2                        3 4 | 1 2
//  2 . | 4 .                        2 1 | 4 3
//  . 3 | . 1                        4 3 | 2 1
const HAND = '1...' + '..12' + '2.4.' + '.3.1';
const cfg = (id: string): SudokuConfig => resolveEnvConfig(id) as SudokuConfig;

function isValidFullGrid(g: Uint8Array, n: number): boolean {
  const b = Math.sqrt(n);
  for (let u = 0; u < n; u++) {
    const row = new Set<number>(),
      col = new Set<number>(),
      box = new Set<number>();
    for (let k = 0; k < n; k++) {
      row.add(g[u * n + k]!);
      col.add(g[k * n + u]!);
      box.add(g[(Math.floor(u / b) * b + Math.floor(k / b)) * n + (u % b) * b + (k % b)]!);
    }
    if (row.size !== n || col.size !== n || box.size !== n || row.has(0)) return false;
  }
  return true;
}

describe('Sudoku grids', () => {
  test('random full grids are valid for 4, 9 and 16', () => {
    for (const n of [4, 9, 16]) expect(isValidFullGrid(randomFullGrid(n, new Rng(n)), n)).toBe(true);
  });
  test('countSolutions counts up to the limit and sees conflicting clues', () => {
    expect(countSolutions(new Uint8Array(16), 4, 1000)).toBe(288);
    expect(countSolutions(Uint8Array.from([...HAND].map((c) => (c === '.' ? 0 : +c))), 4, 10)).toBe(1);
    const clash = new Uint8Array(16);
    clash[0] = 1;
    clash[1] = 1;
    expect(countSolutions(clash, 4, 10)).toBe(0);
  });
  test('generated puzzles have a unique solution that matches their clues (100 seeds each)', () => {
    for (const [id, holes] of [
      ['SimpleSudoku', 6],
      ['MediumSudoku', 41],
    ] as const) {
      for (let seed = 0; seed < 100; seed++) {
        const p = sudokuPuzzle(cfg(id), seed);
        expect(countSolutions(p.puzzle, p.n, 2)).toBe(1);
        expect(isValidFullGrid(p.solution, p.n)).toBe(true);
        expect(p.puzzle.filter((d) => d === 0).length).toBe(holes);
        p.puzzle.forEach((d, i) => d && expect(d).toBe(p.solution[i]));
      }
    }
  });
  test('hard 9x9 puzzles reach 60% empty cells and stay unique', () => {
    const p = generatePuzzle(9, 'hard', new Rng(5));
    expect(p.puzzle.filter((d) => d === 0).length).toBe(49);
    expect(countSolutions(p.puzzle, 9, 2)).toBe(1);
  });
  test('are deterministic per seed', () => {
    expect(sudokuPuzzle(cfg('MediumSudoku'), 9)).toEqual(sudokuPuzzle(cfg('MediumSudoku'), 9));
    expect(sudokuPuzzle(cfg('MediumSudoku'), 9).puzzle).not.toEqual(sudokuPuzzle(cfg('MediumSudoku'), 10).puzzle);
  });
});

describe('Sudoku actions', () => {
  test('parse every RAGEN format, 1-based', () => {
    const want = { ok: true, placement: { row: 1, col: 2, digit: 4 } };
    for (const s of [
      'place 4 at row 2 col 3',
      'Place 4 at Row 2, Col 3',
      'place 4 at (2,3)',
      'place 4 at 2,3',
      '4 at 2, 3',
      '(2,3,4)',
      '2,3,4',
      ' 2 , 3 , 4. ',
    ]) {
      expect(parsePlacement(s, 9), s).toEqual(want);
    }
  });
  test('reject out-of-range indices and digits with a reason', () => {
    expect(parsePlacement('10,1,1', 9)).toMatchObject({ ok: false, reason: expect.stringContaining('row 10') });
    expect(parsePlacement('1,0,1', 9)).toMatchObject({ ok: false, reason: expect.stringContaining('column 0') });
    expect(parsePlacement('1,1,5', 4)).toMatchObject({ ok: false, reason: expect.stringContaining('digit 5') });
    expect(parsePlacement('fill it in', 9)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('place N at row R col C'),
    });
  });
});

describe('SudokuEnv rules', () => {
  const hand = () => {
    const env = makeEnv('SimpleSudoku');
    env.reset({ seed: 0, options: { puzzle: HAND } });
    return env;
  };
  test('the correct digit earns +1, a fitting wrong digit +0.5', () => {
    const env = hand();
    expect(env.step('place 2 at row 1 col 2')).toMatchObject({
      reward: 1,
      terminated: false,
      info: { actionIsValid: true, emptyCells: 8 },
    });
    // Row 1 col 4 holds 4 in the solution, but 3 repeats nothing in its row, column or box.
    expect(hand().step('1,4,3')).toMatchObject({ reward: 0.5, info: { actionIsValid: true, conflicts: 0 } });
  });
  test('a conflicting digit is placed, marked and penalised', () => {
    const env = hand();
    const r = env.step('place 1 at row 1 col 2') as any;
    expect(r).toMatchObject({
      reward: -0.1,
      terminated: false,
      info: { actionIsValid: true, actionIsEffective: true, conflicts: 2 },
    });
    expect(r.observation).toContain('*1*');
    expect(r.observation).toContain('Conflicting cells (row,col): (1,1) (1,2)');
    // Overwriting it with the right digit clears the conflict but earns nothing (the cell was paid once).
    expect(env.step('1,2,2')).toMatchObject({ reward: 0, info: { conflicts: 0 } });
  });
  test('writing a clue cell is invalid and leaves the board unchanged', () => {
    const env = hand();
    const before = env.render();
    const r = env.step('place 3 at row 1 col 1') as any;
    expect(r).toMatchObject({
      reward: -0.1,
      terminated: false,
      info: { actionIsValid: false, actionIsEffective: false },
    });
    expect(r.info.reason).toMatch(/clue/);
    expect(env.render()).toBe(before);
    expect(r.observation).toContain('Invalid action');
  });
  test('rewriting the same digit is ineffective and cannot farm reward', () => {
    const env = hand();
    env.step('1,2,2');
    expect(env.step('1,2,2')).toMatchObject({ reward: 0, info: { actionIsValid: true, actionIsEffective: false } });
    expect(env.step('1,2,4')).toMatchObject({ reward: 0, info: { actionIsEffective: true, conflicts: 0 } });
    expect(env.step('1,2,2')).toMatchObject({ reward: 0, info: { actionIsEffective: true } });
  });
  test('solving adds the +10 bonus and terminates', () => {
    const env = hand();
    const moves = ['1,2,2', '1,3,3', '1,4,4', '2,1,3', '2,2,4', '3,2,1', '3,4,3', '4,1,4', '4,3,2'];
    let last: any;
    for (const m of moves) last = env.step(m);
    expect(last).toMatchObject({
      reward: 11,
      terminated: true,
      truncated: false,
      info: { success: true, emptyCells: 0 },
    });
    expect(() => env.step('1,2,2')).toThrow(ResetNeededError);
  });
  test('a full grid with a repeated digit is not solved', () => {
    const env = hand();
    for (const m of ['1,2,2', '1,3,3', '1,4,4', '2,1,3', '2,2,4', '3,2,1', '3,4,3', '4,1,4']) env.step(m);
    expect(env.step('4,3,4')).toMatchObject({
      terminated: false,
      info: { success: false, emptyCells: 0, conflicts: 3 },
    });
  });
  test('truncates after maxSteps valid actions; invalid ones do not count', () => {
    const env = makeEnv('SimpleSudoku', { maxSteps: 2 });
    env.reset({ seed: 0, options: { puzzle: HAND } });
    env.step('nonsense');
    expect(env.step('1,2,4')).toMatchObject({ truncated: false });
    expect(env.step('1,2,2')).toMatchObject({ terminated: false, truncated: true });
  });
  test('stepping before reset throws ResetNeededError', () => {
    expect(() => makeEnv('MediumSudoku').step('1,1,1')).toThrow(ResetNeededError);
  });
  test('hostile text never throws and is invalid', () => {
    const env = hand();
    for (const h of [
      '',
      'a'.repeat(100_000),
      '\u0000\u001b[2J',
      '🙂,🙂,🙂',
      '1,1,' + '9'.repeat(1000),
      'place -1 at row 1 col 1',
    ]) {
      expect(env.step(h)).toMatchObject({ reward: -0.1, info: { actionIsValid: false } });
    }
  });
  test('the simple render is digits only', () => {
    const env = makeEnv('SimpleSudoku', { renderFormat: 'simple' });
    const r = env.reset({ seed: 0, options: { puzzle: HAND } }) as any;
    expect(r.observation).toBe('1 . | . .\n. . | 1 2\n2 . | 4 .\n. 3 | . 1');
  });
});

describe('Sudoku solver', () => {
  test.each(['SimpleSudoku', 'MediumSudoku'])('solves 200 seeds of %s through step', (id) => {
    const spec = envSpec(id);
    const c = cfg(id);
    const env = makeEnv(id);
    for (let seed = 0; seed < 200; seed++) {
      const actions = spec.solve!(c, seed)!;
      expect(actions.length).toBeLessThanOrEqual(spec.maxActionsPerEpisode);
      env.reset({ seed });
      let last: any;
      for (const a of actions) {
        last = env.step(a);
        expect(last.reward).toBeGreaterThanOrEqual(1);
      }
      expect(last).toMatchObject({ terminated: true, info: { success: true } });
    }
  });
});
