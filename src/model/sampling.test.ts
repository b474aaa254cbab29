import { describe, expect, it } from 'vitest';
import { Rng } from '../util/index.js';
import { Sampler } from './sampling.js';

const probs = [0.05, 0.5, 0.15, 0.3];
const logits = Float32Array.from(probs.map((p) => Math.log(p) + 2)); // a shift must not matter

function frequencies(settings: { temperature: number; topP: number; topK: number }, n = 20000): number[] {
  const s = new Sampler(4);
  const rng = new Rng(7);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) counts[s.sample(logits, 0, settings, rng).token]!++;
  return counts.map((c) => c / n);
}

describe('Sampler', () => {
  it('greedy takes the argmax and reports its temperature-1 log-prob', () => {
    const r = new Sampler(4).sample(logits, 0, { temperature: 0, topP: 1, topK: 0 }, new Rng(1));
    expect(r.token).toBe(1);
    expect(r.logprob).toBeCloseTo(Math.log(0.5), 6);
  });

  it('samples the softmax at temperature 1', () => {
    const f = frequencies({ temperature: 1, topP: 1, topK: 0 });
    f.forEach((x, i) => expect(Math.abs(x - probs[i]!)).toBeLessThan(0.015));
  });

  it('sharpens with temperature < 1 (p^(1/T) renormalised) but reports untempered log-probs', () => {
    const w = probs.map((p) => p ** 2);
    const z = w.reduce((a, b) => a + b);
    const f = frequencies({ temperature: 0.5, topP: 1, topK: 0 });
    f.forEach((x, i) => expect(Math.abs(x - w[i]! / z)).toBeLessThan(0.015));
    const r = new Sampler(4).sample(logits, 0, { temperature: 0.5, topP: 1, topK: 0 }, new Rng(3));
    expect(r.logprob).toBeCloseTo(Math.log(probs[r.token]!), 6);
  });

  it('top-k keeps the k most likely tokens', () => {
    const f = frequencies({ temperature: 1, topP: 1, topK: 2 });
    expect(f[0]).toBe(0);
    expect(f[2]).toBe(0);
    expect(Math.abs(f[1]! - 0.5 / 0.8)).toBeLessThan(0.015);
  });

  it('top-p keeps the smallest prefix reaching the mass, as Hugging Face does', () => {
    const f = frequencies({ temperature: 1, topP: 0.75, topK: 0 });
    expect(f[0]).toBe(0);
    expect(f[2]).toBe(0);
    expect(Math.abs(f[3]! - 0.3 / 0.8)).toBeLessThan(0.015);
    const g = frequencies({ temperature: 1, topP: 0.81, topK: 0 });
    expect(g[2]).toBeGreaterThan(0.1);
    expect(g[0]).toBe(0);
  });

  it('is deterministic for a seed and reads rows at an offset', () => {
    const two = new Float32Array(8);
    two.set(logits, 4);
    const a = new Sampler(4).sample(two, 4, { temperature: 1, topP: 0.9, topK: 3 }, new Rng(11));
    const b = new Sampler(4).sample(logits, 0, { temperature: 1, topP: 0.9, topK: 3 }, new Rng(11));
    expect(a).toEqual(b);
  });
});
