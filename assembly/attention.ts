// Causal attention with grouped KV heads (the wasm twin of native/attention.cc): per (batch, KV head) pair, K and V
// are packed once into the GEMM's panels and each block of query rows runs the 4x8 micro-kernel only over the keys it
// can see, so the masked upper triangle costs nothing; the backward reads each row's extent from the saved
// probabilities (a zero probability has a zero gradient term). Decoding (T <= 4) takes dot products instead.
import { madd } from './simd';
import { MR, NR, micro, packA, packB } from './gemm';
import { dot, expSum, rowMax, scaleRow } from './nn';

/** Query (or key) rows per block: the causal limit is taken per block. */
const MB: i32 = 16;

// @ts-ignore: decorator
@inline function addr(base: usize, i: i32): usize {
  return base + (<usize>i << 2);
}

// @ts-ignore: decorator
@inline function roundUp(n: i32, m: i32): i32 {
  return ((n + m - 1) / m) * m;
}

/** Bytes of scratch one thread needs for attention (and its backward) of grp query heads a KV head, T queries, S keys. */
export function attentionScratchBytes(grp: i32, T: i32, S: i32, D: i32): i32 {
  const panels = roundUp(S, NR) * D + roundUp(D, NR) * S + 2 * roundUp(D, NR) * T;
  return (panels + roundUp(MB, MR) * max(max(D, S), T) + grp * T * S + MR * NR) * 4;
}

/**
 * C (M, N) (= or +=) alpha * pa P: pa packed by packA with depth K, P panels of NR columns (as packB makes them)
 * pstride bytes apart, their first K rows.
 */
function panels(M: i32, N: i32, K: i32, pa: usize, pb: usize, pstride: usize, c: usize, ldc: i32, alpha: f32, beta: i32, tile: usize): void {
  for (let j = 0; j < N; j += NR)
    for (let i = 0; i < M; i += MR)
      micro(K, pa + <usize>(i * K) * 4, pb + <usize>(j / NR) * pstride, c + (<usize>i * ldc + j) * 4, ldc, min(MR, M - i), min(NR, N - j), alpha, beta, tile);
}

/** 1 + the index of the row's last non-zero entry (0 when all are zero). */
function extent(row: usize, S: i32): i32 {
  let s = S;
  while (s > 0 && (s & 3) != 0 && load<f32>(addr(row, s - 1)) == 0) s--;
  if ((s & 3) != 0) return s;
  const zero = f32x4.splat(0);
  for (; s > 0; s -= 4) { // 4 at a time from an index aligned to 4: the last block with a non-zero entry
    const nz = i32x4.bitmask(f32x4.ne(v128.load(addr(row, s - 4)), zero));
    if (nz != 0) return s - 4 + 32 - clz<i32>(nz);
  }
  return 0;
}

/** Softmax of row[0, lim) with masked keys at zero (valid: the sequence's S flags, or 0), zeros in [lim, S). */
function softmaxRow(row: usize, S: i32, lim: i32, valid: usize): void {
  if (valid) for (let s = 0; s < lim; s++) if (load<i32>(addr(valid, s)) == 0) store<f32>(addr(row, s), -Infinity);
  const mx = lim > 0 ? rowMax(row, lim) : -Infinity;
  if (mx == -Infinity) {
    memory.fill(row, 0, <usize>S << 2);
    return;
  }
  const sum = expSum(row, row, lim, mx);
  scaleRow(row, row, lim, 1 / sum, 0);
  if (valid) for (let s = 0; s < lim; s++) if (load<i32>(addr(valid, s)) == 0) store<f32>(addr(row, s), 0);
  if (lim < S) memory.fill(addr(row, lim), 0, <usize>(S - lim) << 2);
}

