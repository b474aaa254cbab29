import '../envs/index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { testSandbox } from '../sandbox/testing.js';
import { ResetNeededError } from '../util/index.js';
import { checkEnv, checkRegisteredEnv, EnvCheckError } from './check-env.js';
import type { Env, ResetResult, StepResult } from './core.js';
import { invalidInfo } from './core.js';
import { envSpec, listEnvs } from './index.js';

describe('checkEnv over every registered env', () => {
  test('at least the Bandit and MetamathQA ids are registered', () => {
    const ids = listEnvs().map((e) => e.id);
    expect(ids).toEqual(expect.arrayContaining(['Bandit', 'BanditTest', 'MetamathQA']));
  });
  // Envs that need an outside service (Lean's Kimina server) run checkEnv in their own tests, against a stand-in.
  // DeepCoder judges in the sandbox: skipped without bubblewrap (testSandbox fails CI instead).
  const runnable = listEnvs().filter((e) => !envSpec(e.id).requires && (e.id !== 'DeepCoder' || testSandbox()));
  test.each(runnable.map((e) => e.id))('%s passes checkEnv', async (id) => {
    await checkRegisteredEnv(id, { seeds: [0, 1, 7] });
  });
});

/** A counter env whose flaws are switched on one by one, to show checkEnv catches each. */
class Counter implements Env {
  readonly instruction = 'Count.';
  readonly legend = '';
  readonly actionNames = ['Up', 'Stop'];
  private n = 0;
  private started = false;
  private done = false;
  private calls = 0;
  constructor(private flaw: string = 'none') {}
  reset({ seed }: { seed: number }): ResetResult {
    this.n = this.flaw === 'nondeterministic' ? this.calls++ : seed % 3;
    this.started = true;
    this.done = false;
    return { observation: this.render(), info: { success: false, actionIsValid: true, actionIsEffective: false } };
  }
  step(action: string): StepResult {
    if (this.flaw !== 'no-order' && (!this.started || this.done)) throw new ResetNeededError('reset first');
    if (this.flaw === 'throws-on-long' && action.length > 1000) throw new Error('too long');
    const a = action.trim().toLowerCase();
    if (a !== 'up' && a !== 'stop') {
      if (this.flaw === 'invalid-changes-state') this.n += 100;
      return {
        observation: this.render(),
        reward: 0,
        terminated: false,
        truncated: false,
        info: invalidInfo('not an action'),
      };
    }
    if (a === 'up') this.n++;
    this.done = a === 'stop' || this.n >= 5;
    const reward = this.flaw === 'nan-reward' ? NaN : a === 'up' ? 1 : 0;
    const info = {
      success: this.n >= 5,
      actionIsValid: true,
      actionIsEffective: a === 'up',
      ...(this.flaw === 'object-info' ? { extra: {} as unknown as number } : {}),
    };
    return { observation: this.render(), reward, terminated: this.done, truncated: false, info };
  }
  render(): string {
    return `count ${this.n}`;
  }
  close(): void {}
}

describe('checkEnv', () => {
  test('a conforming env passes', async () => {
    await checkEnv(new Counter(), { make: () => new Counter() });
  });
  test.each([
    ['nondeterministic', /different trajectory/],
    ['no-order', /before the first reset\(\) did not throw/],
    ['throws-on-long', /threw Error: too long/],
    ['invalid-changes-state', /changed render\(\)/],
    ['nan-reward', /reward NaN is not a finite number/],
    ['object-info', /info.extra is a object/],
  ])('catches the flaw %s', async (flaw, message) => {
    const err = await checkEnv(new Counter(flaw)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvCheckError);
    expect((err as Error).message).toMatch(message);
  });
});
