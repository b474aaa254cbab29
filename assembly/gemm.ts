// Packed GEMM (Goto/BLIS loop order) with a 4x8 f32x4 micro-kernel:
// C = alpha * op(A) op(B) (+ C when accumulate), op = optional transpose, all row-major with leading dims.
import { madd } from './simd';

const MR: i32 = 4;
const NR: i32 = 8;
const KC: i32 = 256;
const MC: i32 = 128;
const NC: i32 = 1024;

/** Bytes of packing scratch one thread needs. */
export function gemmScratchBytes(): i32 {
  return (MC * KC + KC * NC + MR * NR) * 4;
}

// @ts-ignore: decorator
@inline function packA(transA: i32, a: usize, lda: i32, i0: i32, mc: i32, k0: i32, kc: i32, pa: usize): void {
  for (let ir = 0; ir < mc; ir += MR) {
    const rows = min(MR, mc - ir);
    const dst = pa + <usize>(ir * kc) * 4;
    if (transA) {
      for (let k = 0; k < kc; k++) {
        const src = a + (<usize>(k0 + k) * lda + i0 + ir) * 4;
        const d = dst + <usize>(k * MR) * 4;
        if (rows == MR) v128.store(d, v128.load(src));
        else for (let r = 0; r < MR; r++) store<f32>(d + (r << 2), r < rows ? load<f32>(src + (r << 2)) : 0);
      }
    } else {
      for (let r = 0; r < MR; r++) {
        if (r < rows) {
          const src = a + (<usize>(i0 + ir + r) * lda + k0) * 4;
          for (let k = 0; k < kc; k++) store<f32>(dst + <usize>(k * MR + r) * 4, load<f32>(src + (<usize>k << 2)));
        } else {
          for (let k = 0; k < kc; k++) store<f32>(dst + <usize>(k * MR + r) * 4, 0);
        }
      }
    }
  }
}

// @ts-ignore: decorator
@inline function packB(transB: i32, b: usize, ldb: i32, j0: i32, nc: i32, k0: i32, kc: i32, pb: usize): void {
  for (let jr = 0; jr < nc; jr += NR) {
    const cols = min(NR, nc - jr);
    const dst = pb + <usize>(jr * kc) * 4;
    if (!transB) {
      for (let k = 0; k < kc; k++) {
        const src = b + (<usize>(k0 + k) * ldb + j0 + jr) * 4;
        const d = dst + <usize>(k * NR) * 4;
        if (cols == NR) {
          v128.store(d, v128.load(src));
          v128.store(d, v128.load(src, 16), 16);
        } else {
          for (let c = 0; c < NR; c++) store<f32>(d + (c << 2), c < cols ? load<f32>(src + (c << 2)) : 0);
        }
      }
    } else {
      for (let c = 0; c < NR; c++) {
        if (c < cols) {
          const src = b + (<usize>(j0 + jr + c) * ldb + k0) * 4;
          for (let k = 0; k < kc; k++) store<f32>(dst + <usize>(k * NR + c) * 4, load<f32>(src + (<usize>k << 2)));
        } else {
          for (let k = 0; k < kc; k++) store<f32>(dst + <usize>(k * NR + c) * 4, 0);
        }
      }
    }
  }
}

// @ts-ignore: decorator
@inline function storeRow(c: usize, lo: v128, hi: v128, alpha: v128, beta: i32): void {
  if (beta) {
    v128.store(c, madd(lo, alpha, v128.load(c)));
    v128.store(c, madd(hi, alpha, v128.load(c, 16)), 16);
  } else {
    v128.store(c, f32x4.mul(lo, alpha));
    v128.store(c, f32x4.mul(hi, alpha), 16);
  }
}

