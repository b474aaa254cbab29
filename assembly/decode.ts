// Fused decode kernels (the WASM twin of native/decode.inc; each call runs on one thread, the caller splits rows by
// sequence): a whole decoder layer for B rows (one new token per sequence, or T prompt tokens per sequence when
// prefilling), a whole step (decodeStep), on weights packed once per generate call into panels of 8 output columns.
import { axpy, swiglu } from './elementwise';
import { macroKernel, MR, packB } from './gemm';
import { dot, expSum, rmsNorm, rowMax, scaleRow } from './nn';
import { hsum4x4, madd } from './simd';

/** Pack W (N, K) row-major into ceil(N/8) panels of (K, 8) (zero-padded columns): gemm's packB of W^T. */
export function decodePack(w: usize, out: usize, N: i32, K: i32): void {
  packB(1, w, K, 0, N, 0, K, out);
}

/**
 * C (M, N) (+)= A (M, K) W^T (+ bias), W packed by decodePack (the panels gemm's packB makes). A is first copied into
 * blocks of 4 rows, k-major (gemm's packA layout), at `pa` (room for (M + 3) x K floats, then a 4 x 8 tile), so
 * gemm's 4 x 8 kernels run on it (more than 8 accumulators make V8 spill: src/bench/scripts/wasm-tiles.ts).
 */
function gemmPacked(M: i32, N: i32, K: i32, a: usize, pw: usize, bias: usize, acc: i32, c: usize, pa: usize): void {
  const rowBytes = <usize>K << 2; // A packed 4 rows at a time by 4 x 4 transposes (MR = 4)
  for (let i = 0; i < M; i += MR) {
    const rows = min(MR, M - i);
    const d = pa + <usize>(i * K) * 4;
    const a0 = a + <usize>i * rowBytes;
    // missing rows of the last block read row 0 of it: their outputs are never stored
    const a1 = rows > 1 ? a0 + rowBytes : a0, a2 = rows > 2 ? a0 + 2 * rowBytes : a0, a3 = rows > 3 ? a0 + 3 * rowBytes : a0;
    let k = 0;
    for (; k + 4 <= K; k += 4) {
      const o = <usize>k << 2;
      const r0 = v128.load(a0 + o), r1 = v128.load(a1 + o), r2 = v128.load(a2 + o), r3 = v128.load(a3 + o);
      const t0 = v128.shuffle<f32>(r0, r1, 0, 4, 1, 5), t1 = v128.shuffle<f32>(r0, r1, 2, 6, 3, 7);
      const t2 = v128.shuffle<f32>(r2, r3, 0, 4, 1, 5), t3 = v128.shuffle<f32>(r2, r3, 2, 6, 3, 7);
      const dk = d + (o << 2);
      v128.store(dk, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
      v128.store(dk, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7), 16);
      v128.store(dk, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5), 32);
      v128.store(dk, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7), 48);
    }
    for (; k < K; k++) {
      const o = <usize>k << 2, dk = d + (o << 2);
      store<f32>(dk, load<f32>(a0 + o));
      store<f32>(dk, load<f32>(a1 + o), 4);
      store<f32>(dk, load<f32>(a2 + o), 8);
      store<f32>(dk, load<f32>(a3 + o), 12);
    }
  }
  macroKernel(M, N, K, pa, pw, c, N, acc, pa + <usize>((M + MR - 1) / MR * MR * K) * 4);
  if (bias) for (let i = 0; i < M; i++) axpy(1, bias, c + <usize>(i * N) * 4, N);
}

