// The plain TypeScript reference backend: every kernel as an obviously-correct loop.
// Generic over Float32Array (`js`) and Float64Array (`js64`, the oracle of gradient checks).

import type { AdamWStep, AttentionDims, Backend, BackendName, BinaryOp, Buf, GemmArgs, UnaryOp } from './backend.js';
import {
  refAttention,
  refAttentionBackward,
  refEntropy,
  refEntropyBackward,
  refLogprobTarget,
  refLogprobTargetBackward,
  refRope,
  type FArr,
} from './js-nn-kernels.js';

/** A reference backend over JS typed arrays. */
export class JsBackend implements Backend {
  readonly name: BackendName;
  private readonly Ctor: Float32ArrayConstructor | Float64ArrayConstructor;

  constructor(precision: 32 | 64 = 32) {
    this.name = precision === 64 ? 'js64' : 'js';
    this.Ctor = precision === 64 ? Float64Array : Float32Array;
  }

  alloc(n: number): Buf {
    return new this.Ctor(n);
  }
  free(_buf: Buf): void {}
  write(buf: Buf, src: ArrayLike<number>, offset = 0): void {
    (buf as FArr).set(src, offset);
  }
  read(buf: Buf, offset = 0, length = buf.length - offset): Float32Array {
    return Float32Array.from((buf as FArr).subarray(offset, offset + length));
  }
  fill(buf: Buf, value: number, offset = 0, length = buf.length - offset): void {
    (buf as FArr).fill(value, offset, offset + length);
  }
  copyBlock(
    src: Buf,
    srcOff: number,
    srcStride: number,
    dst: Buf,
    dstOff: number,
    dstStride: number,
    rows: number,
    cols: number,
    accumulate: boolean,
  ): void {
    const s = src as FArr,
      d = dst as FArr;
    for (let r = 0; r < rows; r++) {
      const si = srcOff + r * srcStride,
        di = dstOff + r * dstStride;
      if (accumulate) for (let c = 0; c < cols; c++) d[di + c]! += s[si + c]!;
      else for (let c = 0; c < cols; c++) d[di + c] = s[si + c]!;
    }
  }
  permute(src: Buf, dst: Buf, shape: readonly number[], perm: readonly number[]): void {
    const s = src as FArr,
      d = dst as FArr;
    const st = [shape[1]! * shape[2]! * shape[3]!, shape[2]! * shape[3]!, shape[3]!, 1];
    const [n0, n1, n2, n3] = perm.map((p) => shape[p]!) as [number, number, number, number];
    const [s0, s1, s2, s3] = perm.map((p) => st[p]!) as [number, number, number, number];
    let o = 0;
    for (let i = 0; i < n0; i++)
      for (let j = 0; j < n1; j++)
        for (let k = 0; k < n2; k++) for (let l = 0; l < n3; l++) d[o++] = s[i * s0 + j * s1 + k * s2 + l * s3]!;
  }

  binary(op: BinaryOp, a: Buf, b: Buf, out: Buf, n: number, m: number, inner: number): void {
    const x = a as FArr,
      y = b as FArr,
      o = out as FArr;
    for (let i = 0; i < n; i++) {
      const u = x[i]!,
        v = y[Math.floor(i / inner) % m]!;
      o[i] = op === 'add' ? u + v : op === 'sub' ? u - v : op === 'mul' ? u * v : u / v;
    }
  }
  reduceBroadcast(g: Buf, a: Buf | null, out: Buf, n: number, m: number, inner: number): void {
    const gg = g as FArr,
      aa = a as FArr | null,
      o = out as FArr;
    const acc = new Float64Array(m);
    for (let i = 0; i < n; i++) acc[Math.floor(i / inner) % m]! += aa ? gg[i]! * aa[i]! : gg[i]!;
    o.set(acc);
  }
  unary(op: UnaryOp, x: Buf, out: Buf, n: number): void {
    const a = x as FArr,
      o = out as FArr;
    for (let i = 0; i < n; i++) o[i] = unaryFn(op, a[i]!);
  }
  unaryBackward(op: UnaryOp, x: Buf, y: Buf, g: Buf, out: Buf, n: number): void {
    const a = x as FArr,
      b = y as FArr,
      gg = g as FArr,
      o = out as FArr;
    for (let i = 0; i < n; i++) o[i] = gg[i]! * unaryGrad(op, a[i]!, b[i]!);
  }
  affine(x: Buf, out: Buf, n: number, s: number, t: number): void {
    const a = x as FArr,
      o = out as FArr;
    for (let i = 0; i < n; i++) o[i] = a[i]! * s + t;
  }
  axpy(alpha: number, x: Buf, y: Buf, n: number): void {
    const a = x as FArr,
      o = y as FArr;
    for (let i = 0; i < n; i++) o[i]! += alpha * a[i]!;
  }
  sumAxis(x: Buf, out: Buf, outer: number, len: number, inner: number): void {
    const a = x as FArr,
      o = out as FArr;
    for (let p = 0; p < outer; p++)
      for (let q = 0; q < inner; q++) {
        let s = 0;
        for (let l = 0; l < len; l++) s += a[(p * len + l) * inner + q]!;
        o[p * inner + q] = s;
      }
  }
  expandAxis(g: Buf, out: Buf, outer: number, len: number, inner: number, s: number): void {
    const a = g as FArr,
      o = out as FArr;
    for (let p = 0; p < outer; p++)
      for (let l = 0; l < len; l++)
        for (let q = 0; q < inner; q++) o[(p * len + l) * inner + q] = a[p * inner + q]! * s;
  }

