// Fused neural-net kernels: RMSNorm, RoPE, softmax / log-softmax, log-prob of target, entropy,
// embedding (causal attention: attention.ts).
import { madd, exp4, hsum, hmax } from './simd';

// @ts-ignore: decorator
@inline function addr(base: usize, i: i32): usize {
  return base + (<usize>i << 2);
}

export function dot(a: usize, b: usize, n: i32): f32 {
  let acc = f32x4.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) acc = madd(v128.load(addr(a, i)), v128.load(addr(b, i)), acc);
  let s = hsum(acc);
  for (; i < n; i++) s += load<f32>(addr(a, i)) * load<f32>(addr(b, i));
  return s;
}

export function rowMax(x: usize, n: i32): f32 {
  let m = f32x4.splat(-Infinity);
  let i = 0;
  for (; i + 4 <= n; i += 4) m = f32x4.max(m, v128.load(addr(x, i)));
  let s = hmax(m);
  for (; i < n; i++) s = max(s, load<f32>(addr(x, i)));
  return s;
}

/** sum exp(x - mx), optionally writing the exps to y (y = 0: no write). */
export function expSum(x: usize, y: usize, n: i32, mx: f32): f32 {
  const mv = f32x4.splat(mx);
  let acc = f32x4.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const e = exp4(f32x4.sub(v128.load(addr(x, i)), mv));
    if (y) v128.store(addr(y, i), e);
    acc = f32x4.add(acc, e);
  }
  let s = hsum(acc);
  for (; i < n; i++) {
    const e = f32x4.extract_lane(exp4(f32x4.splat(load<f32>(addr(x, i)) - mx)), 0);
    if (y) store<f32>(addr(y, i), e);
    s += e;
  }
  return s;
}

export function scaleRow(x: usize, y: usize, n: i32, s: f32, t: f32): void {
  const sv = f32x4.splat(s), tv = f32x4.splat(t);
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(addr(y, i), madd(v128.load(addr(x, i)), sv, tv));
  for (; i < n; i++) store<f32>(addr(y, i), load<f32>(addr(x, i)) * s + t);
}

/** y = x / rms(x) * w per row of C; rstd (rows) = 1 / rms (rstd = 0: not kept). */
export function rmsNorm(x: usize, w: usize, y: usize, rstd: usize, rows: i32, C: i32, eps: f32): void {
  for (let r = 0; r < rows; r++) {
    const xr = x + <usize>(r * C) * 4, yr = y + <usize>(r * C) * 4;
    const rs: f32 = 1 / Mathf.sqrt(dot(xr, xr, C) / <f32>C + eps);
    if (rstd) store<f32>(addr(rstd, r), rs);
    const rv = f32x4.splat(rs);
    let i = 0;
    for (; i + 4 <= C; i += 4) v128.store(addr(yr, i), f32x4.mul(f32x4.mul(v128.load(addr(xr, i)), rv), v128.load(addr(w, i))));
    for (; i < C; i++) store<f32>(addr(yr, i), load<f32>(addr(xr, i)) * rs * load<f32>(addr(w, i)));
  }
}

/** dx overwritten; dw accumulated. */
export function rmsNormBackward(g: usize, x: usize, w: usize, rstd: usize, dx: usize, dw: usize, rows: i32, C: i32): void {
  for (let r = 0; r < rows; r++) {
    const o = <usize>(r * C) * 4;
    const gr = g + o, xr = x + o, dr = dx + o;
    const rs = load<f32>(addr(rstd, r));
    // d = sum_c g w x * rs
    let acc = f32x4.splat(0);
    let i = 0;
    for (; i + 4 <= C; i += 4) acc = madd(f32x4.mul(v128.load(addr(gr, i)), v128.load(addr(w, i))), v128.load(addr(xr, i)), acc);
    let d = hsum(acc);
    for (; i < C; i++) d += load<f32>(addr(gr, i)) * load<f32>(addr(w, i)) * load<f32>(addr(xr, i));
    const k: f32 = d * rs * rs * rs / <f32>C;
    const rv = f32x4.splat(rs), kv = f32x4.splat(k);
    i = 0;
    for (; i + 4 <= C; i += 4) {
      const gv = v128.load(addr(gr, i)), xv = v128.load(addr(xr, i));
      v128.store(addr(dr, i), f32x4.sub(f32x4.mul(f32x4.mul(gv, v128.load(addr(w, i))), rv), f32x4.mul(xv, kv)));
      v128.store(addr(dw, i), madd(f32x4.mul(gv, xv), rv, v128.load(addr(dw, i))));
    }
    for (; i < C; i++) {
      const gv = load<f32>(addr(gr, i)), xv = load<f32>(addr(xr, i));
      store<f32>(addr(dr, i), gv * load<f32>(addr(w, i)) * rs - xv * k);
      store<f32>(addr(dw, i), load<f32>(addr(dw, i)) + gv * xv * rs);
    }
  }
}