/** p[s] = scale q.K[s] for s < S (-inf where valid[s] == 0); eight keys at a time (8 FMA chains). */
function scores(q: usize, K: usize, S: i32, D: i32, scale: f32, valid: usize, p: usize): void {
  let s = 0;
  if ((D & 3) == 0) {
    const row = <usize>D * 4;
    const sv = f32x4.splat(scale);
    for (; s + 8 <= S; s += 8) {
      const k0 = K + <usize>(s * D) * 4, k4 = k0 + 4 * row;
      let a0 = f32x4.splat(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
      for (let i = 0; i < D; i += 4) {
        const off = <usize>i << 2;
        const qv = v128.load(q + off);
        a0 = madd(qv, v128.load(k0 + off), a0);
        a1 = madd(qv, v128.load(k0 + row + off), a1);
        a2 = madd(qv, v128.load(k0 + 2 * row + off), a2);
        a3 = madd(qv, v128.load(k0 + 3 * row + off), a3);
        a4 = madd(qv, v128.load(k4 + off), a4);
        a5 = madd(qv, v128.load(k4 + row + off), a5);
        a6 = madd(qv, v128.load(k4 + 2 * row + off), a6);
        a7 = madd(qv, v128.load(k4 + 3 * row + off), a7);
      }
      v128.store(p + (<usize>s << 2), f32x4.mul(hsum4x4(a0, a1, a2, a3), sv));
      v128.store(p + (<usize>s << 2), f32x4.mul(hsum4x4(a4, a5, a6, a7), sv), 16);
    }
  }
  for (; s < S; s++) store<f32>(p + (<usize>s << 2), dot(q, K + <usize>(s * D) * 4, D) * scale);
  if (valid)
    for (s = 0; s < S; s++)
      if (load<i32>(valid + (<usize>s << 2)) == 0) store<f32>(p + (<usize>s << 2), -Infinity);
}

/** o (D) = sum over s < S of p[s] V[s] (V rows of D floats); 32 columns at a time (8 FMA chains). */
function weightedSum(p: usize, V: usize, S: i32, D: i32, o: usize): void {
  let i = 0;
  for (; i + 32 <= D; i += 32) {
    let o0 = f32x4.splat(0), o1 = o0, o2 = o0, o3 = o0, o4 = o0, o5 = o0, o6 = o0, o7 = o0;
    let vr = V + (<usize>i << 2);
    const step = <usize>D << 2;
    for (let s = 0; s < S; s++) {
      const pv = v128.load32_splat(p + (<usize>s << 2));
      o0 = madd(pv, v128.load(vr), o0);
      o1 = madd(pv, v128.load(vr, 16), o1);
      o2 = madd(pv, v128.load(vr, 32), o2);
      o3 = madd(pv, v128.load(vr, 48), o3);
      o4 = madd(pv, v128.load(vr, 64), o4);
      o5 = madd(pv, v128.load(vr, 80), o5);
      o6 = madd(pv, v128.load(vr, 96), o6);
      o7 = madd(pv, v128.load(vr, 112), o7);
      vr += step;
    }
    const oi = o + (<usize>i << 2);
    v128.store(oi, o0); v128.store(oi, o1, 16); v128.store(oi, o2, 32); v128.store(oi, o3, 48);
    v128.store(oi, o4, 64); v128.store(oi, o5, 80); v128.store(oi, o6, 96); v128.store(oi, o7, 112);
  }
  for (; i + 4 <= D; i += 4) {
    let acc = f32x4.splat(0);
    for (let s = 0; s < S; s++) acc = madd(v128.load32_splat(p + (<usize>s << 2)), v128.load(V + <usize>(s * D + i) * 4), acc);
    v128.store(o + (<usize>i << 2), acc);
  }
  for (; i < D; i++) {
    let acc: f32 = 0;
    for (let s = 0; s < S; s++) acc += load<f32>(p + (<usize>s << 2)) * load<f32>(V + <usize>(s * D + i) * 4);
    store<f32>(o + (<usize>i << 2), acc);
  }
}

/**
 * scores() for two queries of one KV head at once: p0[s], p1[s] = scale q0.K[s], q1.K[s], four keys at a time
 * (8 FMA chains; each K load serves both queries).
 */
function scores2(q0: usize, q1: usize, K: usize, S: i32, D: i32, scale: f32, valid: usize, p0: usize, p1: usize): void {
  let s = 0;
  if ((D & 3) == 0) {
    const row = <usize>D * 4;
    const sv = f32x4.splat(scale);
    for (; s + 4 <= S; s += 4) {
      const k0 = K + <usize>(s * D) * 4;
      let a0 = f32x4.splat(0), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
      for (let i = 0; i < D; i += 4) {
        const off = <usize>i << 2;
        const x = v128.load(q0 + off), y = v128.load(q1 + off);
        let kv = v128.load(k0 + off);
        a0 = madd(x, kv, a0); b0 = madd(y, kv, b0);
        kv = v128.load(k0 + row + off);
        a1 = madd(x, kv, a1); b1 = madd(y, kv, b1);
        kv = v128.load(k0 + 2 * row + off);
        a2 = madd(x, kv, a2); b2 = madd(y, kv, b2);
        kv = v128.load(k0 + 3 * row + off);
        a3 = madd(x, kv, a3); b3 = madd(y, kv, b3);
      }
      v128.store(p0 + (<usize>s << 2), f32x4.mul(hsum4x4(a0, a1, a2, a3), sv));
      v128.store(p1 + (<usize>s << 2), f32x4.mul(hsum4x4(b0, b1, b2, b3), sv));
    }
  }
  for (; s < S; s++) {
    const ks = K + <usize>(s * D) * 4;
    store<f32>(p0 + (<usize>s << 2), dot(q0, ks, D) * scale);
    store<f32>(p1 + (<usize>s << 2), dot(q1, ks, D) * scale);
  }
  if (valid)
    for (s = 0; s < S; s++)
      if (load<i32>(valid + (<usize>s << 2)) == 0) {
        store<f32>(p0 + (<usize>s << 2), -Infinity);
        store<f32>(p1 + (<usize>s << 2), -Infinity);
      }
}

/** weightedSum() for two weight rows over the same V: 16 columns at a time (8 FMA chains; each V load serves both). */
function weightedSum2(p0: usize, p1: usize, V: usize, S: i32, D: i32, o0: usize, o1: usize): void {
  if ((D & 15) != 0) {
    weightedSum(p0, V, S, D, o0);
    weightedSum(p1, V, S, D, o1);
    return;
  }
  const step = <usize>D << 2;
  for (let i = 0; i < D; i += 16) {
    let a0 = f32x4.splat(0), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    let vr = V + (<usize>i << 2);
    for (let s = 0; s < S; s++) {
      const so = <usize>s << 2;
      const x = v128.load32_splat(p0 + so), y = v128.load32_splat(p1 + so);
      const v0 = v128.load(vr), v1 = v128.load(vr, 16), v2 = v128.load(vr, 32), v3 = v128.load(vr, 48);
      a0 = madd(x, v0, a0); a1 = madd(x, v1, a1); a2 = madd(x, v2, a2); a3 = madd(x, v3, a3);
      b0 = madd(y, v0, b0); b1 = madd(y, v1, b1); b2 = madd(y, v2, b2); b3 = madd(y, v3, b3);
      vr += step;
    }
    const oa = o0 + (<usize>i << 2), ob = o1 + (<usize>i << 2);
    v128.store(oa, a0); v128.store(oa, a1, 16); v128.store(oa, a2, 32); v128.store(oa, a3, 48);
    v128.store(ob, b0); v128.store(ob, b1, 16); v128.store(ob, b2, 32); v128.store(ob, b3, 48);
  }
}

/**
 * Reads one 16-byte word of every 64-byte line of two blocks of `bytes` each, the two in step, and returns their OR
 * (the caller stores it, so the loads are kept). A decode step's keys and values come from memory (the batch's cache
 * is larger than the caches): read this way, with nothing between the loads, they stream in at the memory's rate, and
 * the attention arithmetic that follows reads them from cache. Straight into the arithmetic, they arrived several
 * times slower (wasm has no prefetch instruction).
 */
function pull2(p: usize, q: usize, bytes: usize): i32 {
  let a = i32x4.splat(0), b = a, c = a, d = a;
  for (let o: usize = 0; o + 128 <= bytes; o += 128) {
    a = v128.or(a, v128.load(p + o));
    b = v128.or(b, v128.load(p + o, 64));
    c = v128.or(c, v128.load(q + o));
    d = v128.or(d, v128.load(q + o, 64));
  }
  return i32x4.extract_lane(v128.or(v128.or(a, b), v128.or(c, d)), 0);
}

/** RoPE of one head vector x (D) in place; tab = cos (D/2) | sin (D/2) of its position. */
function ropeRow(x: usize, tab: usize, D: i32): void {
  const half = D >> 1;
  const hb = <usize>half << 2;
  let i = 0;
  for (; i + 4 <= half; i += 4) {
    const o = <usize>i << 2;
    const a = v128.load(x + o), b = v128.load(x + hb + o), c = v128.load(tab + o), s = v128.load(tab + hb + o);
    v128.store(x + o, f32x4.sub(f32x4.mul(a, c), f32x4.mul(b, s)));
    v128.store(x + hb + o, f32x4.add(f32x4.mul(b, c), f32x4.mul(a, s)));
  }
  for (; i < half; i++) {
    const o1 = x + (<usize>i << 2), o2 = x + (<usize>(half + i) << 2);
    const a = load<f32>(o1), b = load<f32>(o2);
    const c = load<f32>(tab + (<usize>i << 2)), s = load<f32>(tab + (<usize>(half + i) << 2));
    store<f32>(o1, a * c - b * s);
    store<f32>(o2, b * c + a * s);
  }
}

/** Softmax in place over p[0, S) (all -inf: zeros); returns nothing. */
function softmaxRow(p: usize, S: i32): void {
  const mx = rowMax(p, S);
  if (mx == -Infinity) {
    memory.fill(p, 0, <usize>S << 2);
    return;
  }
  scaleRow(p, p, S, 1 / expSum(p, p, S, mx), 0);
}

/**
 * Each row's heads through RoPE (after the q/k norm, when there is one) in place, then its key and value into the
 * cache at its slot. Row b of qkv (B, (H + 2 Kh) D) is token b % T of sequence b / T, at slot start + b % T.
 */
function ropeAppend(qkv: usize, tab: usize, qn: usize, kn: usize, kc: usize, vc: usize, B: i32, T: i32, start: i32, H: i32, Kh: i32, D: i32, cap: i32, eps: f32): void {
  const W = (H + 2 * Kh) * D;
  for (let b = 0; b < B; b++) {
    const sq = b / T, slot = start + b % T;
    const row = qkv + <usize>(b * W) * 4;
    const t = tab + <usize>(b * D) * 4;
    for (let hh = 0; hh < H + Kh; hh++) {
      const xv = row + <usize>(hh * D) * 4;
      if (qn) rmsNorm(xv, hh < H ? qn : kn, xv, 0, 1, D, eps);
      ropeRow(xv, t, D);
    }
    for (let kv = 0; kv < Kh; kv++) {
      const at = <usize>(((sq * Kh + kv) * cap + slot) * D) * 4;
      memory.copy(kc + at, row + <usize>((H + kv) * D) * 4, <usize>D * 4);
      memory.copy(vc + at, row + <usize>((H + Kh + kv) * D) * 4, <usize>D * 4);
    }
  }
}

/**
 * y (B, H D) = attention of each row's queries (in qkv, after ropeAppend) over its sequence's cached slots [0, slot]
 * (row b: token b % T of sequence b / T, slot start + b % T), with `sc` (H x cap floats) for the scores.
 */
function attend(qkv: usize, y: usize, sc: usize, kc: usize, vc: usize, valid: usize, B: i32, T: i32, start: i32, H: i32, Kh: i32, D: i32, cap: i32, scale: f32): void {
  const W = (H + 2 * Kh) * D, HD = H * D, grp = H / Kh;
  const qD = <usize>D << 2;
  for (let b = 0; b < B; b++) {
    const sq = b / T, S = start + b % T + 1;
    const row = qkv + <usize>(b * W) * 4;
    const vb = valid ? valid + <usize>(sq * cap) * 4 : 0;
    const pS = <usize>S << 2;
    for (let kv = 0; kv < Kh; kv++) {
      const K = kc + <usize>((sq * Kh + kv) * cap * D) * 4;
      const V = vc + <usize>((sq * Kh + kv) * cap * D) * 4;
      // decode: the block comes from memory, so pull it into cache first (the score row is overwritten below);
      // a prefill's later rows find their sequence's keys in cache already
      if (T == 1) store<i32>(sc, pull2(K, V, <usize>S * qD));
      // the group's queries two at a time (one pass over K and V serves both), then a last odd one
      let g = 0;
      for (; g + 2 <= grp; g += 2) {
        const q = row + <usize>((kv * grp + g) * D) * 4, p = sc + <usize>(g * S) * 4;
        scores2(q, q + qD, K, S, D, scale, vb, p, p + pS);
        softmaxRow(p, S);
        softmaxRow(p + pS, S);
        const o = y + <usize>(b * HD + (kv * grp + g) * D) * 4;
        weightedSum2(p, p + pS, V, S, D, o, o + qD);
      }
      if (g < grp) {
        const p = sc + <usize>(g * S) * 4;
        scores(row + <usize>((kv * grp + g) * D) * 4, K, S, D, scale, vb, p);
        softmaxRow(p, S);
        weightedSum(p, V, S, D, y + <usize>(b * HD + (kv * grp + g) * D) * 4);
      }
    }
  }
}

/**
 * One decoder layer: h (B, C) += attn(rmsnorm(h)); h += mlp(rmsnorm(h)), for B rows that are T consecutive tokens of
 * B / T sequences (decode: T = 1; prefill: a prompt per T rows), the first at cache slot `start`; the cache holds the
 * sequences' rows (B / T, Kh, cap, D) and `valid` their key masks (B / T, cap). scratch holds x (B, C), qkv (B, W),
 * y (B, H D), gu (B, 2F), act (B, F), scores (H, cap), then the GEMMs' packed input ((B + 3) x max(C, H D, F), then a 4 x 8 tile).
 * With `lastOnly` (a prefill's last layer, whose other rows feed nothing) every row's key and value go into the cache
 * but only each sequence's last row goes on, moved to row B / T - 1 ... 0 of h: h keeps B / T rows.
 * The arguments of the native decodeLayer, plus T and lastOnly (which that one takes as 1 and 0).
 */
export function decodeLayer(h: usize, scratch: usize, inNorm: usize, qkvP: usize, qkvBias: usize, oP: usize, oBias: usize, postNorm: usize,
  guP: usize, downP: usize, kc: usize, vc: usize, tab: usize, qn: usize, kn: usize, valid: usize,
  B: i32, C: i32, H: i32, Kh: i32, D: i32, F: i32, cap: i32, start: i32, eps: f32, scale: f32, T: i32, lastOnly: i32): void {
  const W = (H + 2 * Kh) * D, HD = H * D;
  const x = scratch;
  const qkv = x + <usize>(B * C) * 4;
  const y = qkv + <usize>(B * W) * 4;
  const gu = y + <usize>(B * HD) * 4;
  const act = gu + <usize>(B * 2 * F) * 4;
  const sc = act + <usize>(B * F) * 4;
  const pa = (sc + <usize>(H * cap) * 4 + 15) & ~15; // packed GEMM input: (B + 3) x max(C, H D, F)
  rmsNorm(h, inNorm, x, 0, B, C, eps);
  gemmPacked(B, W, C, x, qkvP, qkvBias, 0, qkv, pa);
  // every key and value is in the cache before any row attends (a row reads only slots up to its own)
  ropeAppend(qkv, tab, qn, kn, kc, vc, B, T, start, H, Kh, D, cap, eps);
  if (lastOnly && T > 1) {
    // row j T + T - 1 -> row j (ascending: a destination is never a later source)
    const n = B / T;
    for (let j = 0; j < n; j++) {
      const r = j * T + T - 1;
      memory.copy(h + <usize>(j * C) * 4, h + <usize>(r * C) * 4, <usize>C * 4);
      memory.copy(qkv + <usize>(j * W) * 4, qkv + <usize>(r * W) * 4, <usize>W * 4);
    }
    start += T - 1;
    B = n;
    T = 1;
  }
  attend(qkv, y, sc, kc, vc, valid, B, T, start, H, Kh, D, cap, scale);
  gemmPacked(B, C, HD, y, oP, oBias, 1, h, pa);
  rmsNorm(h, postNorm, x, 0, B, C, eps);
  gemmPacked(B, 2 * F, C, x, guP, 0, 0, gu, pa);
  for (let b = 0; b < B; b++) {
    const g = gu + <usize>(b * 2 * F) * 4;
    swiglu(g, g + <usize>F * 4, act + <usize>(b * F) * 4, F);
  }
  gemmPacked(B, C, F, act, downP, 0, 1, h, pa);
}

/** logits (B, V) = rmsnorm(h) head^T; lse (B) = log-sum-exp of each row; probs = softmax(logits * invTemp) unless invTemp is 0. */
export function decodeHead(h: usize, scratch: usize, norm: usize, headP: usize, logits: usize, B: i32, C: i32, V: i32, eps: f32, probs: usize, lse: usize, invTemp: f32): void {
  rmsNorm(h, norm, scratch, 0, B, C, eps);
  gemmPacked(B, V, C, scratch, headP, 0, 0, logits, (scratch + <usize>(B * C) * 4 + 15) & ~15);
  for (let b = 0; b < B; b++) {
    const z = logits + <usize>(b * V) * 4, pr = probs + <usize>(b * V) * 4;
    const mx = rowMax(z, V);
    const s1 = expSum(z, invTemp == 1 ? pr : 0, V, mx);
    store<f32>(lse + (<usize>b << 2), mx + Mathf.log(s1));
    if (invTemp == 0) continue;
    let st = s1;
    if (invTemp != 1) {
      // softmax(z invTemp), as the op-by-op path: the scaled row's max is invTemp mx
      scaleRow(z, pr, V, invTemp, 0);
      st = expSum(pr, pr, V, invTemp * mx);
    }
    scaleRow(pr, pr, V, 1 / st, 0);
  }
}

/** Pointers of one layer in a decodeStep descriptor (u32 each, in this order). */
const DESC = 12; // inNorm, qkv, qkvBias, o, oBias, postNorm, gateUp, down, keys, values, qNorm, kNorm

/**
 * A whole step in one call: every layer (decodeLayer, with the pointers of layer l at desc + 4 DESC l and `kvOff`
 * bytes added to its cache pointers; the last one keeps only each sequence's last row, moved to row j), then those
 * B / T rows through the final norm and LM head (decodeHead). One call per thread per step: no hand-off between layers.
 */
export function decodeStep(desc: usize, L: i32, h: usize, scratch: usize, tab: usize, valid: usize, kvOff: usize,
  B: i32, C: i32, H: i32, Kh: i32, D: i32, F: i32, cap: i32, start: i32, eps: f32, scale: f32, T: i32,
  norm: usize, headP: usize, logits: usize, V: i32, probs: usize, lse: usize, invTemp: f32): void {
  for (let l = 0; l < L; l++) {
    const d = desc + <usize>(l * DESC) * 4;
    decodeLayer(h, scratch, load<usize>(d), load<usize>(d, 4), load<usize>(d, 8), load<usize>(d, 12), load<usize>(d, 16), load<usize>(d, 20),
      load<usize>(d, 24), load<usize>(d, 28), load<usize>(d, 32) + kvOff, load<usize>(d, 36) + kvOff, tab, load<usize>(d, 40), load<usize>(d, 44), valid,
      B, C, H, Kh, D, F, cap, start, eps, scale, T, i32(l == L - 1));
  }
  decodeHead(h, scratch, norm, headP, logits, B / T, C, V, eps, probs, lse, invTemp);
}
