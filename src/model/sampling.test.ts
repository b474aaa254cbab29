import { describe, expect, it } from 'vitest';
import { Rng } from '../util/index.js';
import { argmax, Sampler } from './sampling.js';

const probs = Float32Array.from([0.05, 0.5, 0.15, 0.3]);

function frequencies(row: Float32Array, settings: { topP: number; topK: number }, n = 20000): number[] {
  const s = new Sampler(4);
  const rng = new Rng(7);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) counts[s.pick(row, 0, settings, rng)]!++;
  return counts.map((c) => c / n);
}

describe('Sampler', () => {
  it('argmax takes the first largest entry at an offset', () => {
    expect(argmax(Float32Array.from([9, 1, 3, 3]), 1, 3)).toBe(1);
  });

  it('samples the given distribution', () => {
    const f = frequencies(probs, { topP: 1, topK: 0 });
    f.forEach((x, i) => expect(Math.abs(x - probs[i]!)).toBeLessThan(0.015));
  });

  it('top-k keeps the k most likely tokens, renormalised', () => {
    const f = frequencies(probs, { topP: 1, topK: 2 });
    expect(f[0]).toBe(0);
    expect(f[2]).toBe(0);
    expect(Math.abs(f[1]! - 0.5 / 0.8)).toBeLessThan(0.015);
  });

  it('top-p keeps the smallest prefix reaching the mass, as Hugging Face does', () => {
    const f = frequencies(probs, { topP: 0.75, topK: 0 });
    expect(f[0]).toBe(0);
    expect(f[2]).toBe(0);
    expect(Math.abs(f[3]! - 0.3 / 0.8)).toBeLessThan(0.015);
    const g = frequencies(probs, { topP: 0.81, topK: 0 });
    expect(g[2]).toBeGreaterThan(0.1);
    expect(g[0]).toBe(0);
  });

  it('top-k then top-p applies the nucleus to the renormalised top-k mass', () => {
    // top-2 leaves {0.5, 0.3} (mass 0.8); top-p 0.6 of that is 0.48 -> only the 0.5 token
    const f = frequencies(probs, { topP: 0.6, topK: 2 });
    expect(f[1]).toBe(1);
  });

  it('is deterministic for a seed and reads rows at an offset', () => {
    const two = new Float32Array(8);
    two.set(probs, 4);
    const a = Array.from({ length: 20 }, (_, i) => new Sampler(4).pick(two, 4, { topP: 0.9, topK: 3 }, new Rng(i)));
    const b = Array.from({ length: 20 }, (_, i) => new Sampler(4).pick(probs, 0, { topP: 0.9, topK: 3 }, new Rng(i)));
    expect(a).toEqual(b);
    expect(new Set(a).size).toBeGreaterThan(1);
  });

  it('a normalized row samples the same tokens without summing its mass', () => {
    const s = new Sampler(4);
    for (let seed = 0; seed < 50; seed++)
      expect(s.pick(probs, 0, { topP: 1, topK: 0 }, new Rng(seed), true)).toBe(
        s.pick(probs, 0, { topP: 1, topK: 0 }, new Rng(seed)),
      );
  });

  it('never picks a zero-probability token', () => {
    const row = Float32Array.from([0, 1, 0, 0]);
    expect(frequencies(row, { topP: 1, topK: 0 }, 500)).toEqual([0, 1, 0, 0]);
  });
});
