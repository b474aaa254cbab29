// Fused decode-step kernels (the WASM twin of native/decode.inc, one thread): a whole decoder layer for B
// sequences at one new token each, on weights packed once per generate call into panels of 8 output columns.
import { exp4, hsum, madd } from './simd';

const NR: i32 = 8;

/** Pack W (N, K) row-major into ceil(N/8) panels of (K, 8) (zero-padded columns). */
export function decodePack(w: usize, out: usize, N: i32, K: i32): void {
  const np = (N + NR - 1) / NR;
  for (let p = 0; p < np; p++) {
    const d = out + <usize>(p * K * NR) * 4;
    for (let k = 0; k < K; k++)
      for (let c = 0; c < NR; c++) {
        const n = p * NR + c;
        store<f32>(d + <usize>(k * NR + c) * 4, n < N ? load<f32>(w + (<usize>n * K + k) * 4) : 0);
      }
  }
}

/** Lane i (0-3) of v (extract_lane needs a constant index). */
// @ts-ignore: decorator
@inline function lane(v: v128, i: i32): f32 {
  if (i == 0) return f32x4.extract_lane(v, 0);
  if (i == 1) return f32x4.extract_lane(v, 1);
  if (i == 2) return f32x4.extract_lane(v, 2);
  return f32x4.extract_lane(v, 3);
}

/** C (M, N) (+)= A (M, K) W^T (+ bias), W packed by decodePack. */
function gemmPacked(M: i32, N: i32, K: i32, a: usize, pw: usize, bias: usize, acc: i32, c: usize): void {
  const np = (N + NR - 1) / NR;
  for (let p = 0; p < np; p++) {
    const panel = pw + <usize>(p * K * NR) * 4;
    const n0 = p * NR, nc = min(NR, N - n0);
    let i = 0;
    for (; i < M; i += 4) {
      const rows = min(4, M - i);
      const a0 = a + <usize>(i * K) * 4;
      const a1 = rows > 1 ? a0 + <usize>K * 4 : a0;
      const a2 = rows > 2 ? a0 + <usize>(2 * K) * 4 : a0;
      const a3 = rows > 3 ? a0 + <usize>(3 * K) * 4 : a0;
      let s00 = f32x4.splat(0), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
      for (let k = 0; k < K; k++) {
        const bp = panel + <usize>(k * NR) * 4;
        const b0 = v128.load(bp), b1 = v128.load(bp, 16);
        const ko = <usize>k << 2;
        let x = v128.load32_splat(a0 + ko);
        s00 = madd(x, b0, s00); s01 = madd(x, b1, s01);
        x = v128.load32_splat(a1 + ko);
        s10 = madd(x, b0, s10); s11 = madd(x, b1, s11);
        x = v128.load32_splat(a2 + ko);
        s20 = madd(x, b0, s20); s21 = madd(x, b1, s21);
        x = v128.load32_splat(a3 + ko);
        s30 = madd(x, b0, s30); s31 = madd(x, b1, s31);
      }
      // lanes read straight from the registers: a static spill buffer would be shared by the two threads' instances
      for (let r = 0; r < rows; r++) {
        const row = c + <usize>((i + r) * N + n0) * 4;
        const lo = r == 0 ? s00 : r == 1 ? s10 : r == 2 ? s20 : s30;
        const hi = r == 0 ? s01 : r == 1 ? s11 : r == 2 ? s21 : s31;
        for (let cc = 0; cc < nc; cc++) {
          let v = lane(cc < 4 ? lo : hi, cc & 3);
          if (bias) v += load<f32>(bias + <usize>(n0 + cc) * 4);
          const o = row + (<usize>cc << 2);
          store<f32>(o, acc ? load<f32>(o) + v : v);
        }
      }
    }
  }
}

function dot(x: usize, y: usize, n: i32): f32 {
  let acc = f32x4.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) acc = madd(v128.load(x + (<usize>i << 2)), v128.load(y + (<usize>i << 2)), acc);
  let s = hsum(acc);
  for (; i < n; i++) s += load<f32>(x + (<usize>i << 2)) * load<f32>(y + (<usize>i << 2));
  return s;
}

function rmsnormRows(x: usize, w: usize, y: usize, rows: i32, C: i32, eps: f32): void {
  for (let r = 0; r < rows; r++) {
    const xr = x + <usize>(r * C) * 4, yr = y + <usize>(r * C) * 4;
    const rs: f32 = 1 / Mathf.sqrt(dot(xr, xr, C) / <f32>C + eps);
    for (let i = 0; i < C; i++) store<f32>(yr + (<usize>i << 2), load<f32>(xr + (<usize>i << 2)) * rs * load<f32>(w + (<usize>i << 2)));
  }
}

/** exp(x) of a scalar with exp4's accuracy. */
// @ts-ignore: decorator
@inline function exp1(x: f32): f32 {
  return f32x4.extract_lane(exp4(f32x4.splat(x)), 0);
}

