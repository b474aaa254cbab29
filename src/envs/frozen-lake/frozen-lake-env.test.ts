import '../index.js';
import { describe, expect, test } from 'vitest';
import { ConfigError, ResetNeededError } from '../../util/index.js';
import { envSpec, makeEnv, resolveEnvConfig } from '../../env/index.js';
import type { StepResult } from '../../env/index.js';
import { FrozenLakeEnv } from './frozen-lake-env.js';
import { HOLE, shortestPath } from './lake.js';

const still = { isSlippery: false };

describe('FrozenLake rules on hand-built lakes', () => {
  test('a hole ends the episode with reward 0', () => {
    const env = FrozenLakeEnv.fromMap('SH\nFG', still);
    const r = env.step('Right');
    expect(r).toMatchObject({ reward: 0, terminated: true, truncated: false, observation: '_X\n_G' });
    expect(r.info).toMatchObject({ success: false, actionIsValid: true, actionIsEffective: true });
    expect(() => env.step('Left')).toThrow(ResetNeededError);
  });

  test('the goal gives +1 and ends the episode with success', () => {
    const env = FrozenLakeEnv.fromMap('SF\nHG', still);
    expect(env.step('Right')).toMatchObject({ reward: 0, terminated: false, observation: '_P\nOG' });
    const r = env.step('Down');
    expect(r).toMatchObject({ reward: 1, terminated: true, observation: '__\nO√' });
    expect(r.info.success).toBe(true);
  });

  test('moving off the edge stays in place and is not effective', () => {
    const env = FrozenLakeEnv.fromMap('SF\nFG', still);
    const r = env.step('Up');
    expect(r.info).toMatchObject({ actionIsValid: true, actionIsEffective: false });
    expect(r.observation).toBe('P_\n_G');
  });

  test('maxSteps truncates; invalid actions do not count', () => {
    const env = FrozenLakeEnv.fromMap('SF\nFG', { ...still, maxSteps: 2 });
    expect(env.step('Up').truncated).toBe(false);
    expect(env.step('jump').truncated).toBe(false);
    const r = env.step('Left');
    expect(r).toMatchObject({ truncated: true, terminated: false });
    expect(() => env.step('Down')).toThrow(ResetNeededError);
  });

  test('stepping before reset throws', () => {
    expect(() => new FrozenLakeEnv().step('Up')).toThrow(ResetNeededError);
  });

  test('invalid or hostile action text never throws and changes nothing', () => {
    const env = FrozenLakeEnv.fromMap('FFF\nFSF\nFFG');
    const before = env.render();
    for (const bad of ['', 'north', 'x'.repeat(100_000), '\u0000\u0007\u001b', 'Ле́во', '🙂🙂']) {
      const r = env.step(bad);
      expect(r).toMatchObject({ reward: 0, terminated: false, truncated: false, observation: before });
      expect(r.info.actionIsValid).toBe(false);
      expect(r.info.reason).toContain('Left, Down, Right, Up');
    }
    expect(env.step(' dOwN ').info.actionIsValid).toBe(true);
  });

  test('a slip moves perpendicular, each way with probability (1 - successRate) / 2', () => {
    const map = 'FFF\nFSF\nFFG';
    const env = new FrozenLakeEnv({ successRate: 0.8 });
    const counts: Record<string, number> = {};
    let firstSlip: StepResult | undefined;
    const N = 20_000;
    for (let seed = 0; seed < N; seed++) {
      env.reset({ seed, options: { map } });
      const r = env.step('Up');
      counts[r.observation] = (counts[r.observation] ?? 0) + 1;
      if (r.info.slipped && !firstSlip) firstSlip = r;
    }
    // Up from the centre: intended (0, 1); slips to (1, 0) or (1, 2).
    expect(Object.keys(counts).sort()).toEqual(['_P_\n___\n__G', '___\nP__\n__G', '___\n__P\n__G'].sort());
    expect(counts['_P_\n___\n__G']! / N).toBeCloseTo(0.8, 1);
    expect(Math.abs(counts['___\nP__\n__G']! / N - 0.1)).toBeLessThan(0.01);
    expect(Math.abs(counts['___\n__P\n__G']! / N - 0.1)).toBeLessThan(0.01);
    expect(firstSlip!.observation).not.toBe('_P_\n___\n__G');
    expect(firstSlip!.info.actionIsEffective).toBe(true);
  });

  test('successRate 1 and isSlippery false never slip', () => {
    for (const config of [{ successRate: 1 }, { isSlippery: false, successRate: 0.1 }]) {
      const env = new FrozenLakeEnv(config);
      for (let seed = 0; seed < 500; seed++) {
        env.reset({ seed, options: { map: 'FFF\nFSF\nFFG' } });
        expect(env.step('Up').observation).toBe('_P_\n___\n__G');
      }
    }
  });
});

