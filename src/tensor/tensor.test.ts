// Autograd mechanics and lifetimes: seeds, accumulation, noGrad, tidy, errors with the values in them.
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/index.js';
import * as T from './index.js';
import { testBackend } from './testing.js';

describe('autograd', () => {
  it('backward on a non-scalar needs a seed gradient and uses it', () => {
    T.setBackend('js');
    const x = T.tensor([1, 2, 3], [3], { requiresGrad: true });
    const y = T.mul(x, x);
    expect(() => y.backward()).toThrow(/seed gradient is required/);
    y.backward(T.tensor([1, 0, 2], [3]));
    expect(Array.from(x.grad!.toFloat32Array())).toEqual([2, 0, 12]);
  });

  it('gradients accumulate across backward calls until cleared', () => {
    T.setBackend('js');
    const x = T.tensor([2], [1], { requiresGrad: true });
    T.sum(T.scale(x, 3)).backward();
    T.sum(T.scale(x, 3)).backward();
    expect(x.grad!.item()).toBe(6);
  });

  it('a tensor used twice gets both contributions', () => {
    T.setBackend('js');
    const x = T.tensor([1.5], [1], { requiresGrad: true });
    T.sum(T.add(x, x)).backward();
    expect(x.grad!.item()).toBe(2);
  });

  it('noGrad records no graph', () => {
    T.setBackend('js');
    const x = T.tensor([1], [1], { requiresGrad: true });
    const y = T.noGrad(() => T.exp(x));
    expect(y.requiresGrad).toBe(false);
    expect(() => y.backward()).toThrow(/does not require grad/);
  });

  it('detach cuts the graph but shares data', () => {
    T.setBackend('js');
    const x = T.tensor([1, 2], [2], { requiresGrad: true });
    const d = T.exp(x).detach();
    expect(d.requiresGrad).toBe(false);
    expect(d.toFloat32Array()[1]).toBeCloseTo(Math.exp(2), 5);
  });

  it('shape errors name the shapes', () => {
    T.setBackend('js');
    const a = T.zeros([2, 3]),
      b = T.zeros([4, 5]);
    expect(() => T.matmul(a, b)).toThrow(/\[2,3\].*\[4,5\]/);
    expect(() => T.add(a, T.zeros([2]))).toThrow(/do not broadcast/);
    expect(() => a.reshape(5, -1)).toThrow(/cannot view shape \[2,3\]/);
    expect(() => T.embedding(T.zeros([4, 2]), Int32Array.from([4]))).toThrow(/outside \[0, 4\)/);
  });

  it('an unknown backend name suggests the nearest one', () => {
    expect(() => T.setBackend('wasn' as T.BackendName)).toThrow(/Did you mean `wasm`/);
  });
});

for (const backend of ['js', 'wasm', 'native'] as const) {
  describe.runIf(testBackend(backend))(`lifetimes on ${backend}`, () => {
    it('1,000 tidy training steps do not grow the number of live tensors', () => {
      T.setBackend(backend);
      const rng = new Rng(3);
      const w = T.randn([16, 8], rng, 0.1, { requiresGrad: true });
      const opt = new T.AdamW([w]);
      const x = T.randn([4, 8], rng);
      const before = T.liveTensors();
      let after1 = 0;
      let reservedAfter10: number | null = null;
      for (let i = 0; i < 1000; i++) {
        T.tidy(() => {
          const q = T.rope(T.linear(x, w).reshape(1, 1, 4, 16), Int32Array.from([0, 1, 2, 3]));
          const att = T.causalAttention(q, q, q).reshape(4, 16);
          T.crossEntropy(T.rmsNorm(att, T.ones([16])), Int32Array.from([1, 2, 3, 4])).backward();
          opt.step();
          opt.zeroGrad();
        });
        if (i === 0) after1 = T.liveTensors();
        if (i === 10) reservedAfter10 = T.memoryStats().arenaReserved;
      }
      expect(after1).toBe(before);
      expect(T.liveTensors()).toBe(before);
      // the arena (wasm, native) reuses freed blocks: no growth after warm-up
      expect(T.memoryStats().arenaReserved).toBe(reservedAfter10);
    });

    it('tidy keeps what it returns and frees the rest', () => {
      T.setBackend(backend);
      const before = T.liveTensors();
      const kept = T.tidy(() => {
        const a = T.ones([3]);
        return T.add(a, a);
      });
      expect(T.liveTensors()).toBe(before + 1);
      expect(Array.from(kept.toFloat32Array())).toEqual([2, 2, 2]);
      kept.dispose();
      expect(T.liveTensors()).toBe(before);
      expect(() => kept.toFloat32Array()).toThrow(/disposed/);
    });
  });
}