/** p[s] = scale q.K[s] for s < S (-inf where valid[s] == 0); four keys at a time (independent chains). */
function scores(q: usize, K: usize, S: i32, D: i32, scale: f32, valid: usize, p: usize): void {
  let s = 0;
  if ((D & 3) == 0) {
    const row = <usize>D * 4;
    for (; s + 4 <= S; s += 4) {
      const k0 = K + <usize>(s * D) * 4;
      let a0 = f32x4.splat(0), a1 = a0, a2 = a0, a3 = a0;
      for (let i = 0; i < D; i += 4) {
        const off = <usize>i << 2;
        const qv = v128.load(q + off);
        a0 = madd(qv, v128.load(k0 + off), a0);
        a1 = madd(qv, v128.load(k0 + row + off), a1);
        a2 = madd(qv, v128.load(k0 + 2 * row + off), a2);
        a3 = madd(qv, v128.load(k0 + 3 * row + off), a3);
      }
      // transpose-add: lane j of the result = sum of a_j
      const t0 = f32x4.add(v128.shuffle<f32>(a0, a1, 0, 4, 1, 5), v128.shuffle<f32>(a0, a1, 2, 6, 3, 7)); // a0 a1 interleaved pairs
      const t1 = f32x4.add(v128.shuffle<f32>(a2, a3, 0, 4, 1, 5), v128.shuffle<f32>(a2, a3, 2, 6, 3, 7));
      const r = f32x4.add(v128.shuffle<f32>(t0, t1, 0, 1, 4, 5), v128.shuffle<f32>(t0, t1, 2, 3, 6, 7));
      v128.store(p + (<usize>s << 2), f32x4.mul(r, f32x4.splat(scale)));
    }
  }
  for (; s < S; s++) store<f32>(p + (<usize>s << 2), dot(q, K + <usize>(s * D) * 4, D) * scale);
  if (valid)
    for (s = 0; s < S; s++)
      if (load<i32>(valid + (<usize>s << 2)) == 0) store<f32>(p + (<usize>s << 2), -Infinity);
}

/** RoPE of one head vector x (D) in place; tab = cos (D/2) | sin (D/2) of its position. */
function ropeRow(x: usize, tab: usize, D: i32): void {
  const half = D >> 1;
  for (let i = 0; i < half; i++) {
    const o1 = x + (<usize>i << 2), o2 = x + (<usize>(half + i) << 2);
    const a = load<f32>(o1), b = load<f32>(o2);
    const c = load<f32>(tab + (<usize>i << 2)), s = load<f32>(tab + (<usize>(half + i) << 2));
    store<f32>(o1, a * c - b * s);
    store<f32>(o2, b * c + a * s);
  }
}

/** Softmax in place over p[0, S) (all -inf: zeros); returns nothing. */
function softmaxRow(p: usize, S: i32): void {
  let mx: f32 = -Infinity;
  for (let s = 0; s < S; s++) mx = max(mx, load<f32>(p + (<usize>s << 2)));
  if (mx == -Infinity) {
    for (let s = 0; s < S; s++) store<f32>(p + (<usize>s << 2), 0);
    return;
  }
  const mv = f32x4.splat(mx);
  let acc = f32x4.splat(0);
  let s = 0;
  for (; s + 4 <= S; s += 4) {
    const e = exp4(f32x4.sub(v128.load(p + (<usize>s << 2)), mv));
    v128.store(p + (<usize>s << 2), e);
    acc = f32x4.add(acc, e);
  }
  let sum = hsum(acc);
  for (; s < S; s++) {
    const e = exp1(load<f32>(p + (<usize>s << 2)) - mx);
    store<f32>(p + (<usize>s << 2), e);
    sum += e;
  }
  const inv: f32 = 1 / sum;
  for (s = 0; s < S; s++) store<f32>(p + (<usize>s << 2), load<f32>(p + (<usize>s << 2)) * inv);
}

/**
 * One decoder layer: h (B, C) += attn(rmsnorm(h)); h += mlp(rmsnorm(h)). scratch holds x (B, C), qkv (B, W),
 * y (B, H D), gu (B, 2F), act (B, F), scores (H, start + 1). Same arguments as the native decodeLayer.
 */