describe('FrozenLake observations and text', () => {
  const map = 'SFFF\nFHFH\nFFFH\nHFFG';
  const grid = 'P___\n_O_O\n___O\nO__G';
  const coord =
    'Board size: 4 rows x 4 columns; positions are (row, column), zero-indexed from the top left.\n' +
    'Goal: (3, 3)\nHoles: [(1, 1), (1, 3), (2, 3), (3, 0)]\nPlayer: (0, 0)';
  test('grid, coord and grid_coord golden strings', () => {
    expect(FrozenLakeEnv.fromMap(map).render()).toBe(grid);
    expect(FrozenLakeEnv.fromMap(map, { observationFormat: 'coord' }).render()).toBe(coord);
    expect(FrozenLakeEnv.fromMap(map, { observationFormat: 'grid_coord' }).render()).toBe(
      `Coordinates:\n${coord}\nGrid:\n${grid}`,
    );
  });
  test('the legend names exactly the grid symbols', () => {
    const legend = new FrozenLakeEnv().legend;
    expect(legend).toBe('Symbols: P player, _ frozen ice, O hole, G goal, X player in a hole, √ player on the goal.');
    const env = makeEnv('FrozenLake');
    for (let seed = 0; seed < 50; seed++) {
      for (const ch of (env.reset({ seed }) as StepResult).observation.replace(/\n/g, ''))
        expect('P_OGX√').toContain(ch);
    }
  });
  test('the instruction states the real board size and coordinate range', () => {
    const env = new FrozenLakeEnv({ size: 6, observationFormat: 'grid_coord' });
    env.reset({ seed: 1 });
    expect(env.instruction).toContain('6 rows and 6 columns');
    expect(env.instruction).toContain('(5, 5) at the bottom right');
    expect(env.instruction).toContain('slippery');
    expect(makeEnv('CoordFrozenLake').instruction).not.toContain('slippery');
    expect(makeEnv('CoordFrozenLake').instruction).toContain('(3, 3)');
  });
  test('bad maps and configs are ConfigErrors', () => {
    expect(() => FrozenLakeEnv.fromMap('SFF\nFG')).toThrow(/row 1 has 2 cells/);
    expect(() => FrozenLakeEnv.fromMap('SF\nFF')).toThrow(/exactly one S and one G/);
    expect(() => FrozenLakeEnv.fromMap('SZ\nFG')).toThrow(/Unknown FrozenLake map letter "Z"/);
    expect(() => new FrozenLakeEnv({ p: 0 })).toThrow(ConfigError);
    expect(() => makeEnv('FrozenLake', { succesRate: 1 })).toThrow(/Did you mean `successRate`/);
  });
});

describe('FrozenLake generation and solver', () => {
  test('same seed and same actions give the same trajectory (slips included)', () => {
    const a = makeEnv('FrozenLake');
    const b = makeEnv('FrozenLake');
    const actions = ['Right', 'Down', 'Down', 'Right', 'Left', 'Down', 'Right', 'Up'];
    let slips = 0;
    for (let seed = 0; seed < 100; seed++) {
      expect((a.reset({ seed }) as StepResult).observation).toBe((b.reset({ seed }) as StepResult).observation);
      for (const action of actions) {
        const ra = a.step(action) as StepResult;
        expect(b.step(action)).toEqual(ra);
        if (ra.info.slipped) slips++;
        if (ra.terminated || ra.truncated) break;
      }
    }
    expect(slips).toBeGreaterThan(0);
  });

  test('200 maps all have a safe path, distinct start and goal, a frozen start', () => {
    const env = new FrozenLakeEnv();
    const maps = new Set<string>();
    for (let seed = 0; seed < 200; seed++) {
      env.reset({ seed });
      const { map, player } = env.state();
      expect(map.start).toBe(player);
      expect(map.start).not.toBe(map.goal);
      expect(map.tiles[map.start]).not.toBe(HOLE);
      expect(shortestPath(map, map.start)!.length).toBeGreaterThan(0);
      maps.add(env.render());
    }
    expect(maps.size).toBeGreaterThan(190);
  });

  test("CoordFrozenLake: the solver's actions reach the goal for 200 seeds through step()", () => {
    const spec = envSpec('CoordFrozenLake');
    const config = resolveEnvConfig('CoordFrozenLake');
    const env = makeEnv('CoordFrozenLake');
    for (let seed = 0; seed < 200; seed++) {
      env.reset({ seed });
      const actions = spec.solve!(config, seed)!;
      let last: StepResult | undefined;
      for (const action of actions) last = env.step(action) as StepResult;
      expect(last!.terminated, `seed ${seed}`).toBe(true);
      expect(last!.reward).toBe(1);
      expect(last!.info.success).toBe(true);
    }
  });

  test('steps at well over 50,000 per second', () => {
    const env = makeEnv('FrozenLake');
    const names = env.actionNames!;
    const t0 = process.cpuUsage();
    let seed = 0;
    env.reset({ seed });
    for (let i = 0; i < 50_000; i++) {
      const r = env.step(names[i & 3]!) as StepResult;
      if (r.terminated || r.truncated) env.reset({ seed: ++seed });
    }
    const used = process.cpuUsage(t0);
    expect((used.user + used.system) / 1e6).toBeLessThan(1);
  });
});
