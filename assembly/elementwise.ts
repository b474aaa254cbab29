// Elementwise, broadcast, reduction, copy and optimizer kernels (f32x4 bodies with scalar tails).
// Pointers are byte addresses into the shared memory; counts are in elements.
import { madd, exp4, hsum } from './simd';

// Binary op codes (same order as BINARY_OPS in src/tensor/backend.ts).
const ADD = 0, SUB = 1, MUL = 2, DIV = 3;

// @ts-ignore: decorator
@inline function bin4(op: i32, x: v128, y: v128): v128 {
  if (op == ADD) return f32x4.add(x, y);
  if (op == SUB) return f32x4.sub(x, y);
  if (op == MUL) return f32x4.mul(x, y);
  return f32x4.div(x, y);
}

// @ts-ignore: decorator
@inline function bin1(op: i32, x: f32, y: f32): f32 {
  if (op == ADD) return x + y;
  if (op == SUB) return x - y;
  if (op == MUL) return x * y;
  return x / y;
}

/** out[i] = a[i] op b[floor(i / inner) % m]. */
export function binary(op: i32, a: usize, b: usize, out: usize, n: i32, m: i32, inner: i32): void {
  if (inner == 1) {
    // rows of m elements against b
    for (let r = 0; r < n; r += m) {
      const ar = a + (<usize>r << 2), orow = out + (<usize>r << 2);
      let j = 0;
      for (; j + 4 <= m; j += 4) v128.store(orow + (<usize>j << 2), bin4(op, v128.load(ar + (<usize>j << 2)), v128.load(b + (<usize>j << 2))));
      for (; j < m; j++) store<f32>(orow + (<usize>j << 2), bin1(op, load<f32>(ar + (<usize>j << 2)), load<f32>(b + (<usize>j << 2))));
    }
    return;
  }
  // blocks of `inner` elements share one scalar of b
  const blocks = n / inner;
  for (let q = 0; q < blocks; q++) {
    const s = load<f32>(b + (<usize>(q % m) << 2));
    const sv = f32x4.splat(s);
    const base = <usize>q * inner;
    let j = 0;
    for (; j + 4 <= inner; j += 4) {
      const o = (base + j) << 2;
      v128.store(out + o, bin4(op, v128.load(a + o), sv));
    }
    for (; j < inner; j++) {
      const o = (base + j) << 2;
      store<f32>(out + o, bin1(op, load<f32>(a + o), s));
    }
  }
}

/** out[j] = sum over i with floor(i / inner) % m == j of g[i] (* a[i] when a != 0). */
export function reduceBroadcast(g: usize, a: usize, out: usize, n: i32, m: i32, inner: i32): void {
  memory.fill(out, 0, <usize>m << 2);
  if (inner == 1) {
    for (let r = 0; r < n; r += m) {
      const gr = g + (<usize>r << 2), ar = a + (<usize>r << 2);
      let j = 0;
      for (; j + 4 <= m; j += 4) {
        const o = <usize>j << 2;
        const v = a ? f32x4.mul(v128.load(gr + o), v128.load(ar + o)) : v128.load(gr + o);
        v128.store(out + o, f32x4.add(v128.load(out + o), v));
      }
      for (; j < m; j++) {
        const o = <usize>j << 2;
        store<f32>(out + o, load<f32>(out + o) + (a ? load<f32>(gr + o) * load<f32>(ar + o) : load<f32>(gr + o)));
      }
    }
    return;
  }
  const blocks = n / inner;
  for (let q = 0; q < blocks; q++) {
    const base = <usize>q * inner;
    let acc = f32x4.splat(0);
    let j = 0;
    for (; j + 4 <= inner; j += 4) {
      const o = (base + j) << 2;
      acc = a ? madd(v128.load(g + o), v128.load(a + o), acc) : f32x4.add(acc, v128.load(g + o));
    }
    let s = hsum(acc);
    for (; j < inner; j++) {
      const o = (base + j) << 2;
      s += a ? load<f32>(g + o) * load<f32>(a + o) : load<f32>(g + o);
    }
    const dst = out + (<usize>(q % m) << 2);
    store<f32>(dst, load<f32>(dst) + s);
  }
}

