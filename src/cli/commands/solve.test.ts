import { afterEach, describe, expect, test, vi } from 'vitest';
import { envSpec, makeEnv, registerEnv, resolveEnvConfig, type StepResult } from '../../env/index.js';
import type { SolveRecord } from './solve.js';
import { runCli } from '../testing.js';

const run = runCli;

afterEach(() => vi.restoreAllMocks());

/** Plays `actions` on a fresh env for `seed` and says whether the episode ended in success. */
function succeeds(id: string, seed: number, actions: string[], config: Record<string, unknown> = {}): boolean {
  const env = makeEnv(id, config);
  env.reset({ seed });
  let last: StepResult | undefined;
  for (const a of actions) {
    last = env.step(a) as StepResult;
    if (last.terminated || last.truncated) break;
  }
  return last?.info.success === true;
}

describe('ragen solve on a slippery lake', () => {
  test('reports solved: false with a reason when a slip defeats the plan, instead of calling it a solver bug', async () => {
    const solved: boolean[] = [];
    for (let seed = 0; seed < 30; seed++) {
      const { code, out } = await run('solve', 'FrozenLake', '--seed', String(seed), '--json');
      expect(code).toBe(0);
      const rec = JSON.parse(out) as SolveRecord;
      expect(rec.solved, `seed ${seed}`).toBe(succeeds('FrozenLake', seed, rec.actions));
      if (!rec.solved) expect(rec.reason).toMatch(/chance defeated the solver's plan/);
      else expect(rec.reason).toBeUndefined();
      solved.push(rec.solved);
    }
    expect(solved).toContain(true);
    expect(solved).toContain(false);
  });
  test('the text output says "not solved" and why', async () => {
    let seed = 0;
    const config = resolveEnvConfig('FrozenLake');
    while (succeeds('FrozenLake', seed, envSpec('FrozenLake').solve!(config, seed)!)) seed++;
    const { code, out } = await run('solve', 'FrozenLake', '--seed', String(seed));
    expect(code).toBe(0);
    expect(out).toMatch(new RegExp(`FrozenLake seed ${seed}: not solved, return 0: chance defeated`));
  });
  test('without slipping the same lakes are always solved', async () => {
    for (let seed = 0; seed < 30; seed++) {
      for (const argv of [['CoordFrozenLake'], ['FrozenLake', '--config', 'successRate=1']]) {
        const rec = JSON.parse((await run('solve', ...argv, '--seed', String(seed), '--json')).out) as SolveRecord;
        expect(rec).toMatchObject({ solved: true, return: 1 });
      }
    }
  });
});

describe('ragen solve on a deterministic env', () => {
  test('actions that do not solve it are still reported as a solver bug', async () => {
    registerEnv('BrokenSolverTest', {
      ...envSpec('SimpleSokoban'),
      description: 'Sokoban with a solver that gives up.',
      solve: () => ['Up'],
    });
    await expect(run('solve', 'BrokenSolverTest', '--seed', '0')).rejects.toThrow(/bug in the solver/);
  });
});