/** One MR x NR tile: C[0:m, 0:n] (= or +=) alpha * pa pb over kc. */
function micro(kc: i32, pa: usize, pb: usize, c: usize, ldc: i32, m: i32, n: i32, alpha: f32, beta: i32, tile: usize): void {
  let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c30 = f32x4.splat(0), c31 = f32x4.splat(0);
  for (let k = 0; k < kc; k++) {
    const b0 = v128.load(pb), b1 = v128.load(pb, 16);
    let a = v128.load32_splat(pa);
    c00 = madd(a, b0, c00); c01 = madd(a, b1, c01);
    a = v128.load32_splat(pa, 4);
    c10 = madd(a, b0, c10); c11 = madd(a, b1, c11);
    a = v128.load32_splat(pa, 8);
    c20 = madd(a, b0, c20); c21 = madd(a, b1, c21);
    a = v128.load32_splat(pa, 12);
    c30 = madd(a, b0, c30); c31 = madd(a, b1, c31);
    pa += 16;
    pb += 32;
  }
  const al = f32x4.splat(alpha);
  const rs = <usize>ldc * 4;
  if (m == MR && n == NR) {
    storeRow(c, c00, c01, al, beta);
    storeRow(c + rs, c10, c11, al, beta);
    storeRow(c + 2 * rs, c20, c21, al, beta);
    storeRow(c + 3 * rs, c30, c31, al, beta);
    return;
  }
  storeRow(tile, c00, c01, al, 0);
  storeRow(tile + 32, c10, c11, al, 0);
  storeRow(tile + 64, c20, c21, al, 0);
  storeRow(tile + 96, c30, c31, al, 0);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      const dst = c + <usize>i * rs + (<usize>j << 2);
      const v = load<f32>(tile + <usize>(i * NR + j) * 4);
      store<f32>(dst, beta ? load<f32>(dst) + v : v);
    }
}

/** C (M x N, ldc) = alpha * op(A) op(B) (+ C if accumulate). A(i,k) = transA ? a[k*lda+i] : a[i*lda+k]. */
export function gemm(transA: i32, transB: i32, M: i32, N: i32, K: i32, a: usize, lda: i32, b: usize, ldb: i32,
  c: usize, ldc: i32, alpha: f32, accumulate: i32, scratch: usize): void {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate) for (let i = 0; i < M; i++) memory.fill(c + <usize>(i * ldc) * 4, 0, <usize>N * 4);
    return;
  }
  const pa = scratch;
  const pb = scratch + <usize>(MC * KC) * 4;
  const tile = pb + <usize>(KC * NC) * 4;
  for (let jc = 0; jc < N; jc += NC) {
    const nc = min(NC, N - jc);
    for (let pc = 0; pc < K; pc += KC) {
      const kc = min(KC, K - pc);
      const beta = pc > 0 || accumulate ? 1 : 0;
      packB(transB, b, ldb, jc, nc, pc, kc, pb);
      for (let ic = 0; ic < M; ic += MC) {
        const mc = min(MC, M - ic);
        packA(transA, a, lda, ic, mc, pc, kc, pa);
        for (let jr = 0; jr < nc; jr += NR) {
          const n = min(NR, nc - jr);
          for (let ir = 0; ir < mc; ir += MR) {
            const m = min(MR, mc - ir);
            micro(kc, pa + <usize>(ir * kc) * 4, pb + <usize>(jr * kc) * 4,
              c + (<usize>(ic + ir) * ldc + jc + jr) * 4, ldc, m, n, alpha, beta, tile);
          }
        }
      }
    }
  }
}

/** Batched gemm: item t uses a + t*strideA, b + t*strideB, c + t*strideC (element strides). */
export function gemmBatched(transA: i32, transB: i32, M: i32, N: i32, K: i32, a: usize, lda: i32, b: usize, ldb: i32,
  c: usize, ldc: i32, alpha: f32, accumulate: i32, batch: i32, strideA: i32, strideB: i32, strideC: i32, scratch: usize): void {
  for (let t = 0; t < batch; t++) {
    // with strideC == 0 all items add into one C: every item after the first accumulates
    const acc = accumulate || (strideC == 0 && t > 0) ? 1 : 0;
    gemm(transA, transB, M, N, K, a + <usize>t * strideA * 4, lda, b + <usize>t * strideB * 4, ldb,
      c + <usize>t * strideC * 4, ldc, alpha, acc, scratch);
  }
}
