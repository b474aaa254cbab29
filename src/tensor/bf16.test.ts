import { totalmem } from 'node:os';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../util/index.js';
import {
  backendAvailable,
  Bf16Matrix,
  bf16Paths,
  linear,
  linearBf16,
  loadBackend,
  mul,
  nativeAllocatedBytes,
  setBackend,
  sum,
  tensor,
  type Bf16Path,
} from './index.js';

const hasNative = backendAvailable('native');

function randoms(n: number, rng: Rng): Float32Array {
  return Float32Array.from({ length: n }, () => rng.random() * 2 - 1);
}

/** y = x w^T in float64 from the float32 inputs, and sum |x||w| per output (the scale of its rounding error). */
function reference(x: Float32Array, w: Float32Array, M: number, N: number, K: number) {
  const y = new Float64Array(M * N),
    mag = new Float64Array(M * N);
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++)
      for (let k = 0; k < K; k++) {
        y[m * N + n]! += x[m * K + k]! * w[n * K + k]!;
        mag[m * N + n]! += Math.abs(x[m * K + k]! * w[n * K + k]!);
      }
  return { y, mag };
}

// 2^-8: the relative rounding of one bf16 value (8 significant bits, round to nearest).
const BF16_EPS = 2 ** -8;

describe.runIf(hasNative)('native memory past the 4 GiB arena', () => {
  const need = 4.5 * 2 ** 30;
  // Only a few pages are written, but the host must be able to map (and in the worst case back) the block.
  it.skipIf(totalmem() < 2 * need)(
    `holds a 4.5 GiB bf16 matrix, writes and reads rows past 4 GiB, and frees it (skipped on hosts under ${(2 * need) / 2 ** 30} GiB RAM)`,
    () => {
      const be = loadBackend('native');
      const before = nativeAllocatedBytes(be);
      const cols = 4096,
        rows = need / 2 / cols;
      const m = Bf16Matrix.zeros(rows, cols, be);
      expect(nativeAllocatedBytes(be) - before).toBe(need);
      const last = rows - 2; // bytes from 4.5 GiB - 16 KiB on: past 2^32
      expect(last * cols * 2).toBeGreaterThan(2 ** 32);
      const data = Float32Array.from({ length: 2 * cols }, (_, i) => (i % 7) - 3);
      m.writeRows(last, data);
      m.writeRows(0, data.subarray(0, cols));
      expect(m.readRows(last, 2)).toEqual(data);
      expect(m.readRows(0, 1)).toEqual(data.subarray(0, cols));
      expect(m.readRows(rows / 2, 1).every((v) => v === 0)).toBe(true); // an untouched page reads zero
      m.dispose();
      expect(nativeAllocatedBytes(be)).toBe(before);
    },
  );

  it('refuses rows outside the matrix with a sentence naming the shape', () => {
    const m = Bf16Matrix.zeros(3, 4, loadBackend('native'));
    expect(() => m.writeRows(2, new Float32Array(8))).toThrow(/8 values from row 2 do not fit \[3, 4\]/);
    m.dispose();
    expect(() => m.ptr).toThrow(/after dispose/);
  });
});