// Unary op codes (same order as UNARY_OPS).
const NEG = 0, EXP = 1, LOG = 2, SQRT = 3, SILU = 4, SIGMOID = 5, TANH = 6, RELU = 7, SQUARE = 8;

// @ts-ignore: decorator
@inline function sigmoid4(x: v128): v128 {
  return f32x4.div(f32x4.splat(1), f32x4.add(f32x4.splat(1), exp4(f32x4.neg(x))));
}

// @ts-ignore: decorator
@inline function un4(op: i32, x: v128): v128 {
  if (op == NEG) return f32x4.neg(x);
  if (op == EXP) return exp4(x);
  if (op == SQRT) return f32x4.sqrt(x);
  if (op == SILU) return f32x4.mul(x, sigmoid4(x));
  if (op == SIGMOID) return sigmoid4(x);
  if (op == TANH) return f32x4.sub(f32x4.mul(f32x4.splat(2), sigmoid4(f32x4.add(x, x))), f32x4.splat(1));
  if (op == RELU) return f32x4.max(x, f32x4.splat(0));
  if (op == SQUARE) return f32x4.mul(x, x);
  // LOG: scalar per lane
  return f32x4.replace_lane(f32x4.replace_lane(f32x4.replace_lane(f32x4.splat(Mathf.log(f32x4.extract_lane(x, 0))),
    1, Mathf.log(f32x4.extract_lane(x, 1))), 2, Mathf.log(f32x4.extract_lane(x, 2))), 3, Mathf.log(f32x4.extract_lane(x, 3)));
}

/** out = op(x). */
export function unary(op: i32, x: usize, out: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(out + (<usize>i << 2), un4(op, v128.load(x + (<usize>i << 2))));
  for (; i < n; i++) store<f32>(out + (<usize>i << 2), f32x4.extract_lane(un4(op, f32x4.splat(load<f32>(x + (<usize>i << 2)))), 0));
}

// @ts-ignore: decorator
@inline function ung4(op: i32, x: v128, y: v128): v128 {
  const one = f32x4.splat(1);
  if (op == NEG) return f32x4.splat(-1);
  if (op == EXP) return y;
  if (op == LOG) return f32x4.div(one, x);
  if (op == SQRT) return f32x4.div(f32x4.splat(0.5), y);
  if (op == SILU) {
    const s = sigmoid4(x);
    return f32x4.mul(s, madd(x, f32x4.sub(one, s), one));
  }
  if (op == SIGMOID) return f32x4.mul(y, f32x4.sub(one, y));
  if (op == TANH) return f32x4.sub(one, f32x4.mul(y, y));
  if (op == RELU) return v128.and(f32x4.gt(x, f32x4.splat(0)), one);
  return f32x4.add(x, x); // SQUARE
}

/** out = g * op'(x), given y = op(x). */
export function unaryBackward(op: i32, x: usize, y: usize, g: usize, out: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(out + o, f32x4.mul(v128.load(g + o), ung4(op, v128.load(x + o), v128.load(y + o))));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    const d = ung4(op, f32x4.splat(load<f32>(x + o)), f32x4.splat(load<f32>(y + o)));
    store<f32>(out + o, load<f32>(g + o) * f32x4.extract_lane(d, 0));
  }
}

/** out = x * s + t. */
export function affine(x: usize, out: usize, n: i32, s: f32, t: f32): void {
  const sv = f32x4.splat(s), tv = f32x4.splat(t);
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(out + (<usize>i << 2), madd(v128.load(x + (<usize>i << 2)), sv, tv));
  for (; i < n; i++) store<f32>(out + (<usize>i << 2), load<f32>(x + (<usize>i << 2)) * s + t);
}

/** y += alpha * x. */
export function axpy(alpha: f32, x: usize, y: usize, n: i32): void {
  const av = f32x4.splat(alpha);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(y + o, madd(v128.load(x + o), av, v128.load(y + o)));
  }
  for (; i < n; i++) store<f32>(y + (<usize>i << 2), load<f32>(y + (<usize>i << 2)) + alpha * load<f32>(x + (<usize>i << 2)));
}