/**
 * Rotary embedding on x (B, H, T, D) with a table of cos (half) then sin (half) per position entry;
 * entry of (b, t) is b*T + t when perBatch else t. sign = -1 rotates backwards (the backward pass).
 */
export function rope(x: usize, out: usize, B: i32, H: i32, T: i32, D: i32, tab: usize, perBatch: i32, sign: f32): void {
  const half = D >> 1;
  const sg = f32x4.splat(sign);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++) {
        const p = perBatch ? b * T + t : t;
        const cs = tab + <usize>(p * D) * 4, sn = cs + (<usize>half << 2);
        const o = <usize>(((b * H + h) * T + t) * D) * 4;
        const x1 = x + o, x2 = x1 + (<usize>half << 2), o1 = out + o, o2 = o1 + (<usize>half << 2);
        let i = 0;
        for (; i + 4 <= half; i += 4) {
          const c = v128.load(addr(cs, i)), s = f32x4.mul(v128.load(addr(sn, i)), sg);
          const a = v128.load(addr(x1, i)), bb = v128.load(addr(x2, i));
          v128.store(addr(o1, i), f32x4.sub(f32x4.mul(a, c), f32x4.mul(bb, s)));
          v128.store(addr(o2, i), madd(a, s, f32x4.mul(bb, c)));
        }
        for (; i < half; i++) {
          const c = load<f32>(addr(cs, i)), s = load<f32>(addr(sn, i)) * sign;
          const a = load<f32>(addr(x1, i)), bb = load<f32>(addr(x2, i));
          store<f32>(addr(o1, i), a * c - bb * s);
          store<f32>(addr(o2, i), bb * c + a * s);
        }
      }
}

export function softmax(x: usize, y: usize, rows: i32, C: i32, log: i32): void {
  for (let r = 0; r < rows; r++) {
    const xr = x + <usize>(r * C) * 4, yr = y + <usize>(r * C) * 4;
    const mx = rowMax(xr, C);
    if (log) {
      const lse = mx + Mathf.log(expSum(xr, 0, C, mx));
      scaleRow(xr, yr, C, 1, -lse);
    } else {
      const s = expSum(xr, yr, C, mx);
      scaleRow(yr, yr, C, 1 / s, 0);
    }
  }
}

export function softmaxBackward(y: usize, g: usize, dx: usize, rows: i32, C: i32, log: i32): void {
  for (let r = 0; r < rows; r++) {
    const o = <usize>(r * C) * 4;
    const yr = y + o, gr = g + o, dr = dx + o;
    let i = 0;
    if (log) {
      let acc = f32x4.splat(0);
      for (; i + 4 <= C; i += 4) acc = f32x4.add(acc, v128.load(addr(gr, i)));
      let s = hsum(acc);
      for (; i < C; i++) s += load<f32>(addr(gr, i));
      const sv = f32x4.splat(s);
      i = 0;
      for (; i + 4 <= C; i += 4) v128.store(addr(dr, i), f32x4.sub(v128.load(addr(gr, i)), f32x4.mul(exp4(v128.load(addr(yr, i))), sv)));
      for (; i < C; i++) store<f32>(addr(dr, i), load<f32>(addr(gr, i)) - Mathf.exp(load<f32>(addr(yr, i))) * s);
    } else {
      const s = dot(gr, yr, C);
      const sv = f32x4.splat(s);
      for (; i + 4 <= C; i += 4) v128.store(addr(dr, i), f32x4.mul(v128.load(addr(yr, i)), f32x4.sub(v128.load(addr(gr, i)), sv)));
      for (; i < C; i++) store<f32>(addr(dr, i), load<f32>(addr(yr, i)) * (load<f32>(addr(gr, i)) - s));
    }
  }
}

