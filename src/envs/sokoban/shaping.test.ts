// RAGEN's newer Sokoban options (its PR #160): reward shaping by box-target distance, a no-op penalty, the success-only
// reward, and the solution-length curriculum.
import { describe, expect, test } from 'vitest';
import { SokobanEnv } from './sokoban-env.js';

const step = (env: SokobanEnv, a: string) => env.step(a);

describe('Sokoban reward shaping', () => {
  test('distanceRewardCoeff adds (distance before − distance after) × coeff to the step reward', () => {
    // Box at column 2, target at column 5 (same row): distance 3. Right pushes it to column 3: distance 2.
    // Reward = −0.1 + (3 − 2)·0.5 = 0.4. Then Left moves the player away: the box stays, distance unchanged: −0.1.
    const env = SokobanEnv.fromGrid('#######\n#PX__O#\n#_____#\n#######', { distanceRewardCoeff: 0.5 });
    expect(step(env, 'Right').reward).toBeCloseTo(0.4, 12);
    expect(step(env, 'Left').reward).toBeCloseTo(-0.1, 12);
  });

  test('the distance is to each box’s nearest target, summed over boxes', () => {
    // Boxes (1,2) and (2,2); targets (1,5) and (2,3): nearest distances 2 (to (2,3)) and 1, sum 3. Pushing the lower
    // box Right puts it on (2,3): distances 2 and 0, sum 2. Reward −0.1 + 1 (box on target) + (3 − 2)·1 = 1.9.
    const env = SokobanEnv.fromGrid('#######\n#_X__O#\n#PXO__#\n#######', { distanceRewardCoeff: 1 });
    expect(step(env, 'Right').reward).toBeCloseTo(1.9, 12);
  });

  test('noOpPenalty is added when a valid action leaves the player in place, not on invalid actions', () => {
    const env = SokobanEnv.fromGrid('######\n#PX#O#\n#____#\n######', { noOpPenalty: -0.3 });
    expect(step(env, 'Up').reward).toBeCloseTo(-0.4, 12); // into the wall: −0.1 − 0.3
    expect(step(env, 'Jump').reward).toBe(0); // invalid: no step, no penalty
    expect(step(env, 'Down').reward).toBeCloseTo(-0.1, 12); // moved
  });

  test('ignoreGymReward pays successReward on success and 0 otherwise; the shaping terms still add', () => {
    const env = SokobanEnv.fromGrid('#######\n#PX_O_#\n#_____#\n#######', { ignoreGymReward: true, successReward: 2 });
    expect(step(env, 'Right').reward).toBe(0);
    expect(step(env, 'Right').reward).toBe(2);
    const shaped = SokobanEnv.fromGrid('#######\n#PX_O_#\n#_____#\n#######', {
      ignoreGymReward: true,
      distanceRewardCoeff: 0.25,
      noOpPenalty: -1,
    });
    expect(step(shaped, 'Right').reward).toBeCloseTo(0.25, 12);
    expect(step(shaped, 'Up').reward).toBe(-1);
  });

  test('every option defaults off: the gym rewards are unchanged', () => {
    const env = SokobanEnv.fromGrid('######\n#PXO_#\n#____#\n######');
    expect(step(env, 'Right').reward).toBeCloseTo(10.9, 12);
  });
});

describe('Sokoban solution-length curriculum (minSolutionSteps)', () => {
  test('every generated room’s shortest solution lies in the range, deterministically per seed', () => {
    const cfg = { minSolutionSteps: [1, 3] as [number, number], searchDepth: 5 };
    for (let seed = 0; seed < 8; seed++) {
      const env = new SokobanEnv(cfg);
      env.reset({ seed });
      const n = env.solution()!.length;
      expect(n).toBeGreaterThanOrEqual(1);
      expect(n).toBeLessThanOrEqual(3);
      const again = new SokobanEnv(cfg);
      again.reset({ seed });
      expect(again.render()).toBe(env.render());
    }
  });

  test('says so when no room in the range turns up within maxResetTries', () => {
    const env = new SokobanEnv({ minSolutionSteps: [50, 60], searchDepth: 3, maxResetTries: 5 });
    expect(() => env.reset({ seed: 1 })).toThrow(/no room whose shortest solution has 50-60 moves in 5 tries/);
  });

  test('refuses a reversed range', () => {
    expect(() => new SokobanEnv({ minSolutionSteps: [4, 2] })).toThrow(/minSolutionSteps/);
  });
});