  gemm(p: GemmArgs): void {
    const A = p.a as FArr,
      Bm = p.b as FArr,
      C = p.c as FArr;
    const { M, N, K } = p;
    const aR = p.transA ? 1 : K,
      aC = p.transA ? M : 1;
    const bR = p.transB ? 1 : N,
      bC = p.transB ? K : 1;
    const row = new Float64Array(N);
    for (let t = 0; t < p.batch; t++) {
      const oa = (p.offA ?? 0) + t * p.strideA,
        ob = (p.offB ?? 0) + t * p.strideB,
        oc = (p.offC ?? 0) + t * p.strideC;
      for (let i = 0; i < M; i++) {
        row.fill(0);
        for (let k = 0; k < K; k++) {
          const av = A[oa + i * aR + k * aC]!;
          if (av === 0) continue;
          const base = ob + k * bR;
          for (let j = 0; j < N; j++) row[j]! += av * Bm[base + j * bC]!;
        }
        const ci = oc + i * N;
        for (let j = 0; j < N; j++) C[ci + j] = (p.accumulate ? C[ci + j]! : 0) + p.alpha * row[j]!;
      }
    }
  }

  embedding(w: Buf, ids: Int32Array, out: Buf, C: number): void {
    const W = w as FArr,
      o = out as FArr;
    for (let n = 0; n < ids.length; n++) o.set(W.subarray(ids[n]! * C, ids[n]! * C + C), n * C);
  }
  embeddingBackward(g: Buf, ids: Int32Array, dw: Buf, C: number): void {
    const G = g as FArr,
      D = dw as FArr;
    for (let n = 0; n < ids.length; n++) for (let c = 0; c < C; c++) D[ids[n]! * C + c]! += G[n * C + c]!;
  }
  rmsNorm(x: Buf, w: Buf, y: Buf, rstd: Buf, rows: number, C: number, eps: number): void {
    const X = x as FArr,
      W = w as FArr,
      Y = y as FArr,
      R = rstd as FArr;
    for (let r = 0; r < rows; r++) {
      let ss = 0;
      for (let c = 0; c < C; c++) ss += X[r * C + c]! ** 2;
      const rs = 1 / Math.sqrt(ss / C + eps);
      R[r] = rs;
      for (let c = 0; c < C; c++) Y[r * C + c] = X[r * C + c]! * rs * W[c]!;
    }
  }
  rmsNormBackward(g: Buf, x: Buf, w: Buf, rstd: Buf, dx: Buf, dw: Buf, rows: number, C: number): void {
    const G = g as FArr,
      X = x as FArr,
      W = w as FArr,
      R = rstd as FArr,
      DX = dx as FArr,
      DW = dw as FArr;
    for (let r = 0; r < rows; r++) {
      const rs = R[r]!;
      let dot = 0; // sum_c g_c w_c xhat_c
      for (let c = 0; c < C; c++) dot += G[r * C + c]! * W[c]! * X[r * C + c]! * rs;
      for (let c = 0; c < C; c++) {
        const xhat = X[r * C + c]! * rs;
        DW[c]! += G[r * C + c]! * xhat;
        DX[r * C + c] = rs * (G[r * C + c]! * W[c]! - (xhat * dot) / C);
      }
    }
  }
  rope(
    x: Buf,
    out: Buf,
    B: number,
    H: number,
    T: number,
    D: number,
    positions: Int32Array,
    theta: number,
    inverse: boolean,
  ): void {
    refRope(x as FArr, out as FArr, B, H, T, D, positions, theta, inverse);
  }
  swiglu(gate: Buf, up: Buf, out: Buf, n: number): void {
    const a = gate as FArr,
      b = up as FArr,
      o = out as FArr;
    for (let i = 0; i < n; i++) o[i] = (a[i]! / (1 + Math.exp(-a[i]!))) * b[i]!;
  }
  swigluBackward(g: Buf, gate: Buf, up: Buf, dgate: Buf, dup: Buf, n: number): void {
    const G = g as FArr,
      a = gate as FArr,
      b = up as FArr,
      da = dgate as FArr,
      db = dup as FArr;
    for (let i = 0; i < n; i++) {
      const s = 1 / (1 + Math.exp(-a[i]!));
      db[i] = G[i]! * a[i]! * s;
      da[i] = G[i]! * b[i]! * s * (1 + a[i]! * (1 - s));
    }
  }
  softmax(x: Buf, y: Buf, rows: number, C: number, log: boolean): void {
    const X = x as FArr,
      Y = y as FArr;
    for (let r = 0; r < rows; r++) {
      let mx = -Infinity;
      for (let c = 0; c < C; c++) mx = Math.max(mx, X[r * C + c]!);
      let s = 0;
      for (let c = 0; c < C; c++) s += Math.exp(X[r * C + c]! - mx);
      const lse = mx + Math.log(s);
      for (let c = 0; c < C; c++) Y[r * C + c] = log ? X[r * C + c]! - lse : Math.exp(X[r * C + c]! - lse);
    }
  }
  softmaxBackward(y: Buf, g: Buf, dx: Buf, rows: number, C: number, log: boolean): void {
    const Y = y as FArr,
      G = g as FArr,
      DX = dx as FArr;
    for (let r = 0; r < rows; r++) {
      let s = 0;
      for (let c = 0; c < C; c++) s += log ? G[r * C + c]! : G[r * C + c]! * Y[r * C + c]!;
      for (let c = 0; c < C; c++) {
        const i = r * C + c;
        DX[i] = log ? G[i]! - Math.exp(Y[i]!) * s : Y[i]! * (G[i]! - s);
      }
    }
  }
  logprobTarget(logits: Buf, targets: Int32Array, out: Buf, lse: Buf, N: number, V: number): void {
    refLogprobTarget(logits as FArr, targets, out as FArr, lse as FArr, N, V);
  }
  logprobTargetBackward(g: Buf, logits: Buf, targets: Int32Array, lse: Buf, dlogits: Buf, N: number, V: number): void {
    refLogprobTargetBackward(g as FArr, logits as FArr, targets, lse as FArr, dlogits as FArr, N, V);
  }
  entropy(logits: Buf, out: Buf, lse: Buf, N: number, V: number): void {
    refEntropy(logits as FArr, out as FArr, lse as FArr, N, V);
  }
  entropyBackward(g: Buf, logits: Buf, lse: Buf, ent: Buf, dlogits: Buf, N: number, V: number): void {
    refEntropyBackward(g as FArr, logits as FArr, lse as FArr, ent as FArr, dlogits as FArr, N, V);
  }
  attention(q: Buf, k: Buf, v: Buf, out: Buf, probs: Buf, dims: AttentionDims, keyValid: Int32Array | null): void {
    refAttention(q as FArr, k as FArr, v as FArr, out as FArr, probs as FArr, dims, keyValid);
  }
  attentionBackward(g: Buf, q: Buf, k: Buf, v: Buf, probs: Buf, dq: Buf, dk: Buf, dv: Buf, dims: AttentionDims): void {
    refAttentionBackward(
      g as FArr,
      q as FArr,
      k as FArr,
      v as FArr,
      probs as FArr,
      dq as FArr,
      dk as FArr,
      dv as FArr,
      dims,
    );
  }

