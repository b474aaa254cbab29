import '../index.js';
import { describe, expect, test } from 'vitest';
import { Rng } from '../../util/index.js';
import { envSpec, makeEnv, resolveEnvConfig } from '../../env/index.js';
import type { StepResult } from '../../env/index.js';
import { SokobanGenerator } from './generate.js';
import { solveSokoban } from './solve.js';
import { SokobanEnv } from './sokoban-env.js';

const IDS = ['SimpleSokoban', 'LargerSokoban', 'SokobanDifferentGridVocab', 'CoordSokoban'];

describe('Sokoban room generation', () => {
  test('the same seed gives the same room, different seeds different rooms', () => {
    for (const id of IDS) {
      const a = makeEnv(id);
      const b = makeEnv(id);
      const seen = new Set<string>();
      for (let seed = 0; seed < 20; seed++) {
        const obs = (a.reset({ seed }) as StepResult).observation;
        expect((b.reset({ seed }) as StepResult).observation).toBe(obs);
        seen.add(obs);
      }
      expect(seen.size).toBeGreaterThanOrEqual(18);
    }
  });

  test('resetting does not depend on what happened before', () => {
    const env = makeEnv('SimpleSokoban');
    const fresh = (env.reset({ seed: 7 }) as StepResult).observation;
    env.reset({ seed: 8 });
    env.step('Up');
    expect((env.reset({ seed: 7 }) as StepResult).observation).toBe(fresh);
  });

  test('rooms have border walls, as many boxes as targets, and one player', () => {
    const env = new SokobanEnv({ dimRoom: [8, 8], numBoxes: 2 });
    for (let seed = 0; seed < 50; seed++) {
      env.reset({ seed });
      const { layout, boxes } = env.room();
      const grid = env.render().split('\n');
      expect(grid).toHaveLength(8);
      expect(grid[0]).toBe('########');
      expect(grid[7]).toBe('########');
      for (const row of grid) expect(row[0]! + row[7]!).toBe('##');
      expect(layout.targets.length).toBe(2);
      expect(new Set(boxes).size).toBe(2);
    }
  });

  for (const id of ['SimpleSokoban', 'LargerSokoban']) {
    test(`${id}: 200 rooms are all solvable, none already solved, optimal length = the generator's depth`, () => {
      const config = resolveEnvConfig(id) as { dimRoom: [number, number]; numBoxes: number; searchDepth: number };
      const generator = new SokobanGenerator();
      const rng = new Rng(0);
      const lengths: number[] = [];
      for (let seed = 0; seed < 200; seed++) {
        rng.seed(seed);
        const room = generator.generate(rng, {
          rows: config.dimRoom[0],
          cols: config.dimRoom[1],
          numBoxes: config.numBoxes,
          searchDepth: config.searchDepth,
        });
        const solution = solveSokoban(room);
        expect(solution, `seed ${seed}`).toBeDefined();
        expect(solution!.length).toBeGreaterThanOrEqual(1);
        expect(solution!.length).toBe(room.solutionLength);
        expect(solution!.length).toBeLessThanOrEqual(config.searchDepth);
        lengths.push(solution!.length);
      }
      // A spread of difficulties, mostly within RAGEN's 10-action episodes.
      const within = lengths.filter((n) => n >= 2 && n <= 10).length;
      expect(within / lengths.length).toBeGreaterThan(0.8);
      expect(new Set(lengths).size).toBeGreaterThanOrEqual(6);
    });
  }
});

describe('Sokoban solver', () => {
  for (const id of IDS) {
    test(`${id}: the solver's actions solve 200 seeds through step()`, () => {
      const spec = envSpec(id);
      const config = resolveEnvConfig(id);
      const env = makeEnv(id);
      for (let seed = 0; seed < 200; seed++) {
        env.reset({ seed });
        const actions = spec.solve!(config, seed)!;
        let last: StepResult | undefined;
        for (const a of actions) {
          expect(last?.terminated ?? false).toBe(false);
          last = env.step(a) as StepResult;
          expect(last.info.actionIsEffective).toBe(true);
        }
        expect(last!.terminated, `seed ${seed}`).toBe(true);
        expect(last!.info.success).toBe(true);
      }
    });
  }

  test('returns [] for a solved room and undefined for an unsolvable one', () => {
    expect(SokobanEnv.fromGrid('#####\n#P√_#\n#####').solution()).toEqual([]);
    // The box is stuck in a corner away from the target.
    expect(SokobanEnv.fromGrid('#####\n#X_P#\n#__O#\n#####').solution()).toBeUndefined();
  });

  test('finds the known optimum of hand-built rooms', () => {
    expect(SokobanEnv.fromGrid('#######\n#PX__O#\n#_____#\n#######').solution()).toEqual(['Right', 'Right', 'Right']);
    // The player first steps over the box, then pushes it down.
    expect(SokobanEnv.fromGrid('######\n#P___#\n#_X__#\n#_O__#\n######').solution()).toEqual(['Right', 'Down']);
  });
});
