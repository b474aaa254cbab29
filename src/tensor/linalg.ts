// matmul (any transpose, batched over leading dims, a 2-D operand broadcast) and linear (HF weight layout).

import { ShapeError } from '../util/index.js';
import type { Backend, Buf } from './backend.js';
import { add, backendOf } from './ops.js';
import { Tensor, attach } from './tensor.js';

export interface MatmulOptions {
  /** Use a's last two dims transposed. @default false */
  transA?: boolean;
  /** Use b's last two dims transposed. @default false */
  transB?: boolean;
}

/** C = op(A) op(B) per batch item; strides 0 broadcast an operand; reduce sums all items into one C. */
function gemmInto(
  be: Backend,
  tA: boolean,
  tB: boolean,
  A: Buf,
  B: Buf,
  C: Buf,
  M: number,
  N: number,
  K: number,
  batch: number,
  sA: number,
  sB: number,
  sC: number,
  reduce: boolean,
): void {
  if (reduce && batch > 1) {
    be.fill(C, 0, 0, M * N);
    be.gemm({
      transA: tA,
      transB: tB,
      M,
      N,
      K,
      a: A,
      b: B,
      c: C,
      batch,
      strideA: sA,
      strideB: sB,
      strideC: 0,
      alpha: 1,
      accumulate: true,
    });
  } else {
    be.gemm({
      transA: tA,
      transB: tB,
      M,
      N,
      K,
      a: A,
      b: B,
      c: C,
      batch,
      strideA: sA,
      strideB: sB,
      strideC: sC,
      alpha: 1,
      accumulate: false,
    });
  }
}

/** Matrix product over the last two dims; leading dims are batch dims (equal, or one operand 2-D). */
export function matmul(a: Tensor, b: Tensor, opts: MatmulOptions = {}): Tensor {
  const tA = opts.transA ?? false,
    tB = opts.transB ?? false;
  if (a.ndim < 2 || b.ndim < 2)
    throw new ShapeError(`matmul: both operands need >= 2 dims, got [${a.shape}] and [${b.shape}]`);
  const [ar, ac] = a.shape.slice(-2) as [number, number];
  const [br, bc] = b.shape.slice(-2) as [number, number];
  const M = tA ? ac : ar,
    K = tA ? ar : ac,
    Kb = tB ? bc : br,
    N = tB ? br : bc;
  if (K !== Kb)
    throw new ShapeError(
      `matmul: inner dims differ: [${a.shape}]${tA ? '^T' : ''} x [${b.shape}]${tB ? '^T' : ''} (${K} vs ${Kb})`,
    );
  const batchA = a.shape.slice(0, -2),
    batchB = b.shape.slice(0, -2);
  const nA = batchA.reduce((p, d) => p * d, 1),
    nB = batchB.reduce((p, d) => p * d, 1);
  const be = backendOf(a, b);
  let Mg = M,
    batch: number,
    sA: number,
    sB: number,
    outBatch: number[];
  if (batchB.length === 0 && !tA) {
    Mg = M * nA; // fold a's batch into rows: one big gemm
    batch = 1;
    sA = 0;
    sB = 0;
    outBatch = batchA;
  } else if (batchB.length === 0) {
    batch = nA;
    sA = M * K;
    sB = 0;
    outBatch = batchA;
  } else if (batchA.length === 0) {
    batch = nB;
    sA = 0;
    sB = K * N;
    outBatch = batchB;
  } else if (batchA.length === batchB.length && batchA.every((d, i) => d === batchB[i])) {
    batch = nA;
    sA = M * K;
    sB = K * N;
    outBatch = batchA;
  } else {
    throw new ShapeError(
      `matmul: batch dims [${batchA}] and [${batchB}] differ (they must be equal, or one operand 2-D)`,
    );
  }
  const out = Tensor.empty([...outBatch, M, N], be);
  const sC = Mg * N;
  gemmInto(be, tA, tB, a.buf, b.buf, out.buf, Mg, N, K, batch, sA, sB, sC, false);
  return attach(out, 'matmul', [a, b], (g) => {
    let ga: Tensor | null = null,
      gb: Tensor | null = null;
    if (a.requiresGrad) {
      ga = Tensor.empty(a.shape, be);
      if (!tA) gemmInto(be, false, !tB, g.buf, b.buf, ga.buf, Mg, K, N, batch, sC, sB, sA, sA === 0);
      else gemmInto(be, tB, true, b.buf, g.buf, ga.buf, K, Mg, N, batch, sB, sC, sA, sA === 0);
    }
    if (b.requiresGrad) {
      gb = Tensor.empty(b.shape, be);
      if (!tB) gemmInto(be, !tA, false, a.buf, g.buf, gb.buf, K, N, Mg, batch, sA, sC, sB, sB === 0);
      else gemmInto(be, true, tA, g.buf, a.buf, gb.buf, N, K, Mg, batch, sC, sA, sB, sB === 0);
    }
    return [ga, gb];
  });
}

/** y = x w^T + bias, with HF's weight layout w: (out, in); x (..., in) -> (..., out). */
export function linear(x: Tensor, w: Tensor, bias?: Tensor | null): Tensor {
  if (w.ndim !== 2 || x.shape[x.ndim - 1] !== w.shape[1])
    throw new ShapeError(
      `linear: x [${x.shape}] does not fit weight [${w.shape}] (expected w: (out, in) with in = ${x.shape[x.ndim - 1]})`,
    );
  const y = matmul(x, w, { transB: true });
  if (!bias) return y;
  const out = add(y, bias);
  if (!y.requiresGrad) y.dispose(); // in a graph, y stays until backward has run (tidy frees it)
  return out;
}