function rowLse(xr: usize, V: i32): f32 {
  const mx = rowMax(xr, V);
  return mx + Mathf.log(expSum(xr, 0, V, mx));
}

export function logprobTarget(logits: usize, targets: usize, out: usize, lse: usize, N: i32, V: i32): void {
  for (let n = 0; n < N; n++) {
    const xr = logits + <usize>n * V * 4;
    const l = rowLse(xr, V);
    store<f32>(addr(lse, n), l);
    store<f32>(addr(out, n), load<f32>(addr(xr, load<i32>(addr(targets, n)))) - l);
  }
}

export function logprobTargetBackward(g: usize, logits: usize, targets: usize, lse: usize, dlogits: usize, N: i32, V: i32): void {
  for (let n = 0; n < N; n++) {
    const xr = logits + <usize>n * V * 4, dr = dlogits + <usize>n * V * 4;
    const gn = load<f32>(addr(g, n));
    // dlogits = -g * softmax, written in one pass
    const lv = f32x4.splat(load<f32>(addr(lse, n))), ng = f32x4.splat(-gn);
    let i = 0;
    for (; i + 4 <= V; i += 4) v128.store(addr(dr, i), f32x4.mul(exp4(f32x4.sub(v128.load(addr(xr, i)), lv)), ng));
    for (; i < V; i++) store<f32>(addr(dr, i), -gn * f32x4.extract_lane(exp4(f32x4.splat(load<f32>(addr(xr, i)) - load<f32>(addr(lse, n)))), 0));
    const t = addr(dr, load<i32>(addr(targets, n)));
    store<f32>(t, load<f32>(t) + gn);
  }
}

export function entropy(logits: usize, out: usize, lse: usize, N: i32, V: i32): void {
  for (let n = 0; n < N; n++) {
    const xr = logits + <usize>n * V * 4;
    const l = rowLse(xr, V);
    store<f32>(addr(lse, n), l);
    const lv = f32x4.splat(l);
    let acc = f32x4.splat(0);
    let i = 0;
    // H = -sum p * (x - lse): summing the centred log-probs avoids cancelling two large numbers
    for (; i + 4 <= V; i += 4) {
      const lp = f32x4.sub(v128.load(addr(xr, i)), lv);
      acc = madd(exp4(lp), lp, acc);
    }
    let s = hsum(acc);
    for (; i < V; i++) {
      const lp = load<f32>(addr(xr, i)) - l;
      s += Mathf.exp(lp) * lp;
    }
    store<f32>(addr(out, n), -s);
  }
}

export function entropyBackward(g: usize, logits: usize, lse: usize, ent: usize, dlogits: usize, N: i32, V: i32): void {
  for (let n = 0; n < N; n++) {
    const xr = logits + <usize>n * V * 4, dr = dlogits + <usize>n * V * 4;
    const gn = load<f32>(addr(g, n)), l = load<f32>(addr(lse, n)), h = load<f32>(addr(ent, n));
    const lv = f32x4.splat(l), hv = f32x4.splat(h), ng = f32x4.splat(-gn);
    let i = 0;
    for (; i + 4 <= V; i += 4) {
      const lp = f32x4.sub(v128.load(addr(xr, i)), lv);
      v128.store(addr(dr, i), f32x4.mul(f32x4.mul(ng, exp4(lp)), f32x4.add(lp, hv)));
    }
    for (; i < V; i++) {
      const lp = load<f32>(addr(xr, i)) - l;
      store<f32>(addr(dr, i), -gn * Mathf.exp(lp) * (lp + h));
    }
  }
}

export function embedding(w: usize, ids: usize, out: usize, N: i32, C: i32): void {
  for (let n = 0; n < N; n++) memory.copy(out + <usize>(n * C) * 4, w + <usize>load<i32>(addr(ids, n)) * C * 4, <usize>C << 2);
}

export function embeddingBackward(g: usize, ids: usize, dw: usize, N: i32, C: i32): void {
  for (let n = 0; n < N; n++) {
    const src = g + <usize>(n * C) * 4, dst = dw + <usize>load<i32>(addr(ids, n)) * C * 4;
    let i = 0;
    for (; i + 4 <= C; i += 4) v128.store(addr(dst, i), f32x4.add(v128.load(addr(dst, i)), v128.load(addr(src, i))));
    for (; i < C; i++) store<f32>(addr(dst, i), load<f32>(addr(dst, i)) + load<f32>(addr(src, i)));
  }
}