export function decodeLayer(h: usize, scratch: usize, inNorm: usize, qkvP: usize, qkvBias: usize, oP: usize, oBias: usize, postNorm: usize,
  guP: usize, downP: usize, kc: usize, vc: usize, tab: usize, qn: usize, kn: usize, valid: usize,
  B: i32, C: i32, H: i32, Kh: i32, D: i32, F: i32, cap: i32, start: i32, eps: f32, scale: f32): void {
  const W = (H + 2 * Kh) * D, HD = H * D, grp = H / Kh, S = start + 1;
  const x = scratch;
  const qkv = x + <usize>(B * C) * 4;
  const y = qkv + <usize>(B * W) * 4;
  const gu = y + <usize>(B * HD) * 4;
  const act = gu + <usize>(B * 2 * F) * 4;
  const sc = act + <usize>(B * F) * 4;
  rmsnormRows(h, inNorm, x, B, C, eps);
  gemmPacked(B, W, C, x, qkvP, qkvBias, 0, qkv);
  for (let b = 0; b < B; b++) {
    const row = qkv + <usize>(b * W) * 4;
    const t = tab + <usize>(b * D) * 4;
    for (let hh = 0; hh < H + Kh; hh++) {
      const xv = row + <usize>(hh * D) * 4;
      if (qn) rmsnormRows(xv, hh < H ? qn : kn, xv, 1, D, eps);
      ropeRow(xv, t, D);
    }
    const vb = valid ? valid + <usize>(b * cap) * 4 : 0;
    for (let kv = 0; kv < Kh; kv++) {
      const K = kc + <usize>((b * Kh + kv) * cap * D) * 4;
      const V = vc + <usize>((b * Kh + kv) * cap * D) * 4;
      memory.copy(K + <usize>(start * D) * 4, row + <usize>((H + kv) * D) * 4, <usize>D * 4);
      memory.copy(V + <usize>(start * D) * 4, row + <usize>((H + Kh + kv) * D) * 4, <usize>D * 4);
      for (let g = 0; g < grp; g++) {
        const q = row + <usize>((kv * grp + g) * D) * 4;
        const p = sc + <usize>(g * S) * 4;
        scores(q, K, S, D, scale, vb, p);
        softmaxRow(p, S);
        const o = y + <usize>(b * HD + (kv * grp + g) * D) * 4;
        let i = 0;
        for (; i + 16 <= D; i += 16) {
          let o0 = f32x4.splat(0), o1 = o0, o2 = o0, o3 = o0;
          for (let s = 0; s < S; s++) {
            const pv = v128.load32_splat(p + (<usize>s << 2));
            const vr = V + <usize>(s * D + i) * 4;
            o0 = madd(pv, v128.load(vr), o0);
            o1 = madd(pv, v128.load(vr, 16), o1);
            o2 = madd(pv, v128.load(vr, 32), o2);
            o3 = madd(pv, v128.load(vr, 48), o3);
          }
          const oi = o + (<usize>i << 2);
          v128.store(oi, o0); v128.store(oi, o1, 16); v128.store(oi, o2, 32); v128.store(oi, o3, 48);
        }
        for (; i < D; i++) {
          let acc: f32 = 0;
          for (let s = 0; s < S; s++) acc += load<f32>(p + (<usize>s << 2)) * load<f32>(V + <usize>(s * D + i) * 4);
          store<f32>(o + (<usize>i << 2), acc);
        }
      }
    }
  }
  gemmPacked(B, C, HD, y, oP, oBias, 1, h);
  rmsnormRows(h, postNorm, x, B, C, eps);
  gemmPacked(B, 2 * F, C, x, guP, 0, 0, gu);
  for (let b = 0; b < B; b++) {
    const g = gu + <usize>(b * 2 * F) * 4, u = g + <usize>F * 4, o = act + <usize>(b * F) * 4;
    let i = 0;
    for (; i + 4 <= F; i += 4) {
      const gv = v128.load(g + (<usize>i << 2));
      const sg = f32x4.div(gv, f32x4.add(f32x4.splat(1), exp4(f32x4.neg(gv))));
      v128.store(o + (<usize>i << 2), f32x4.mul(sg, v128.load(u + (<usize>i << 2))));
    }
    for (; i < F; i++) {
      const gv = load<f32>(g + (<usize>i << 2));
      store<f32>(o + (<usize>i << 2), gv / (1 + exp1(-gv)) * load<f32>(u + (<usize>i << 2)));
    }
  }
  gemmPacked(B, C, F, act, downP, 0, 1, h);
}

/** logits (B, V) = rmsnorm(h) head^T; lse (B) = log-sum-exp of each row; probs = softmax(logits * invTemp) unless invTemp is 0. */
export function decodeHead(h: usize, scratch: usize, norm: usize, headP: usize, logits: usize, B: i32, C: i32, V: i32, eps: f32, probs: usize, lse: usize, invTemp: f32): void {
  rmsnormRows(h, norm, scratch, B, C, eps);
  gemmPacked(B, V, C, scratch, headP, 0, 0, logits);
  for (let b = 0; b < B; b++) {
    const z = logits + <usize>(b * V) * 4, pr = probs + <usize>(b * V) * 4;
    let mx: f32 = -Infinity;
    for (let i = 0; i < V; i++) mx = max(mx, load<f32>(z + (<usize>i << 2)));
    let s1: f32 = 0;
    for (let i = 0; i < V; i++) {
      const e = exp1(load<f32>(z + (<usize>i << 2)) - mx);
      if (invTemp == 1) store<f32>(pr + (<usize>i << 2), e);
      s1 += e;
    }
    store<f32>(lse + (<usize>b << 2), mx + Mathf.log(s1));
    if (invTemp == 0) continue;
    let st = s1;
    if (invTemp != 1) {
      st = 0;
      for (let i = 0; i < V; i++) {
        const e = exp1(invTemp * (load<f32>(z + (<usize>i << 2)) - mx));
        store<f32>(pr + (<usize>i << 2), e);
        st += e;
      }
    }
    const inv: f32 = 1 / st;
    for (let i = 0; i < V; i++) store<f32>(pr + (<usize>i << 2), load<f32>(pr + (<usize>i << 2)) * inv);
  }
}
