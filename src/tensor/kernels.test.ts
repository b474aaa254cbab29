// Fast backends' kernels against the reference kernels on random inputs: odd sizes (not multiples of
// the SIMD width or the gemm tiles), every transpose, batched, and sizes large enough to use both threads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../util/index.js';
import type { Backend, Buf, UnaryOp } from './backend.js';
import { UNARY_OPS } from './backend.js';
import { loadBackend } from './index.js';
import type { IsaPath } from './native-addon.js';
import type { NativeBackend } from './native-backend.js';
import { nativeIsaPaths, testBackend } from './testing.js';

const ref = loadBackend('js');

/** The same random data on the reference and the backend under test. */
function pair(be: Backend, n: number, rng: Rng, gen: () => number = () => rng.normal()): [Buf, Buf] {
  const data = Float32Array.from({ length: n }, gen);
  const r = ref.alloc(n),
    b = be.alloc(n);
  ref.write(r, data);
  be.write(b, data);
  return [r, b];
}

function relErr(be: Backend, r: Buf, b: Buf, n = r.length): number {
  const x = ref.read(r, 0, n),
    y = be.read(b, 0, n);
  let mx = 0,
    err = 0;
  for (let i = 0; i < n; i++) mx = Math.max(mx, Math.abs(x[i]!));
  for (let i = 0; i < n; i++) err = Math.max(err, Math.abs(x[i]! - y[i]!));
  if (!Number.isFinite(err)) return Infinity;
  return err / Math.max(mx, 1e-6);
}

// The native backend once per instruction-set path it dispatches to at run time (native/isa.h): each path present on
// this host runs every case; a path the cores lack is skipped, its reason in the name.
const variants: { name: 'wasm' | 'native'; path?: IsaPath; skip: string | null }[] = [
  { name: 'wasm', skip: testBackend('wasm') ? null : 'not built' },
  ...nativeIsaPaths().map((p) => ({ name: 'native' as const, ...p })),
];
if (!testBackend('native')) variants.push({ name: 'native', skip: 'not built' });

