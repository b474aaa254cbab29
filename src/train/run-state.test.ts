import { describe, expect, it } from 'vitest';
import { RunState } from './run-state.js';

describe('RunState', () => {
  it('saves every registered piece under its key, in registration order', () => {
    let kl = 0.1;
    const ema = { firstTurn: { marginalStd: 2 } };
    const state = new RunState()
      .register('klCoef', { get: () => kl, set: (v: number) => (kl = v) })
      .register('collapseEma', { get: () => ema, set: () => {} });
    kl = 0.25;
    const saved = state.save();
    expect(Object.keys(saved)).toEqual(['klCoef', 'collapseEma']);
    expect(saved).toEqual({ klCoef: 0.25, collapseEma: { firstTurn: { marginalStd: 2 } } });
  });

  it('restores each piece once from a saved object, and a piece an older checkpoint lacks keeps its fresh value', () => {
    let kl = 0.1;
    let streak = 0;
    const state = new RunState()
      .register('klCoef', { get: () => kl, set: (v: number) => (kl = v) })
      .register('emptyStreak', { get: () => streak, set: (v: number) => (streak = v) });
    state.restore({ klCoef: 0.7, optimizerRoles: ['policy'] });
    expect(kl).toBe(0.7);
    expect(streak).toBe(0);
    expect(state.save()).toEqual({ klCoef: 0.7, emptyStreak: 0 });
  });

  it('refuses a key registered twice', () => {
    const state = new RunState().register('logger', { get: () => ({}), set: () => {} });
    expect(() => state.register('logger', { get: () => ({}), set: () => {} })).toThrow(/`logger` is registered twice/);
  });
});