describe.runIf(hasNative)('bf16 weights: each GEMM path against the float32 reference', () => {
  const be = hasNative ? loadBackend('native') : null;
  const paths = hasNative ? bf16Paths(be!) : [];
  beforeAll(() => void setBackend('native'));

  it('lists the paths the CPU has, scalar and AVX2 at least', () => {
    expect(paths).toContain('scalar');
    expect(paths).toContain('avx2');
  });

  it('rounds to nearest even when storing', () => {
    // 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one (1); 1 + 3 * 2^-8 rounds up
    const m = Bf16Matrix.fromFloat32(Float32Array.from([1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, 1e-3]), 1, 4, be!);
    expect([...m.readRows()]).toEqual([1, 1 + 2 ** -6, -2.5, Math.fround(0.0009994506835937)]);
    m.dispose();
  });

  // Odd sizes exercise every tail (k not a multiple of 8/16/32, rows not of 4, columns not of 2/4/16/32); the second
  // is large enough to run on several threads.
  for (const [M, N, K] of [
    [7, 37, 45],
    [33, 300, 200],
  ] as const) {
    for (const path of ['scalar', 'avx2', 'avx512', 'avx512bf16'] as Bf16Path[]) {
      it(`${path}: x w^T and g w within bf16 rounding of float32 (M ${M}, N ${N}, K ${K})`, () => {
        if (!paths.includes(path)) return void console.log(`bf16 path ${path}: not on this CPU, not tested`);
        const rng = new Rng(M + N + K);
        const x = randoms(M * K, rng),
          w = randoms(N * K, rng);
        const wb = Bf16Matrix.fromFloat32(w, N, K, be!);
        const xt = tensor(x, [M, K], { requiresGrad: true });
        const y = linearBf16(xt, wb, null, path);
        const got = y.toFloat32Array();
        const { y: want, mag } = reference(x, w, M, N, K);
        // weights rounded once (the dot-product path rounds x too), plus float32 summation
        const tol = (i: number) => (path === 'avx512bf16' ? 2 : 1) * BF16_EPS * mag[i]! + 1e-5 * (1 + mag[i]!);
        let worst = 0;
        for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / tol(i));
        expect(worst).toBeLessThanOrEqual(1);
        // and the error is bf16's, not float32's: the product differs from the float32 one somewhere
        expect(got.some((v, i) => Math.abs(v - want[i]!) > 1e-4 * mag[i]!)).toBe(true);

        // backward: dx = g w against float32 with the same (rounded) weights
        const g = randoms(M * N, rng);
        sum(mul(y, tensor(g, [M, N]))).backward();
        const gx = xt.grad!.toFloat32Array();
        const wr = wb.readRows();
        for (let m = 0; m < M; m++)
          for (let k = 0; k < K; k++) {
            let s = 0,
              a = 0;
            for (let n = 0; n < N; n++) {
              s += g[m * N + n]! * wr[n * K + k]!;
              a += Math.abs(g[m * N + n]! * wr[n * K + k]!);
            }
            expect(Math.abs(gx[m * K + k]! - s)).toBeLessThanOrEqual(1e-5 * (1 + a));
          }
        wb.dispose();
      });
    }
  }

  // avx2 keeps x in float32, so it equals linear() on the rounded weights up to summation order
  it('matches linear() on the rounded float32 weights, bias and gradients included (avx2)', () => {
    const rng = new Rng(5);
    const [M, N, K] = [6, 19, 24];
    const wb = Bf16Matrix.fromFloat32(randoms(N * K, rng), N, K, be!);
    const x = randoms(M * K, rng),
      b = randoms(N, rng);
    const x1 = tensor(x, [2, 3, K], { requiresGrad: true });
    const b1 = tensor(b, [N], { requiresGrad: true });
    const x2 = tensor(x, [2, 3, K], { requiresGrad: true });
    const b2 = tensor(b, [N], { requiresGrad: true });
    const w2 = tensor(wb.readRows(), [N, K]);
    const y1 = linearBf16(x1, wb, b1, 'avx2');
    const y2 = linear(x2, w2, b2);
    expect(y1.shape).toEqual([2, 3, N]);
    const close = (a: Float32Array, c: Float32Array) =>
      a.every((v, i) => Math.abs(v - c[i]!) <= 1e-5 * (1 + Math.abs(c[i]!)));
    expect(close(y1.toFloat32Array(), y2.toFloat32Array())).toBe(true);
    const g = tensor(randoms(M * N, rng), [2, 3, N]);
    sum(mul(y1, g)).backward();
    sum(mul(y2, g)).backward();
    expect(close(x1.grad!.toFloat32Array(), x2.grad!.toFloat32Array())).toBe(true);
    expect(close(b1.grad!.toFloat32Array(), b2.grad!.toFloat32Array())).toBe(true);
    wb.dispose();
  });

  it('refuses an input whose last dim is not the weight width', () => {
    const wb = Bf16Matrix.zeros(4, 8, be!);
    expect(() => linearBf16(tensor(new Float32Array(6), [2, 3]), wb)).toThrow(
      /x \[2,3\] does not fit bf16 weight \[4, 8\]/,
    );
    wb.dispose();
  });
});
