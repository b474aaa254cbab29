// Packed GEMM (Goto/BLIS loop order) with a 4x8 f32x4 micro-kernel:
// C = alpha * op(A) op(B) (+ C when accumulate), op = optional transpose, all row-major with leading dims.
import { hsum4x4, madd } from './simd';

export const MR: i32 = 4;
export const NR: i32 = 8;
const KC: i32 = 256;
const MC: i32 = 128;
const NC: i32 = 1024;

/** Bytes of packing scratch one thread needs. */
export function gemmScratchBytes(): i32 {
  return (MC * KC + KC * NC + MR * NR) * 4;
}

/** The 4x4 block at src (rows rs bytes apart) transposed into dst (rows ds bytes apart). */
// @ts-ignore: decorator
@inline function transpose4(src: usize, rs: usize, dst: usize, ds: usize): void {
  const x0 = v128.load(src), x1 = v128.load(src + rs), x2 = v128.load(src + 2 * rs), x3 = v128.load(src + 3 * rs);
  const t0 = v128.shuffle<f32>(x0, x1, 0, 4, 1, 5), t1 = v128.shuffle<f32>(x0, x1, 2, 6, 3, 7);
  const t2 = v128.shuffle<f32>(x2, x3, 0, 4, 1, 5), t3 = v128.shuffle<f32>(x2, x3, 2, 6, 3, 7);
  v128.store(dst, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
  v128.store(dst + ds, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7));
  v128.store(dst + 2 * ds, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5));
  v128.store(dst + 3 * ds, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7));
}

