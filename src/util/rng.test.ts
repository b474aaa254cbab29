import { describe, expect, test } from 'vitest';
import { Rng } from './rng.js';

describe('Rng', () => {
  test('the same seed gives the same sequence', () => {
    const a = new Rng(42),
      b = new Rng(42);
    for (let i = 0; i < 100; i++) expect(a.nextUint32()).toBe(b.nextUint32());
  });
  test('different seeds give different sequences', () => {
    const a = new Rng(1),
      b = new Rng(2);
    expect([a.nextUint32(), a.nextUint32()]).not.toEqual([b.nextUint32(), b.nextUint32()]);
  });
  test('seeds above 2^32 are distinct from their low 32 bits', () => {
    expect(new Rng(2 ** 32 + 5).nextUint32()).not.toBe(new Rng(5).nextUint32());
  });
  test('random() is uniform in [0, 1)', () => {
    const r = new Rng(7);
    const xs = Array.from({ length: 100_000 }, () => r.random());
    expect(xs.filter((x) => !(x >= 0 && x < 1))).toEqual([]); // one expect: 100k of them took 8 s under load
    expect(Math.abs(xs.reduce((a, b) => a + b, 0) / xs.length - 0.5)).toBeLessThan(0.01);
  });
  test('getState/setState resumes the exact sequence', () => {
    const r = new Rng(3);
    r.nextUint32();
    const s = r.getState();
    const want = [r.nextUint32(), r.nextUint32()];
    r.setState(s);
    expect([r.nextUint32(), r.nextUint32()]).toEqual(want);
  });
  test('int(n) rejects n < 1 with the value in the message', () => {
    expect(() => new Rng(0).int(0)).toThrow(/got 0/);
  });
});
