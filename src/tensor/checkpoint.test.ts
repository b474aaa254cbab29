import { beforeAll, describe, expect, it } from 'vitest';
import { checkpoint } from './checkpoint.js';
import { add, matmul, mul, randn, setBackend, silu, sum, tensor, tidy, type Tensor } from './index.js';
import { Rng } from '../util/index.js';

/** A two-output segment of an input x and a weight w: (silu(x w), x w * x w). */
const segment = (w: Tensor) => (x: Tensor) => {
  const y = matmul(x, w);
  return [silu(y), mul(y, y)];
};

function run(useCheckpoint: boolean, useSecond: boolean) {
  const rng = new Rng(1);
  const x0 = randn([3, 4], rng, 1, { requiresGrad: true });
  const w = randn([4, 4], rng, 0.5, { requiresGrad: true });
  const v = randn([4, 2], rng, 0.5, { requiresGrad: true });
  const loss = tidy(() => {
    const x = mul(x0, x0); // an op before the segment: the gradient must flow back through it
    const [a, b] = useCheckpoint ? checkpoint(segment(w), [x], [w]) : segment(w)(x);
    const out = useSecond ? add(matmul(a!, v), matmul(b!, v)) : matmul(a!, v);
    const l = sum(mul(out, tensor([1, -2, 3, 0.5, -1, 2], [3, 2])));
    l.backward();
    return l.item();
  });
  return { loss, gx: x0.grad!.toFloat32Array(), gw: w.grad!.toFloat32Array(), gv: v.grad!.toFloat32Array() };
}

describe('checkpoint', () => {
  beforeAll(() => setBackend('js64'));

  for (const useSecond of [true, false])
    it(`gives the plain graph's value and gradients (${useSecond ? 'both outputs used' : 'one output unused'})`, () => {
      const plain = run(false, useSecond);
      const ckpt = run(true, useSecond);
      expect(ckpt.loss).toBeCloseTo(plain.loss, 12);
      for (const k of ['gx', 'gw', 'gv'] as const) {
        expect(plain[k].some((g) => g !== 0)).toBe(true);
        plain[k].forEach((g, i) => expect(ckpt[k][i]).toBeCloseTo(g, 10));
      }
    });

  it('records nothing and keeps no intermediates when nothing needs a gradient', () => {
    const w = randn([4, 4], new Rng(2));
    const x = randn([3, 4], new Rng(3));
    const outs = checkpoint(segment(w), [x], [w]);
    expect(outs.every((o) => o.node === null && !o.requiresGrad)).toBe(true);
  });
});