/** dst[0:n] (+)= src[0:n]. */
// @ts-ignore: decorator
@inline function rowCopy(src: usize, dst: usize, n: i32, accumulate: i32): void {
  if (!accumulate) {
    memory.copy(dst, src, <usize>n << 2);
    return;
  }
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(dst + o, f32x4.add(v128.load(dst + o), v128.load(src + o)));
  }
  for (; i < n; i++) store<f32>(dst + (<usize>i << 2), load<f32>(dst + (<usize>i << 2)) + load<f32>(src + (<usize>i << 2)));
}

/** rows x cols block copy between strided layouts (element offsets and strides). */
export function copyBlock(src: usize, srcStride: i32, dst: usize, dstStride: i32, rows: i32, cols: i32, accumulate: i32): void {
  for (let r = 0; r < rows; r++) rowCopy(src + <usize>r * srcStride * 4, dst + <usize>r * dstStride * 4, cols, accumulate);
}

/** 4-D permute: dst[i,j,k,l] = src at strides (s0..s3) of the permuted source dims (n0..n3 output dims). */
export function permute4(src: usize, dst: usize, n0: i32, n1: i32, n2: i32, n3: i32, s0: i32, s1: i32, s2: i32, s3: i32): void {
  let o = dst;
  for (let i = 0; i < n0; i++)
    for (let j = 0; j < n1; j++)
      for (let k = 0; k < n2; k++) {
        const base = src + <usize>(i * s0 + j * s1 + k * s2) * 4;
        if (s3 == 1) {
          memory.copy(o, base, <usize>n3 << 2);
        } else {
          for (let l = 0; l < n3; l++) store<f32>(o + (<usize>l << 2), load<f32>(base + <usize>(l * s3) * 4));
        }
        o += <usize>n3 << 2;
      }
}

/** out (outer, inner) = sum over the middle axis of x (outer, len, inner). */
export function sumAxis(x: usize, out: usize, outer: i32, len: i32, inner: i32): void {
  for (let p = 0; p < outer; p++) {
    const orow = out + <usize>(p * inner) * 4;
    if (inner == 1) {
      const row = x + <usize>(p * len) * 4;
      let acc = f32x4.splat(0);
      let l = 0;
      for (; l + 4 <= len; l += 4) acc = f32x4.add(acc, v128.load(row + (<usize>l << 2)));
      let s = hsum(acc);
      for (; l < len; l++) s += load<f32>(row + (<usize>l << 2));
      store<f32>(orow, s);
      continue;
    }
    memory.copy(orow, x + <usize>(p * len * inner) * 4, <usize>inner << 2);
    for (let l = 1; l < len; l++) rowCopy(x + <usize>((p * len + l) * inner) * 4, orow, inner, 1);
  }
}

/** out (outer, len, inner) = g (outer, inner) * s. */
export function expandAxis(g: usize, out: usize, outer: i32, len: i32, inner: i32, s: f32): void {
  for (let p = 0; p < outer; p++)
    for (let l = 0; l < len; l++) affine(g + <usize>(p * inner) * 4, out + <usize>((p * len + l) * inner) * 4, inner, s, 0);
}

/** Fill n elements with v. */
export function fill(x: usize, n: i32, v: f32): void {
  const vv = f32x4.splat(v);
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(x + (<usize>i << 2), vv);
  for (; i < n; i++) store<f32>(x + (<usize>i << 2), v);
}

/** out = silu(gate) * up. */
export function swiglu(gate: usize, up: usize, out: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    const a = v128.load(gate + o);
    v128.store(out + o, f32x4.mul(f32x4.mul(a, sigmoid4(a)), v128.load(up + o)));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    const a = load<f32>(gate + o);
    store<f32>(out + o, a / (1 + Mathf.exp(-a)) * load<f32>(up + o));
  }
}

