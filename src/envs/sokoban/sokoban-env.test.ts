import '../index.js';
import { describe, expect, test } from 'vitest';
import { ConfigError, ResetNeededError } from '../../util/index.js';
import { makeEnv } from '../../env/index.js';
import { SokobanEnv } from './sokoban-env.js';

const step = (env: SokobanEnv, action: string) => env.step(action);

describe('Sokoban rules on hand-built rooms', () => {
  test('walking into a wall is a valid no-op costing -0.1', () => {
    const env = SokobanEnv.fromGrid('######\n#PX#O#\n#____#\n######');
    const before = env.render();
    const r = step(env, 'Up');
    expect(r.info).toMatchObject({ actionIsValid: true, actionIsEffective: false, success: false, boxesOnTarget: 0 });
    expect(r.reward).toBeCloseTo(-0.1, 12);
    expect(r.observation).toBe(before);
  });

  test('pushing a box into a wall does nothing', () => {
    const env = SokobanEnv.fromGrid('######\n#PX#O#\n#____#\n######');
    const r = step(env, 'Right');
    expect(r.info.actionIsEffective).toBe(false);
    expect(r.observation).toBe('######\n#PX#O#\n#____#\n######');
  });

  test('pushing a box into another box does nothing', () => {
    const env = SokobanEnv.fromGrid('######\n#PXX_#\n#OO__#\n######');
    const r = step(env, 'Right');
    expect(r.info.actionIsEffective).toBe(false);
    expect(r.observation).toBe('######\n#PXX_#\n#OO__#\n######');
  });

  test('a box onto a target gives +1, off a target -1', () => {
    const env = SokobanEnv.fromGrid('#######\n#PXO__#\n#__X_O#\n#######');
    const on = step(env, 'Right');
    expect(on.reward).toBeCloseTo(0.9, 12);
    expect(on.info).toMatchObject({ boxesOnTarget: 1, success: false, actionIsEffective: true });
    expect(on.terminated).toBe(false);
    expect(on.observation).toBe('#######\n#_P√__#\n#__X_O#\n#######');
    const off = step(env, 'Right');
    expect(off.reward).toBeCloseTo(-1.1, 12);
    expect(off.info.boxesOnTarget).toBe(0);
    expect(off.observation).toBe('#######\n#__SX_#\n#__X_O#\n#######');
  });

  test('solving gives +10 on top, terminates, and a further step throws', () => {
    const env = SokobanEnv.fromGrid('######\n#PXO_#\n#____#\n######');
    const r = step(env, 'Right');
    expect(r.reward).toBeCloseTo(10.9, 12);
    expect(r.terminated).toBe(true);
    expect(r.truncated).toBe(false);
    expect(r.info).toMatchObject({ success: true, boxesOnTarget: 1 });
    expect(() => step(env, 'Left')).toThrow(ResetNeededError);
  });

  test('maxSteps truncates (valid no-op moves count, invalid actions do not)', () => {
    const env = SokobanEnv.fromGrid('######\n#PX#O#\n#____#\n######', { maxSteps: 2 });
    expect(step(env, 'Up').truncated).toBe(false);
    expect(step(env, 'fly').truncated).toBe(false);
    const r = step(env, 'Left');
    expect(r.truncated).toBe(true);
    expect(r.terminated).toBe(false);
    expect(() => step(env, 'Down')).toThrow(ResetNeededError);
  });

  test('stepping before reset throws', () => {
    expect(() => new SokobanEnv().step('Up')).toThrow(ResetNeededError);
    expect(() => new SokobanEnv().render()).toThrow(ResetNeededError);
  });

  test('action names match case-insensitively, with surrounding spaces', () => {
    const env = SokobanEnv.fromGrid('######\n#_P_O#\n#_X__#\n######');
    expect(step(env, ' lEFT ').info.actionIsEffective).toBe(true);
    expect(env.render()).toBe('######\n#P__O#\n#_X__#\n######');
  });

  test('an invalid action leaves the state unchanged, rewards 0 and lists the valid names', () => {
    const env = SokobanEnv.fromGrid('######\n#_P_O#\n#_X__#\n######');
    const before = env.render();
    for (const bad of ['', 'Jump', 'Up Up', 'x'.repeat(100_000), 'Ü\u0000\u001b[2J', '上', '🙂']) {
      const r = step(env, bad);
      expect(r.info.actionIsValid).toBe(false);
      expect(r.info.actionIsEffective).toBe(false);
      expect(r.reward).toBe(0);
      expect(r.terminated || r.truncated).toBe(false);
      expect(r.observation).toBe(before);
      expect(r.info.reason).toContain('Up, Down, Left, Right');
      expect(r.info.reason!.length).toBeLessThan(200);
    }
  });
});

