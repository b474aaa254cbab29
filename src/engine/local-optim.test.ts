import { describe, expect, it } from 'vitest';
import { getBackend, keep, tensor, type Tensor } from '../tensor/index.js';
import { RoleOptimizer } from './local-optim.js';

/** Two parameters with the given gradients, and how often the backend ran its element-wise finiteness check. */
function setup(grads: number[][]) {
  const params = grads.map((g) => {
    const p = keep(
      tensor(
        Float32Array.from(g, (_, i) => 0.5 + i),
        [g.length],
        { requiresGrad: true },
      ),
    );
    p.grad = keep(tensor(Float32Array.from(g), [g.length]));
    return p;
  });
  const opt = new RoleOptimizer(
    'policy',
    params.map((p, i): [string, Tensor] => [`w${i}`, p]),
  );
  const backend = getBackend();
  const allFinite = backend.allFinite.bind(backend);
  const checks = { n: 0 };
  backend.allFinite = (x, n) => {
    checks.n++;
    return allFinite(x, n);
  };
  const restore = () => {
    backend.allFinite = allFinite;
  };
  return { params, opt, checks, restore };
}

describe('RoleOptimizer', () => {
  it('updates finite gradients after one pass over them (the norm proves them finite)', () => {
    const { params, opt, checks, restore } = setup([
      [3, 0],
      [0, 4],
    ]);
    try {
      const before = params.map((p) => p.toFloat32Array());
      const r = opt.step({ lr: 0.1, maxGradNorm: 1 });
      expect(r).toEqual({ gradNorm: expect.closeTo(5, 5), skipped: false });
      expect(checks.n).toBe(0);
      params.forEach((p, i) => expect(p.toFloat32Array()).not.toEqual(before[i]));
    } finally {
      restore();
    }
  });

  it.each([
    ['NaN', Number.NaN],
    ['an infinity', Number.POSITIVE_INFINITY],
    ['a negative infinity', Number.NEGATIVE_INFINITY],
  ])('skips the update on a gradient holding %s', (_, bad) => {
    const { params, opt, checks, restore } = setup([
      [1, 2],
      [3, bad],
    ]);
    try {
      const before = params.map((p) => p.toFloat32Array());
      const r = opt.step({ lr: 0.1, maxGradNorm: 1 });
      expect(r.skipped).toBe(true);
      expect(Number.isFinite(r.gradNorm)).toBe(false);
      expect(checks.n).toBeGreaterThan(0);
      params.forEach((p, i) => {
        expect(p.toFloat32Array()).toEqual(before[i]);
        expect(p.grad).toBeNull();
      });
    } finally {
      restore();
    }
  });
});