// @ts-ignore: decorator
@inline export function packA(transA: i32, a: usize, lda: i32, i0: i32, mc: i32, k0: i32, kc: i32, pa: usize): void {
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
    } else if (rows == MR) {
      const rs = <usize>lda * 4, k4 = kc & ~3;
      const src = a + (<usize>(i0 + ir) * lda + k0) * 4;
      for (let k = 0; k < k4; k += 4) transpose4(src + (<usize>k << 2), rs, dst + <usize>(k * MR) * 4, MR * 4);
      for (let k = k4; k < kc; k++)
        for (let r = 0; r < MR; r++) store<f32>(dst + <usize>(k * MR + r) * 4, load<f32>(src + <usize>r * rs + (<usize>k << 2)));
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
@inline export function packB(transB: i32, b: usize, ldb: i32, j0: i32, nc: i32, k0: i32, kc: i32, pb: usize): void {
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
    } else if (cols == NR) {
      const rs = <usize>ldb * 4, k4 = kc & ~3;
      for (let cg = 0; cg < NR; cg += 4) {
        const src = b + (<usize>(j0 + jr + cg) * ldb + k0) * 4;
        for (let k = 0; k < k4; k += 4) transpose4(src + (<usize>k << 2), rs, dst + <usize>(k * NR + cg) * 4, NR * 4);
        for (let k = k4; k < kc; k++)
          for (let c = 0; c < 4; c++) store<f32>(dst + <usize>(k * NR + cg + c) * 4, load<f32>(src + <usize>c * rs + (<usize>k << 2)));
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

/** One MR x NR tile: C[0:m, 0:n] (= or +=) alpha * pa pb over kc; a partial one goes through `tile` (MR x NR). */
export function micro(kc: i32, pa: usize, pb: usize, c: usize, ldc: i32, m: i32, n: i32, alpha: f32, beta: i32, tile: usize): void {
  if (m == MR && n == NR) {
    tiles(MR, NR, kc, pa, pb, c, ldc, alpha, beta);
    return;
  }
  tiles(MR, NR, kc, pa, pb, tile, NR, alpha, 0);
  const rs = <usize>ldc * 4;
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      const dst = c + <usize>i * rs + (<usize>j << 2);
      const v = load<f32>(tile + <usize>(i * NR + j) * 4);
      store<f32>(dst, beta ? load<f32>(dst) + v : v);
    }
}

/**
 * C (M x N, ldc) (= or +=) alpha * pa pb for M and N multiples of MR and NR (packed over K as packA / packB make them):
 * the 4 x 8 micro-kernel with the loops over tiles around it in one function (a call per tile slowed the decode step
 * down). Inlined, also into `micro`, which runs its full tiles through it (as a call it slowed the train step down).
 */
// @ts-ignore: decorator
@inline function tiles(M: i32, N: i32, K: i32, pa: usize, pb: usize, c: usize, ldc: i32, alpha: f32, beta: i32): void {
  const al = f32x4.splat(alpha);
  const rs = <usize>ldc * 4;
  for (let n0 = 0; n0 < N; n0 += NR) {
    const panel = pb + <usize>(n0 * K) * 4;
    for (let i = 0; i < M; i += MR) {
      let c00 = f32x4.splat(0), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
      let ap = pa + <usize>(i * K) * 4, bp = panel;
      for (let k = 0; k < K; k++) {
        const b0 = v128.load(bp), b1 = v128.load(bp, 16);
        let a = v128.load32_splat(ap);
        c00 = madd(a, b0, c00); c01 = madd(a, b1, c01);
        a = v128.load32_splat(ap, 4);
        c10 = madd(a, b0, c10); c11 = madd(a, b1, c11);
        a = v128.load32_splat(ap, 8);
        c20 = madd(a, b0, c20); c21 = madd(a, b1, c21);
        a = v128.load32_splat(ap, 12);
        c30 = madd(a, b0, c30); c31 = madd(a, b1, c31);
        ap += 16;
        bp += 32;
      }
      const r0 = c + <usize>(i * ldc + n0) * 4;
      storeRow(r0, c00, c01, al, beta);
      storeRow(r0 + rs, c10, c11, al, beta);
      storeRow(r0 + 2 * rs, c20, c21, al, beta);
      storeRow(r0 + 3 * rs, c30, c31, al, beta);
    }
  }
}

/**
 * C (M x N, ldc) (+ C if acc) = pa pb (packed over K as packA / packB make them): the full tiles through `tiles`, the
 * edges (the last M % MR rows, then the last N % NR columns) through `micro`, which writes partial tiles via `tile`.
 */
export function macroKernel(M: i32, N: i32, K: i32, pa: usize, pb: usize, c: usize, ldc: i32, acc: i32, tile: usize): void {
  const Mf = M & ~(MR - 1), Nf = N & ~(NR - 1);
  tiles(Mf, Nf, K, pa, pb, c, ldc, 1, acc);
  if (Mf < M)
    for (let n0 = 0; n0 < N; n0 += NR) micro(K, pa + <usize>(Mf * K) * 4, pb + <usize>(n0 * K) * 4, c + <usize>(Mf * ldc + n0) * 4, ldc, M - Mf, min(NR, N - n0), 1, acc, tile);
  if (Nf < N)
    for (let i = 0; i < Mf; i += MR) micro(K, pa + <usize>(i * K) * 4, pb + <usize>(Nf * K) * 4, c + <usize>(i * ldc + Nf) * 4, ldc, MR, N - Nf, 1, acc, tile);
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

/**
 * C (M x N) = alpha * A B^T (+ C) for A (M x K, lda) and B (N x K, ldb), as dot products over K with no
 * packing: the fast form for few rows (decoding), where packing the weight would cost as much as the math.
 */
export function gemmNT(M: i32, N: i32, K: i32, a: usize, lda: i32, b: usize, ldb: i32, c: usize, ldc: i32, alpha: f32, accumulate: i32): void {
  const K4 = K & ~3;
  const M2 = M & ~1;
  let j = 0;
  // outer loop over 4 rows of B (read once), inner over pairs of A rows (cache resident)
  for (; j + 4 <= N; j += 4) {
    const b0 = b + <usize>j * ldb * 4, b1 = b0 + <usize>ldb * 4, b2 = b1 + <usize>ldb * 4, b3 = b2 + <usize>ldb * 4;
    for (let i = 0; i < M2; i += 2) {
      const a0 = a + <usize>i * lda * 4, a1 = a0 + <usize>lda * 4;
      let s00 = f32x4.splat(0), s01 = f32x4.splat(0), s02 = f32x4.splat(0), s03 = f32x4.splat(0);
      let s10 = f32x4.splat(0), s11 = f32x4.splat(0), s12 = f32x4.splat(0), s13 = f32x4.splat(0);
      for (let k = 0; k < K4; k += 4) {
        const o = <usize>k << 2;
        const x0 = v128.load(a0 + o), x1 = v128.load(a1 + o);
        let y = v128.load(b0 + o);
        s00 = madd(x0, y, s00); s10 = madd(x1, y, s10);
        y = v128.load(b1 + o);
        s01 = madd(x0, y, s01); s11 = madd(x1, y, s11);
        y = v128.load(b2 + o);
        s02 = madd(x0, y, s02); s12 = madd(x1, y, s12);
        y = v128.load(b3 + o);
        s03 = madd(x0, y, s03); s13 = madd(x1, y, s13);
      }
      // lane q of r0 is the sum of the lanes of s0q
      let r0 = hsum4x4(s00, s01, s02, s03), r1 = hsum4x4(s10, s11, s12, s13);
      for (let k = K4; k < K; k++) {
        const o = <usize>k << 2;
        const y = f32x4.replace_lane(f32x4.replace_lane(f32x4.replace_lane(f32x4.splat(load<f32>(b0 + o)), 1, load<f32>(b1 + o)), 2, load<f32>(b2 + o)), 3, load<f32>(b3 + o));
        r0 = madd(f32x4.splat(load<f32>(a0 + o)), y, r0);
        r1 = madd(f32x4.splat(load<f32>(a1 + o)), y, r1);
      }
      const c0 = c + (<usize>i * ldc + j) * 4, c1 = c0 + <usize>ldc * 4;
      const al = f32x4.splat(alpha);
      v128.store(c0, accumulate ? madd(r0, al, v128.load(c0)) : f32x4.mul(r0, al));
      v128.store(c1, accumulate ? madd(r1, al, v128.load(c1)) : f32x4.mul(r1, al));
    }
    if (M2 < M) for (let q = 0; q < 4; q++) dotInto(a + <usize>M2 * lda * 4, b + <usize>(j + q) * ldb * 4, K, c + (<usize>M2 * ldc + j + q) * 4, alpha, accumulate);
  }
  for (; j < N; j++)
    for (let i = 0; i < M; i++) dotInto(a + <usize>i * lda * 4, b + <usize>j * ldb * 4, K, c + (<usize>i * ldc + j) * 4, alpha, accumulate);
}

function dotInto(x: usize, y: usize, K: i32, dst: usize, alpha: f32, accumulate: i32): void {
  let acc = f32x4.splat(0);
  let k = 0;
  for (; k + 4 <= K; k += 4) acc = madd(v128.load(x + (<usize>k << 2)), v128.load(y + (<usize>k << 2)), acc);
  let s = f32x4.extract_lane(acc, 0) + f32x4.extract_lane(acc, 1) + f32x4.extract_lane(acc, 2) + f32x4.extract_lane(acc, 3);
  for (; k < K; k++) s += load<f32>(x + (<usize>k << 2)) * load<f32>(y + (<usize>k << 2));
  store<f32>(dst, accumulate ? load<f32>(dst) + alpha * s : alpha * s);
}

/** Batched gemmNT (item t at a + t*strideA, ...). */
export function gemmNTBatched(M: i32, N: i32, K: i32, a: usize, lda: i32, b: usize, ldb: i32, c: usize, ldc: i32, alpha: f32, accumulate: i32,
  batch: i32, strideA: i32, strideB: i32, strideC: i32): void {
  for (let t = 0; t < batch; t++) {
    const acc = accumulate || (strideC == 0 && t > 0) ? 1 : 0;
    gemmNT(M, N, K, a + <usize>t * strideA * 4, lda, b + <usize>t * strideB * 4, ldb, c + <usize>t * strideC * 4, ldc, alpha, acc);
  }
}