for (const { name, path, skip } of variants) {
  const title = `${name}${path ? ` (${path} path)` : ''} kernels match the reference${skip ? ` (skipped: ${skip})` : ''}`;
  describe.skipIf(skip !== null)(title, () => {
    const be = skip === null ? loadBackend(name) : ref;
    const rng = new Rng(42);
    if (path) {
      const native = be as NativeBackend;
      beforeAll(() => {
        expect(native.setIsa(path)).toBe(path);
      });
      afterAll(() => {
        native.setIsa('avx512');
      });
    }

    const gemmShapes: [number, number, number, number][] = [
      [1, 1, 1, 1],
      [3, 5, 7, 1],
      [37, 53, 71, 1],
      [64, 515, 259, 1],
      [7, 260, 33, 2],
      [64, 1030, 256, 1],
      [3, 9, 13, 1],
      [130, 67, 300, 1],
      [64, 1030, 33, 1],
      [260, 96, 96, 1],
      [5, 9, 17, 3],
      [128, 128, 64, 4],
      [515, 130, 260, 1], // rows split over the two threads
      [600, 40, 700, 1], // the same with B narrower than two AVX-512 panels
    ];
    for (const [M, N, K, batch] of gemmShapes)
      for (const tA of [false, true])
        for (const tB of [false, true])
          it(`gemm ${M}x${N}x${K} batch ${batch} transA=${tA} transB=${tB}`, () => {
            const [ar, ab] = pair(be, batch * M * K, rng),
              [br, bb] = pair(be, batch * K * N, rng),
              [cr, cb] = pair(be, batch * M * N + 3, rng);
            for (const accumulate of [false, true]) {
              const args = {
                transA: tA,
                transB: tB,
                M,
                N,
                K,
                batch,
                strideA: M * K,
                strideB: K * N,
                strideC: M * N,
                alpha: 0.5,
                accumulate,
                offC: 3,
              };
              ref.gemm({ ...args, a: ar, b: br, c: cr });
              be.gemm({ ...args, a: ab, b: bb, c: cb });
              expect(relErr(be, cr, cb)).toBeLessThan(1e-5);
            }
          });

    it('gemm with a broadcast operand summed into one output (strideC 0)', () => {
      const [M, N, K, batch] = [33, 40, 20, 3];
      const [ar, ab] = pair(be, batch * M * K, rng),
        [br, bb] = pair(be, K * N, rng),
        [cr, cb] = pair(be, M * N, rng);
      const args = {
        transA: false,
        transB: false,
        M,
        N,
        K,
        batch,
        strideA: M * K,
        strideB: 0,
        strideC: 0,
        alpha: 1,
        accumulate: true,
      };
      ref.gemm({ ...args, a: ar, b: br, c: cr });
      be.gemm({ ...args, a: ab, b: bb, c: cb });
      expect(relErr(be, cr, cb)).toBeLessThan(1e-5);
    });

    for (const n of [7, 1003, 200_003])
      it(`elementwise and unary kernels, n=${n}`, () => {
        const [xr, xb] = pair(be, n, rng, () => 0.3 + 2 * rng.random()); // positive: log and sqrt defined
        const [gr, gb] = pair(be, n, rng);
        const [orr, ob] = pair(be, n, rng);
        for (const op of UNARY_OPS as readonly UnaryOp[]) {
          ref.unary(op, xr, orr, n);
          be.unary(op, xb, ob, n);
          expect(relErr(be, orr, ob), op).toBeLessThan(2e-6);
          const [dr, db] = pair(be, n, rng);
          ref.unaryBackward(op, xr, orr, gr, dr, n);
          be.unaryBackward(op, xb, ob, gb, db, n);
          expect(relErr(be, dr, db), `${op} backward`).toBeLessThan(2e-6);
        }
        for (const [m, inner] of [
          [n, 1],
          [1, 1],
          [1, n],
        ] as const) {
          for (const op of ['add', 'sub', 'mul', 'div'] as const) {
            ref.binary(op, gr, xr, orr, n, m, inner);
            be.binary(op, gb, xb, ob, n, m, inner);
            expect(relErr(be, orr, ob), `${op} m=${m}`).toBeLessThan(1e-6);
          }
        }
        ref.swiglu(gr, xr, orr, n);
        be.swiglu(gb, xb, ob, n);
        expect(relErr(be, orr, ob)).toBeLessThan(2e-6);
        const [d2r, d2b] = pair(be, n, rng),
          [d3r, d3b] = pair(be, n, rng);
        ref.swigluBackward(orr, gr, xr, d2r, d3r, n);
        be.swigluBackward(ob, gb, xb, d2b, d3b, n);
        expect(relErr(be, d2r, d2b)).toBeLessThan(2e-6);
        expect(relErr(be, d3r, d3b)).toBeLessThan(2e-6);
        ref.axpy(-0.7, gr, orr, n);
        be.axpy(-0.7, gb, ob, n);
        expect(relErr(be, orr, ob)).toBeLessThan(1e-6);
        ref.affine(gr, orr, n, 1.5, -0.25);
        be.affine(gb, ob, n, 1.5, -0.25);
        expect(relErr(be, orr, ob)).toBeLessThan(1e-6);
        const ss = ref.sumSquares(gr, n);
        expect(Math.abs(be.sumSquares(gb, n) - ss) / ss).toBeLessThan(1e-5);
        expect(be.allFinite(gb, n)).toBe(true);
        be.fill(gb, NaN, n - 1, 1);
        expect(be.allFinite(gb, n)).toBe(false);
      });

    it('broadcast binary and its reductions on (rows, cols) with odd sizes', () => {
      const [R, C] = [97, 131];
      const [ar, ab] = pair(be, R * C, rng),
        [rowr, rowb] = pair(be, C, rng),
        [colr, colb] = pair(be, R, rng);
      const [orr, ob] = pair(be, R * C, rng),
        [sr, sb] = pair(be, C, rng),
        [s2r, s2b] = pair(be, R, rng);
      ref.binary('mul', ar, rowr, orr, R * C, C, 1);
      be.binary('mul', ab, rowb, ob, R * C, C, 1);
      expect(relErr(be, orr, ob)).toBeLessThan(1e-6);
      ref.binary('sub', ar, colr, orr, R * C, R, C);
      be.binary('sub', ab, colb, ob, R * C, R, C);
      expect(relErr(be, orr, ob)).toBeLessThan(1e-6);
      ref.reduceBroadcast(ar, orr, sr, R * C, C, 1);
      be.reduceBroadcast(ab, ob, sb, R * C, C, 1);
      expect(relErr(be, sr, sb)).toBeLessThan(1e-5);
      ref.reduceBroadcast(ar, null, s2r, R * C, R, C);
      be.reduceBroadcast(ab, null, s2b, R * C, R, C);
      expect(relErr(be, s2r, s2b)).toBeLessThan(1e-5);
      const [wr, wb] = pair(be, R * C, rng); // same shape: the gradient of a residual add's second input
      for (const a of [null, 'a'] as const) {
        ref.reduceBroadcast(ar, a && orr, wr, R * C, R * C, 1);
        be.reduceBroadcast(ab, a && ob, wb, R * C, R * C, 1);
        expect(relErr(be, wr, wb), `same shape, a ${a}`).toBeLessThan(1e-6);
      }
      ref.sumAxis(ar, sr, 1, R, C);
      be.sumAxis(ab, sb, 1, R, C);
      expect(relErr(be, sr, sb)).toBeLessThan(1e-5);
      ref.sumAxis(ar, s2r, R, C, 1);
      be.sumAxis(ab, s2b, R, C, 1);
      expect(relErr(be, s2r, s2b)).toBeLessThan(1e-5);
      ref.expandAxis(s2r, orr, R, C, 1, 0.5);
      be.expandAxis(s2b, ob, R, C, 1, 0.5);
      expect(relErr(be, orr, ob)).toBeLessThan(1e-6);
      ref.expandAxis(sr, orr, 1, R, C, 2);
      be.expandAxis(sb, ob, 1, R, C, 2);
      expect(relErr(be, orr, ob)).toBeLessThan(1e-6);
      ref.permute(ar, orr, [1, R, 1, C], [0, 3, 2, 1]);
      be.permute(ab, ob, [1, R, 1, C], [0, 3, 2, 1]);
      expect(relErr(be, orr, ob)).toBeLessThan(1e-7);
      ref.copyBlock(ar, 5, C, orr, 2, C, R - 1, C - 7, true);
      be.copyBlock(ab, 5, C, ob, 2, C, R - 1, C - 7, true);
      expect(relErr(be, orr, ob)).toBeLessThan(1e-6);
    });

    for (const [rows, C] of [
      [3, 7],
      [257, 2051],
    ] as const)
      it(`row kernels (softmax, log-softmax, logprob, entropy, rmsNorm) on ${rows}x${C}`, () => {
        const [xr, xb] = pair(be, rows * C, rng, () => 3 * rng.normal());
        const [yr, yb] = pair(be, rows * C, rng),
          [gr, gb] = pair(be, rows * C, rng),
          [dr, db] = pair(be, rows * C, rng);
        for (const log of [false, true]) {
          ref.softmax(xr, yr, rows, C, log);
          be.softmax(xb, yb, rows, C, log);
          expect(relErr(be, yr, yb), 'softmax').toBeLessThan(1e-5);
          ref.softmaxBackward(yr, gr, dr, rows, C, log);
          be.softmaxBackward(yb, gb, db, rows, C, log);
          expect(relErr(be, dr, db), 'softmax backward').toBeLessThan(1e-5);
        }
        const targets = Int32Array.from({ length: rows }, () => rng.int(C));
        const [or, ob] = pair(be, rows, rng),
          [lr, lb] = pair(be, rows, rng),
          [g1r, g1b] = pair(be, rows, rng);
        ref.logprobTarget(xr, targets, or, lr, rows, C);
        be.logprobTarget(xb, targets, ob, lb, rows, C);
        expect(relErr(be, or, ob)).toBeLessThan(1e-5);
        ref.logprobTargetBackward(g1r, xr, targets, lr, dr, rows, C);
        be.logprobTargetBackward(g1b, xb, targets, lb, db, rows, C);
        expect(relErr(be, dr, db)).toBeLessThan(1e-5);
        ref.entropy(xr, or, lr, rows, C);
        be.entropy(xb, ob, lb, rows, C);
        expect(relErr(be, or, ob)).toBeLessThan(1e-5);
        ref.entropyBackward(g1r, xr, lr, or, dr, rows, C);
        be.entropyBackward(g1b, xb, lb, ob, db, rows, C);
        expect(relErr(be, dr, db)).toBeLessThan(1e-5);
        const [wr, wb] = pair(be, C, rng),
          [rr, rb] = pair(be, rows, rng),
          [dwr, dwb] = pair(be, C, rng);
        ref.rmsNorm(xr, wr, yr, rr, rows, C, 1e-6);
        be.rmsNorm(xb, wb, yb, rb, rows, C, 1e-6);
        expect(relErr(be, yr, yb)).toBeLessThan(1e-5);
        ref.rmsNormBackward(gr, xr, wr, rr, dr, dwr, rows, C);
        be.rmsNormBackward(gb, xb, wb, rb, db, dwb, rows, C);
        expect(relErr(be, dr, db)).toBeLessThan(1e-5);
        expect(relErr(be, dwr, dwb)).toBeLessThan(1e-5);
      });

    it('embedding forward and backward, rope with shared and per-sequence positions', () => {
      const [V, C, N] = [50, 67, 31];
      const ids = Int32Array.from({ length: N }, () => rng.int(V));
      const [wr, wb] = pair(be, V * C, rng),
        [or, ob] = pair(be, N * C, rng);
      ref.embedding(wr, ids, or, C);
      be.embedding(wb, ids, ob, C);
      expect(relErr(be, or, ob)).toBe(0);
      ref.embeddingBackward(or, ids, wr, C);
      be.embeddingBackward(ob, ids, wb, C);
      expect(relErr(be, wr, wb)).toBeLessThan(1e-6);
      // the second shape is big enough to split over two threads; D / 2 = 34 and 33 leave vector tails
      for (const [B, H, T, D] of [
        [2, 3, 5, 68],
        [4, 5, 64, 66],
      ] as const) {
        const [xr, xb] = pair(be, B * H * T * D, rng),
          [yr, yb] = pair(be, B * H * T * D, rng);
        for (const pos of [
          Int32Array.from({ length: T }, (_, t) => t),
          Int32Array.from({ length: B * T }, () => rng.int(600)),
        ])
          for (const inverse of [false, true]) {
            ref.rope(xr, yr, B, H, T, D, pos, 10000, inverse);
            be.rope(xb, yb, B, H, T, D, pos, 10000, inverse);
            expect(relErr(be, yr, yb)).toBeLessThan(1e-5);
          }
      }
    });

    it('permute: the attention head transposes (contiguous rows) and a strided one, big enough for two threads', () => {
      const shape = [8, 128, 4, 33];
      const n = shape.reduce((a, b) => a * b, 1);
      const [xr, xb] = pair(be, n, rng),
        [yr, yb] = pair(be, n, rng);
      for (const perm of [
        [0, 2, 1, 3],
        [0, 2, 3, 1],
        [1, 0, 2, 3],
      ]) {
        ref.permute(xr, yr, shape, perm);
        be.permute(xb, yb, shape, perm);
        expect(relErr(be, yr, yb), perm.join(',')).toBe(0);
      }
    });

    for (const d of [
      { B: 2, Hq: 4, Hkv: 2, T: 13, S: 13, D: 9, offset: 0 },
      { B: 3, Hq: 2, Hkv: 1, T: 1, S: 17, D: 8, offset: 16 },
      { B: 8, Hq: 4, Hkv: 2, T: 64, S: 64, D: 32, offset: 0 },
      // odd sizes past the micro-kernels' tiles: a prefill chunk after cached keys, a head wider than two panels, and
      // padded sequences (masked keys inside and at the end, a first row that sees no key) over both threads
      { B: 2, Hq: 6, Hkv: 2, T: 37, S: 53, D: 24, offset: 16 },
      { B: 1, Hq: 3, Hkv: 3, T: 41, S: 41, D: 67, offset: 0 },
      { B: 3, Hq: 2, Hkv: 1, T: 130, S: 130, D: 16, offset: 0 },
    ])
      it(`attention forward and backward B${d.B} Hq${d.Hq} Hkv${d.Hkv} T${d.T} S${d.S} D${d.D}`, () => {
        const dims = { ...d, scale: 1 / Math.sqrt(d.D) };
        const nq = d.B * d.Hq * d.T * d.D,
          nk = d.B * d.Hkv * d.S * d.D,
          np = d.B * d.Hq * d.T * d.S;
        const [qr, qb] = pair(be, nq, rng),
          [kr, kb] = pair(be, nk, rng),
          [vr, vb] = pair(be, nk, rng);
        const [or, ob] = pair(be, nq, rng),
          [pr, pb] = pair(be, np, rng),
          [gr, gb] = pair(be, nq, rng);
        const masked = (b: number, s: number): boolean =>
          d.T === 1 ? (b * d.S + s) % 5 === 0 : d.T === 130 && (s % 7 === 0 || (b === 1 && s >= d.S - 9));
        const keyValid =
          d.T === 1 || d.T === 130
            ? Int32Array.from({ length: d.B * d.S }, (_, i) => (masked(Math.floor(i / d.S), i % d.S) ? 0 : 1))
            : null;
        ref.attention(qr, kr, vr, or, pr, dims, keyValid);
        be.attention(qb, kb, vb, ob, pb, dims, keyValid);
        expect(relErr(be, or, ob)).toBeLessThan(1e-5);
        expect(relErr(be, pr, pb)).toBeLessThan(1e-5);
        const [dqr, dqb] = pair(be, nq, rng),
          [dkr, dkb] = pair(be, nk, rng),
          [dvr, dvb] = pair(be, nk, rng);
        ref.attentionBackward(gr, qr, kr, vr, pr, dqr, dkr, dvr, dims);
        be.attentionBackward(gb, qb, kb, vb, pb, dqb, dkb, dvb, dims);
        expect(relErr(be, dqr, dqb)).toBeLessThan(1e-5);
        expect(relErr(be, dkr, dkb)).toBeLessThan(1e-5);
        expect(relErr(be, dvr, dvb)).toBeLessThan(1e-5);
      });

    it('adamw on a large parameter (threaded split)', () => {
      const n = 100_003;
      const [pr, pb] = pair(be, n, rng),
        [gr, gb] = pair(be, n, rng);
      const [mr, mb] = pair(be, n, rng, () => 0),
        [vr, vb] = pair(be, n, rng, () => 0);
      for (let t = 1; t <= 3; t++) {
        const h = {
          lr: 1e-2,
          beta1: 0.9,
          beta2: 0.999,
          eps: 1e-8,
          weightDecay: 0.1,
          bc1: 1 - 0.9 ** t,
          bc2: 1 - 0.999 ** t,
        };
        ref.adamw(pr, gr, mr, vr, n, h);
        be.adamw(pb, gb, mb, vb, n, h);
      }
      expect(relErr(be, pr, pb)).toBeLessThan(1e-6);
      expect(relErr(be, vr, vb)).toBeLessThan(1e-6);
    });
  });
}