/** dup = g * silu(gate); dgate = g * up * silu'(gate). */
export function swigluBackward(g: usize, gate: usize, up: usize, dgate: usize, dup: usize, n: i32): void {
  const one = f32x4.splat(1);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    const a = v128.load(gate + o), gg = v128.load(g + o);
    const s = sigmoid4(a);
    v128.store(dup + o, f32x4.mul(gg, f32x4.mul(a, s)));
    v128.store(dgate + o, f32x4.mul(f32x4.mul(gg, v128.load(up + o)), f32x4.mul(s, madd(a, f32x4.sub(one, s), one))));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    const a = load<f32>(gate + o), gg = load<f32>(g + o);
    const s: f32 = 1 / (1 + Mathf.exp(-a));
    store<f32>(dup + o, gg * a * s);
    store<f32>(dgate + o, gg * load<f32>(up + o) * s * (1 + a * (1 - s)));
  }
}

/** One fused AdamW step (decoupled weight decay); constants are formed in f64 as torch does. */
export function adamw(p: usize, g: usize, m: usize, v: usize, n: i32, lr: f64, beta1: f64, beta2: f64, eps: f64, wd: f64, bc1: f64, bc2: f64): void {
  const decayS = <f32>(1 - lr * wd), b1S = <f32>beta1, b2S = <f32>beta2, c1S = <f32>(1 - beta1), c2S = <f32>(1 - beta2);
  const stepS = <f32>(lr / bc1), rbc2S = <f32>(1 / Math.sqrt(bc2)), epsS = <f32>eps;
  const decay = f32x4.splat(decayS), b1 = f32x4.splat(b1S), b2 = f32x4.splat(b2S), c1 = f32x4.splat(c1S), c2 = f32x4.splat(c2S);
  const step = f32x4.splat(stepS), rbc2 = f32x4.splat(rbc2S), ev = f32x4.splat(epsS);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    const gg = v128.load(g + o);
    const mm = madd(b1, v128.load(m + o), f32x4.mul(c1, gg));
    const vv = madd(b2, v128.load(v + o), f32x4.mul(c2, f32x4.mul(gg, gg)));
    v128.store(m + o, mm);
    v128.store(v + o, vv);
    const denom = madd(f32x4.sqrt(vv), rbc2, ev);
    v128.store(p + o, f32x4.sub(f32x4.mul(v128.load(p + o), decay), f32x4.div(f32x4.mul(step, mm), denom)));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    const gg = load<f32>(g + o);
    const mm = b1S * load<f32>(m + o) + c1S * gg;
    const vv = b2S * load<f32>(v + o) + c2S * gg * gg;
    store<f32>(m + o, mm);
    store<f32>(v + o, vv);
    store<f32>(p + o, load<f32>(p + o) * decayS - stepS * mm / (Mathf.sqrt(vv) * rbc2S + epsS));
  }
}

/** sum of x^2 (accumulated in f64 per 4-lane block for stability). */
export function sumSquares(x: usize, n: i32): f64 {
  let total: f64 = 0;
  let i = 0;
  while (i + 4 <= n) {
    let acc = f32x4.splat(0);
    const end = min(n - 3, i + 1024);
    for (; i < end; i += 4) {
      const v = v128.load(x + (<usize>i << 2));
      acc = madd(v, v, acc);
    }
    total += <f64>hsum(acc);
  }
  for (; i < n; i++) {
    const v = <f64>load<f32>(x + (<usize>i << 2));
    total += v * v;
  }
  return total;
}

/** 1 when every element is finite. */
export function allFinite(x: usize, n: i32): i32 {
  // x - x is 0 for finite values and NaN for NaN/inf; NaN != NaN
  let bad = f32x4.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = v128.load(x + (<usize>i << 2));
    bad = v128.or(bad, f32x4.ne(f32x4.sub(v, v), f32x4.sub(v, v)));
  }
  if (v128.any_true(bad)) return 0;
  for (; i < n; i++) {
    const v = load<f32>(x + (<usize>i << 2));
    if (!isFinite(v)) return 0;
  }
  return 1;
}