/** Attention for few query rows (decoding with a KV cache): dot products and axpys, no gemm packing. */
function attentionDirect(q: usize, k: usize, v: usize, out: usize, probs: usize, Hq: i32, Hkv: i32, T: i32, S: i32, D: i32,
  offset: i32, scale: f32, keyValid: usize, p0: i32, p1: i32): void {
  const grp = Hq / Hkv, R = grp * T;
  for (let p = p0; p < p1; p++) {
    const b = p / Hkv, kv = p % Hkv;
    const ko = k + <usize>((b * Hkv + kv) * S * D) * 4, vo = v + <usize>((b * Hkv + kv) * S * D) * 4;
    for (let r = 0; r < R; r++) {
      const qr = q + <usize>(((b * Hq + kv * grp) * T + r) * D) * 4, orow = out + <usize>(((b * Hq + kv * grp) * T + r) * D) * 4;
      const row = probs + <usize>(((b * Hq + kv * grp) * T + r) * S) * 4;
      const lim = min(S, offset + (r % T) + 1);
      let mx: f32 = -Infinity;
      for (let s = 0; s < lim; s++) {
        let sc: f32 = dot(qr, ko + <usize>(s * D) * 4, D) * scale;
        if (keyValid && load<i32>(addr(keyValid, b * S + s)) == 0) sc = -Infinity;
        store<f32>(addr(row, s), sc);
        mx = max(mx, sc);
      }
      memory.fill(orow, 0, <usize>D << 2);
      if (mx == -Infinity) {
        memory.fill(row, 0, <usize>S << 2);
        continue;
      }
      const sum = expSum(row, row, lim, mx);
      scaleRow(row, row, lim, 1 / sum, 0);
      if (lim < S) memory.fill(addr(row, lim), 0, <usize>(S - lim) << 2);
      for (let s = 0; s < lim; s++) {
        const pv = load<f32>(addr(row, s));
        if (pv == 0) continue;
        const vr = vo + <usize>(s * D) * 4;
        const pp = f32x4.splat(pv);
        let i = 0;
        for (; i + 4 <= D; i += 4) v128.store(addr(orow, i), madd(v128.load(addr(vr, i)), pp, v128.load(addr(orow, i))));
        for (; i < D; i++) store<f32>(addr(orow, i), load<f32>(addr(orow, i)) + pv * load<f32>(addr(vr, i)));
      }
    }
  }
}

/**
 * Causal attention for (batch, kv-head) pairs [p0, p1): query t of head h sees keys s <= offset + t of KV head
 * h / (Hq / Hkv) with keyValid[b*S + s] != 0 (keyValid = 0: all valid); probs is zero past each row's limit.
 */
export function attention(q: usize, k: usize, v: usize, out: usize, probs: usize, B: i32, Hq: i32, Hkv: i32, T: i32, S: i32, D: i32,
  offset: i32, scale: f32, keyValid: usize, p0: i32, p1: i32, scratch: usize): void {
  if (T <= 4) {
    attentionDirect(q, k, v, out, probs, Hq, Hkv, T, S, D, offset, scale, keyValid, p0, p1);
    return;
  }
  const grp = Hq / Hkv;
  const kp = scratch, vp = kp + <usize>(roundUp(S, NR) * D) * 4; // K^T (D, S) and V (S, D) panels
  const pa = vp + <usize>(roundUp(D, NR) * S) * 4, tile = pa + <usize>(roundUp(MB, MR) * max(D, S)) * 4;
  for (let p = p0; p < p1; p++) {
    const b = p / Hkv;
    const K = k + <usize>(p * S * D) * 4, V = v + <usize>(p * S * D) * 4;
    const valid = keyValid ? addr(keyValid, b * S) : 0;
    packB(1, K, D, 0, S, 0, D, kp);
    packB(0, V, D, 0, D, 0, S, vp);
    for (let gi = 0; gi < grp; gi++) {
      const head = (b * Hq + (p % Hkv) * grp + gi) * T;
      const Q = q + <usize>(head * D) * 4, O = out + <usize>(head * D) * 4, P = probs + <usize>head * S * 4;
      for (let t0 = 0; t0 < T; t0 += MB) {
        const m = min(MB, T - t0), lim = min(S, offset + t0 + m);
        const pr = P + <usize>(t0 * S) * 4;
        packA(0, Q, D, t0, m, 0, D, pa);
        panels(m, lim, D, pa, kp, <usize>(D * NR) * 4, pr, S, scale, 0, tile);
        for (let r = 0; r < m; r++) softmaxRow(pr + <usize>(r * S) * 4, S, min(S, offset + t0 + r + 1), valid);
        packA(0, P, S, t0, m, 0, lim, pa);
        panels(m, D, lim, pa, vp, <usize>(S * NR) * 4, O + <usize>(t0 * D) * 4, D, 1, 0, tile);
      }
    }
  }
}

