import '../envs/index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { ResetNeededError } from '../util/index.js';
import type { Env, ResetResult, StepResult } from './core.js';
import { makeEnv } from './index.js';
import { EpisodeStatistics, OrderEnforcing, TimeLimit, Wrapper } from './wrappers.js';
import { wrapEnv } from './wrap-env.js';

/** An env that never ends, never checks call order, and pays 0.5 per step; optionally async. */
class Endless implements Env {
  readonly instruction = 'Walk.';
  readonly legend = '';
  readonly actionNames = ['Step', 'Finish'];
  steps = 0;
  constructor(private readonly async = false) {}
  reset(): ResetResult | Promise<ResetResult> {
    this.steps = 0;
    const r = { observation: 'start', info: { success: false, actionIsValid: true, actionIsEffective: false } };
    return this.async ? Promise.resolve(r) : r;
  }
  step(action: string): StepResult | Promise<StepResult> {
    this.steps++;
    const finish = action === 'Finish';
    const r = {
      observation: `at ${this.steps}`,
      reward: 0.5,
      terminated: finish,
      truncated: false,
      info: { success: finish, actionIsValid: true, actionIsEffective: true },
    };
    return this.async ? Promise.resolve(r) : r;
  }
  render(): string {
    return `at ${this.steps}`;
  }
  close(): void {}
}

describe('OrderEnforcing', () => {
  test('step before reset throws ResetNeededError saying to call reset', () => {
    const env = new OrderEnforcing(new Endless());
    expect(() => env.step('Step')).toThrow(ResetNeededError);
    expect(() => env.step('Step')).toThrow(/before reset/);
  });
  test('step after the episode terminated throws until the next reset', () => {
    const env = new OrderEnforcing(new Endless());
    env.reset({ seed: 0 });
    expect((env.step('Finish') as StepResult).terminated).toBe(true);
    expect(() => env.step('Step')).toThrow(/after the episode ended/);
    env.reset({ seed: 0 });
    expect((env.step('Step') as StepResult).observation).toBe('at 1');
  });
  test('works over an async env', async () => {
    const env = new OrderEnforcing(new Endless(true));
    await env.reset({ seed: 0 });
    await env.step('Finish');
    expect(() => env.step('Step')).toThrow(ResetNeededError);
  });
});

describe('TimeLimit', () => {
  test('sets truncated, not terminated, on the maxActions-th step', () => {
    const env = new TimeLimit(new Endless(), 3);
    env.reset({ seed: 0 });
    const r = [1, 2, 3].map(() => env.step('Step') as StepResult);
    expect(r.map((x) => x.truncated)).toEqual([false, false, true]);
    expect(r.map((x) => x.terminated)).toEqual([false, false, false]);
    expect(env.actionsTaken).toBe(3);
  });
  test('does not mark truncated when the env terminated on the last allowed step', () => {
    const env = new TimeLimit(new Endless(), 1);
    env.reset({ seed: 0 });
    const r = env.step('Finish') as StepResult;
    expect([r.terminated, r.truncated]).toEqual([true, false]);
  });
  test('the count restarts at reset', () => {
    const env = new TimeLimit(new Endless(), 2);
    env.reset({ seed: 0 });
    env.step('Step');
    env.reset({ seed: 0 });
    expect((env.step('Step') as StepResult).truncated).toBe(false);
  });
  test('rejects a cap below 1 with the value in the message', () => {
    expect(() => new TimeLimit(new Endless(), 0)).toThrow(/got 0/);
  });
});

describe('EpisodeStatistics', () => {
  test('adds return, length and success at the end of the episode only', async () => {
    const env = new EpisodeStatistics(new Endless(true));
    await env.reset({ seed: 0 });
    const mid = await env.step('Step');
    expect(mid.info.episodeReturn).toBeUndefined();
    const last = await env.step('Finish');
    expect(last.info).toMatchObject({ episodeReturn: 1, episodeLength: 2, episodeSuccess: true });
  });
});

describe('wrapEnv and makeEnv', () => {
  test('a time limit inside statistics inside order enforcing', () => {
    const env = wrapEnv(new Endless(), { maxActions: 2, episodeStatistics: true });
    env.reset({ seed: 0 });
    env.step('Step');
    const r = env.step('Step') as StepResult;
    expect(r.truncated).toBe(true);
    expect(r.info).toMatchObject({ episodeLength: 2, episodeSuccess: false });
    expect(() => env.step('Step')).toThrow(ResetNeededError);
    expect((env as Wrapper).unwrapped).toBeInstanceOf(Endless);
  });
  test('makeEnv wraps only when asked to', () => {
    expect(makeEnv('Bandit')).not.toBeInstanceOf(Wrapper);
    const env = makeEnv('Bandit', {}, { episodeStatistics: true });
    expect(env).toBeInstanceOf(Wrapper);
    env.reset({ seed: 1 });
    expect(env.actionNames).toHaveLength(2);
    const r = env.step(env.actionNames![0]!) as StepResult;
    expect(r.info.episodeLength).toBe(1);
  });
});