describe('Sokoban observations', () => {
  const grid = '######\n#_S__#\n#_X√_#\n#____#\n######';
  const coord =
    'Board size: 5 rows x 6 columns; positions are (row, column), zero-indexed from the top left.\n' +
    'Targets: [(1, 2), (2, 3)]\n' +
    'Boxes: [(2, 2), (2, 3)]\n' +
    'Boxes on target: [(2, 3)]\n' +
    'Player: (1, 2)';

  test('grid format', () => {
    expect(SokobanEnv.fromGrid(grid).render()).toBe(grid);
  });
  test('coord format', () => {
    expect(SokobanEnv.fromGrid(grid, { observationFormat: 'coord' }).render()).toBe(coord);
  });
  test('grid_coord format', () => {
    expect(SokobanEnv.fromGrid(grid, { observationFormat: 'grid_coord' }).render()).toBe(
      `Coordinates:\n${coord}\nGrid:\n${grid}`,
    );
  });
  test('a step observation equals render() after it, in every format', () => {
    for (const observationFormat of ['grid', 'coord', 'grid_coord'] as const) {
      const env = new SokobanEnv({ observationFormat, dimRoom: [7, 7], numBoxes: 2 });
      for (let seed = 0; seed < 5; seed++) {
        env.reset({ seed });
        for (const a of ['Up', 'Left', 'Down', 'Right', 'Up', 'Up', 'Left']) {
          const r = env.step(a);
          expect(r.observation).toBe(env.render());
          if (r.terminated || r.truncated) break;
        }
      }
    }
  });
  test('the default legend names exactly the default symbols', () => {
    expect(new SokobanEnv().legend).toBe(
      'Symbols: # wall, _ floor, O target, √ box on target, X box, P player, S player on target.',
    );
    expect(new SokobanEnv({ observationFormat: 'coord' }).legend).toBe('');
  });
  test("SokobanDifferentGridVocab's legend uses its own symbols, and so does its grid", () => {
    const env = makeEnv('SokobanDifferentGridVocab');
    expect(env.legend).toBe(
      'Symbols: W wall, . floor, G target, C box on target, B box, A player, @ player on target.',
    );
    const used = new Set<string>();
    for (let seed = 0; seed < 50; seed++)
      for (const ch of (env.reset({ seed }) as { observation: string }).observation) used.add(ch);
    used.delete('\n');
    expect([...used].every((ch) => 'W.GCBA@'.includes(ch))).toBe(true);
    expect(used.has('W') && used.has('A') && used.has('B')).toBe(true);
  });
  test('hand-built grids use the env vocabulary', () => {
    const env = SokobanEnv.fromGrid('WWWWW\nWA.GW\nW.B.W\nWWWWW', {
      gridVocab: { wall: 'W', floor: '.', target: 'G', boxOnTarget: 'C', box: 'B', player: 'A', playerOnTarget: '@' },
    });
    expect(env.render()).toBe('WWWWW\nWA.GW\nW.B.W\nWWWWW');
  });
});

describe('Sokoban configuration and input errors', () => {
  test('bad grids name the problem', () => {
    expect(() => SokobanEnv.fromGrid('####\n#PX#\n#__#')).toThrow(/1 boxes but 0 targets/);
    expect(() => SokobanEnv.fromGrid('####\n#PXO\n#__')).toThrow(/row 2 has 3 cells/);
    expect(() => SokobanEnv.fromGrid('####\n#PXO\n#Z_#')).toThrow(/Unknown symbol "Z" at row 2, column 1/);
    expect(() => SokobanEnv.fromGrid('####\n#_XO\n#__#')).toThrow(/exactly one player/);
  });
  test('duplicate vocabulary symbols are a ConfigError', () => {
    expect(() => new SokobanEnv({ gridVocab: { wall: '_' } })).toThrow(ConfigError);
    expect(() => new SokobanEnv({ gridVocab: { box: 'XX' } })).toThrow(/one character/);
  });
  test('unknown reset options are a ConfigError with a suggestion', () => {
    expect(() => new SokobanEnv().reset({ seed: 0, options: { grd: '#' } })).toThrow(/Did you mean `grid`/);
  });
  test('unknown config keys are reported by the registry', () => {
    expect(() => makeEnv('SimpleSokoban', { numBox: 2 })).toThrow(/Did you mean `numBoxes`/);
  });
});