/** Backward of `attention` for pairs [p0, p1): dq, dk, dv overwritten. */
export function attentionBackward(g: usize, q: usize, k: usize, v: usize, probs: usize, dq: usize, dk: usize, dv: usize,
  B: i32, Hq: i32, Hkv: i32, T: i32, S: i32, D: i32, scale: f32, p0: i32, p1: i32, scratch: usize): void {
  const grp = Hq / Hkv, R = grp * T;
  const vt = scratch, kn = vt + <usize>(roundUp(S, NR) * D) * 4; // V^T (D, S) and K (S, D) panels
  const qn = kn + <usize>(roundUp(D, NR) * S) * 4, gn = qn + <usize>(roundUp(D, NR) * T) * 4; // one head's Q and G (T, D)
  const pa = gn + <usize>(roundUp(D, NR) * T) * 4, dS = pa + <usize>(roundUp(MB, MR) * max(max(D, S), T)) * 4;
  const tile = dS + <usize>R * S * 4;
  const sc = f32x4.splat(scale);
  for (let p = p0; p < p1; p++) {
    const b = p / Hkv, head0 = (b * Hq + (p % Hkv) * grp) * T;
    const K = k + <usize>(p * S * D) * 4, V = v + <usize>(p * S * D) * 4;
    const dK = dk + <usize>(p * S * D) * 4, dV = dv + <usize>(p * S * D) * 4;
    const P0 = probs + <usize>head0 * S * 4, G0 = g + <usize>(head0 * D) * 4;
    packB(1, V, D, 0, S, 0, D, vt);
    packB(0, K, D, 0, D, 0, S, kn);
    // dS = P * (dP - rowsum(P * dP)) * scale with dP = G V^T over the group's rows; dQ = dS K
    for (let r0 = 0; r0 < R; r0 += MB) {
      const m = min(MB, R - r0);
      let lim = 0;
      for (let r = 0; r < m; r++) lim = max(lim, extent(P0 + <usize>((r0 + r) * S) * 4, S));
      const dr0 = dS + <usize>(r0 * S) * 4;
      packA(0, G0, D, r0, m, 0, D, pa);
      if (lim > 0) panels(m, lim, D, pa, vt, <usize>(D * NR) * 4, dr0, S, 1, 0, tile);
      for (let r = 0; r < m; r++) {
        const pr = P0 + <usize>((r0 + r) * S) * 4, dr = dr0 + <usize>(r * S) * 4;
        const l = extent(pr, S);
        const d = dot(pr, dr, l);
        const d4 = f32x4.splat(d);
        let i = 0;
        for (; i + 4 <= l; i += 4) v128.store(addr(dr, i), f32x4.mul(f32x4.mul(v128.load(addr(pr, i)), f32x4.sub(v128.load(addr(dr, i)), d4)), sc));
        for (; i < l; i++) store<f32>(addr(dr, i), load<f32>(addr(pr, i)) * (load<f32>(addr(dr, i)) - d) * scale);
        if (l < S) memory.fill(addr(dr, l), 0, <usize>(S - l) << 2);
      }
      packA(0, dS, S, r0, m, 0, lim, pa);
      panels(m, D, lim, pa, kn, <usize>(S * NR) * 4, dq + <usize>((head0 + r0) * D) * 4, D, 1, 0, tile);
    }
    // dK = sum over the group's heads of dS^T Q, dV of P^T G; a key block meets only the rows that reach it
    for (let gi = 0; gi < grp; gi++) {
      const Pg = P0 + <usize>(gi * T * S) * 4, dSg = dS + <usize>(gi * T * S) * 4;
      packB(0, q + <usize>((head0 + gi * T) * D) * 4, D, 0, D, 0, T, qn);
      packB(0, G0 + <usize>(gi * T * D) * 4, D, 0, D, 0, T, gn);
      let first = 0; // the first row reaching key s0: rows before it end at or before s0 (their terms are zero)
      for (let s0 = 0; s0 < S; s0 += MB) {
        const m = min(MB, S - s0);
        while (first < T && extent(Pg + <usize>(first * S) * 4, S) <= s0) first++;
        const kk = T - first, beta = gi > 0 ? 1 : 0;
        packA(1, dSg, S, s0, m, first, kk, pa);
        panels(m, D, kk, pa, qn + <usize>(first * NR) * 4, <usize>(T * NR) * 4, dK + <usize>(s0 * D) * 4, D, 1, beta, tile);
        packA(1, Pg, S, s0, m, first, kk, pa);
        panels(m, D, kk, pa, gn + <usize>(first * NR) * 4, <usize>(T * NR) * 4, dV + <usize>(s0 * D) * 4, D, 1, beta, tile);
      }
    }
  }
}
