// AdamW against a hand-computed step, gradient clipping, the non-finite check, for every backend.
import { describe, expect, it } from 'vitest';
import { AdamW, clipGradNorm, gradsAreFinite, mul, setBackend, sum, tensor, tidy } from './index.js';
import { testBackend } from './testing.js';

for (const backend of ['js', 'wasm', 'native'] as const) {
  describe.runIf(testBackend(backend))(`optim on ${backend}`, () => {
    it('AdamW takes two steps exactly as the formula says', () => {
      setBackend(backend);
      const p = tensor([1, -2, 0.5], [3], { requiresGrad: true });
      const opt = new AdamW([p], { lr: 0.1, betas: [0.9, 0.99], eps: 1e-8, weightDecay: 0.1 });
      const grads = [
        [0.5, -1, 2],
        [1, 1, -3],
      ];
      // hand-computed in float64
      const x = [1, -2, 0.5],
        m = [0, 0, 0],
        v = [0, 0, 0];
      for (let step = 1; step <= 2; step++) {
        p.grad = tensor(grads[step - 1]!, [3]);
        opt.step();
        opt.zeroGrad();
        for (let i = 0; i < 3; i++) {
          const g = grads[step - 1]![i]!;
          x[i] = x[i]! * (1 - 0.1 * 0.1);
          m[i] = 0.9 * m[i]! + 0.1 * g;
          v[i] = 0.99 * v[i]! + 0.01 * g * g;
          const mhat = m[i]! / (1 - 0.9 ** step),
            vhat = v[i]! / (1 - 0.99 ** step);
          x[i] = x[i]! - (0.1 * mhat) / (Math.sqrt(vhat) + 1e-8);
        }
      }
      const got = p.toFloat32Array();
      for (let i = 0; i < 3; i++) expect(got[i]).toBeCloseTo(x[i]!, 5);
      expect(opt.getState().step).toBe(2);
    });

    it('AdamW state round-trips through getState / setState', () => {
      setBackend(backend);
      const p = tensor([1, 2], [2], { requiresGrad: true });
      const opt = new AdamW([p], { lr: 0.01 });
      p.grad = tensor([0.3, -0.7], [2]);
      opt.step();
      const state = opt.getState();
      const q = tensor([1, 2], [2], { requiresGrad: true });
      const opt2 = new AdamW([q], { lr: 0.01 });
      opt2.setState(state);
      expect(Array.from(opt2.getState().m[0]!)).toEqual(Array.from(state.m[0]!));
      expect(opt2.stepCount).toBe(1);
    });

    it('clipGradNorm returns the total norm and scales gradients to maxNorm', () => {
      setBackend(backend);
      const a = tensor([0, 0], [2], { requiresGrad: true }),
        b = tensor([0], [1], { requiresGrad: true });
      a.grad = tensor([3, 0], [2]);
      b.grad = tensor([4], [1]);
      expect(clipGradNorm([a, b], 1)).toBeCloseTo(5, 5);
      expect(a.grad.toFloat32Array()[0]).toBeCloseTo(0.6, 5);
      expect(b.grad.toFloat32Array()[0]).toBeCloseTo(0.8, 5);
      expect(clipGradNorm([a, b], 10)).toBeCloseTo(1, 5); // under the limit: unchanged
      expect(b.grad.toFloat32Array()[0]).toBeCloseTo(0.8, 5);
    });

    it('gradsAreFinite detects NaN and infinity', () => {
      setBackend(backend);
      const a = tensor([1, 2, 3, 4, 5], [5], { requiresGrad: true });
      a.grad = tensor([1, 2, 3, 4, 5], [5]);
      expect(gradsAreFinite([a])).toBe(true);
      a.grad = tensor([1, 2, 3, 4, NaN], [5]);
      expect(gradsAreFinite([a])).toBe(false);
      a.grad = tensor([Infinity, 2, 3, 4, 5], [5]);
      expect(gradsAreFinite([a])).toBe(false);
    });

    it('a training loop decreases a quadratic loss', () => {
      setBackend(backend);
      const w = tensor([3, -2, 1], [3], { requiresGrad: true });
      const opt = new AdamW([w], { lr: 0.1, weightDecay: 0 });
      const first = tidy(() => sum(mul(w, w)).item());
      for (let i = 0; i < 50; i++)
        tidy(() => {
          sum(mul(w, w)).backward();
          opt.step();
          opt.zeroGrad();
        });
      expect(tidy(() => sum(mul(w, w)).item())).toBeLessThan(first / 10);
    });
  });
}