  adamw(p: Buf, g: Buf, m: Buf, v: Buf, n: number, h: AdamWStep): void {
    const P = p as FArr,
      G = g as FArr,
      Mm = m as FArr,
      Vv = v as FArr;
    for (let i = 0; i < n; i++) {
      P[i]! -= h.lr * h.weightDecay * P[i]!;
      Mm[i] = h.beta1 * Mm[i]! + (1 - h.beta1) * G[i]!;
      Vv[i] = h.beta2 * Vv[i]! + (1 - h.beta2) * G[i]! * G[i]!;
      P[i]! -= ((h.lr / h.bc1) * Mm[i]!) / (Math.sqrt(Vv[i]!) / Math.sqrt(h.bc2) + h.eps);
    }
  }
  sumSquares(x: Buf, n: number): number {
    const a = x as FArr;
    let s = 0;
    for (let i = 0; i < n; i++) s += a[i]! * a[i]!;
    return s;
  }
  allFinite(x: Buf, n: number): boolean {
    const a = x as FArr;
    for (let i = 0; i < n; i++) if (!Number.isFinite(a[i]!)) return false;
    return true;
  }
}

/** op(x) for the unary ops. */
export function unaryFn(op: UnaryOp, x: number): number {
  switch (op) {
    case 'neg':
      return -x;
    case 'exp':
      return Math.exp(x);
    case 'log':
      return Math.log(x);
    case 'sqrt':
      return Math.sqrt(x);
    case 'silu':
      return x / (1 + Math.exp(-x));
    case 'sigmoid':
      return 1 / (1 + Math.exp(-x));
    case 'tanh':
      return Math.tanh(x);
    case 'relu':
      return x > 0 ? x : 0;
    case 'square':
      return x * x;
  }
}

/** d op(x) / dx given x and y = op(x). */
export function unaryGrad(op: UnaryOp, x: number, y: number): number {
  switch (op) {
    case 'neg':
      return -1;
    case 'exp':
      return y;
    case 'log':
      return 1 / x;
    case 'sqrt':
      return 0.5 / y;
    case 'silu': {
      const s = 1 / (1 + Math.exp(-x));
      return s * (1 + x * (1 - s));
    }
    case 'sigmoid':
      return y * (1 - y);
    case 'tanh':
      return 1 - y * y;
    case 'relu':
      return x > 0 ? 1 : 0;
    case 'square':
      return 2 * x;
  }
}
