// The kernel-backend interface: coarse kernels (gemm, norms, attention, fused losses, optimizer step),
// each with an explicit backward kernel. Buffers are opaque handles: reading data out is an explicit call.

/** The backends a user can pick. `js64` is the float64 reference used by gradient checks. */
export type BackendName = 'js' | 'js64' | 'wasm' | 'native';

/** An opaque storage handle owned by one backend (a JS typed array, or a region of a kernel arena). */
export interface Buf {
  readonly length: number;
}

export type BinaryOp = 'add' | 'sub' | 'mul' | 'div';
export type UnaryOp = 'neg' | 'exp' | 'log' | 'sqrt' | 'silu' | 'sigmoid' | 'tanh' | 'relu' | 'square';

export const BINARY_OPS: readonly BinaryOp[] = ['add', 'sub', 'mul', 'div'];
export const UNARY_OPS: readonly UnaryOp[] = ['neg', 'exp', 'log', 'sqrt', 'silu', 'sigmoid', 'tanh', 'relu', 'square'];

/** C[b] = alpha * op(A[b]) op(B[b]) (+ C[b] when accumulate), row-major, for b in [0, batch). */
export interface GemmArgs {
  transA: boolean;
  transB: boolean;
  M: number;
  N: number;
  K: number;
  a: Buf;
  b: Buf;
  c: Buf;
  /** Element offsets of the first matrix in each buffer (default 0). */
  offA?: number;
  offB?: number;
  offC?: number;
  batch: number;
  /** Element strides between batch items (0 broadcasts that operand). */
  strideA: number;
  strideB: number;
  strideC: number;
  alpha: number;
  accumulate: boolean;
}

/** Dimensions of causal attention: q (B, Hq, T, D), k and v (B, Hkv, S, D); query t sees keys <= offset + t. */
export interface AttentionDims {
  B: number;
  Hq: number;
  Hkv: number;
  T: number;
  S: number;
  D: number;
  offset: number;
  scale: number;
}

/** AdamW hyper-parameters of one step; `bc1 = 1 - beta1^t`, `bc2 = 1 - beta2^t`. */
export interface AdamWStep {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  bc1: number;
  bc2: number;
}

/**
 * A kernel backend. Broadcasting binary ops index `b` as `b[floor(i / inner) % m]`, which covers a
 * trailing-dims operand (inner = 1) and a per-row scalar (m = rows, inner = row length).
 * Kernels never zero-fill an output they overwrite; `alloc` returns unspecified contents.
 */
export interface Backend {
  readonly name: BackendName;
  /** A buffer of n float32 slots with unspecified contents. */
  alloc(n: number): Buf;
  free(buf: Buf): void;
  write(buf: Buf, src: ArrayLike<number>, offset?: number): void;
  /** A copy of `length` elements from `offset` (an explicit read-out: data may not live in JS memory). */
  read(buf: Buf, offset?: number, length?: number): Float32Array;
  fill(buf: Buf, value: number, offset?: number, length?: number): void;
  /** rows x cols block copy between strided layouts; adds into dst when accumulate. */
  copyBlock(src: Buf, srcOff: number, srcStride: number, dst: Buf, dstOff: number, dstStride: number, rows: number, cols: number, accumulate: boolean): void;
  /** dst = src permuted; shape and perm have exactly 4 entries. */
  permute(src: Buf, dst: Buf, shape: readonly number[], perm: readonly number[]): void;

  binary(op: BinaryOp, a: Buf, b: Buf, out: Buf, n: number, m: number, inner: number): void;
  /** out[j] = sum of g[i] over i with floor(i / inner) % m == j, times `a[i]` when a is given (mul backward). */
  reduceBroadcast(g: Buf, a: Buf | null, out: Buf, n: number, m: number, inner: number): void;
  unary(op: UnaryOp, x: Buf, out: Buf, n: number): void;
  /** out = g * d op(x)/dx, given x and y = op(x). */
  unaryBackward(op: UnaryOp, x: Buf, y: Buf, g: Buf, out: Buf, n: number): void;
  /** out = x * s + t. */
  affine(x: Buf, out: Buf, n: number, s: number, t: number): void;
  /** y += alpha * x. */
  axpy(alpha: number, x: Buf, y: Buf, n: number): void;
  /** out (outer, inner) = sum over the middle axis of x (outer, len, inner). */
  sumAxis(x: Buf, out: Buf, outer: number, len: number, inner: number): void;
  /** out (outer, len, inner) = g (outer, inner) * s, broadcast along the middle axis. */
  expandAxis(g: Buf, out: Buf, outer: number, len: number, inner: number, s: number): void;

  gemm(args: GemmArgs): void;

  /** out (N, C) = w[ids]. */
  embedding(w: Buf, ids: Int32Array, out: Buf, C: number): void;
  /** dw[ids[n]] += g[n]. */
  embeddingBackward(g: Buf, ids: Int32Array, dw: Buf, C: number): void;
  /** y = x / rms(x) * w over rows of length C; rstd (rows) saved for backward. */
  rmsNorm(x: Buf, w: Buf, y: Buf, rstd: Buf, rows: number, C: number, eps: number): void;
  /** dx = d/dx, dw += d/dw (dw accumulates). */
  rmsNormBackward(g: Buf, x: Buf, w: Buf, rstd: Buf, dx: Buf, dw: Buf, rows: number, C: number): void;
  /** Rotary embedding, HF rotate_half convention, on x (B, H, T, D); positions has T or B*T entries. inverse = backward. */
  rope(x: Buf, out: Buf, B: number, H: number, T: number, D: number, positions: Int32Array, theta: number, inverse: boolean): void;
  /** out = silu(gate) * up. */
  swiglu(gate: Buf, up: Buf, out: Buf, n: number): void;
  swigluBackward(g: Buf, gate: Buf, up: Buf, dgate: Buf, dup: Buf, n: number): void;
  /** Softmax (or log-softmax) over rows of length C. */
  softmax(x: Buf, y: Buf, rows: number, C: number, log: boolean): void;
  softmaxBackward(y: Buf, g: Buf, dx: Buf, rows: number, C: number, log: boolean): void;
  /** out[n] = log softmax(logits[n])[targets[n]]; lse[n] saved. */
  logprobTarget(logits: Buf, targets: Int32Array, out: Buf, lse: Buf, N: number, V: number): void;
  logprobTargetBackward(g: Buf, logits: Buf, targets: Int32Array, lse: Buf, dlogits: Buf, N: number, V: number): void;
  /** out[n] = entropy of softmax(logits[n]); lse[n] saved. */
  entropy(logits: Buf, out: Buf, lse: Buf, N: number, V: number): void;
  entropyBackward(g: Buf, logits: Buf, lse: Buf, ent: Buf, dlogits: Buf, N: number, V: number): void;
  /** out (B, Hq, T, D); probs (B, Hq, T, S) saved for backward. keyValid (B, S): 0 masks a key. */
  attention(q: Buf, k: Buf, v: Buf, out: Buf, probs: Buf, dims: AttentionDims, keyValid: Int32Array | null): void;
  /** dq, dk, dv are overwritten. */
  attentionBackward(g: Buf, q: Buf, k: Buf, v: Buf, probs: Buf, dq: Buf, dk: Buf, dv: Buf, dims: AttentionDims): void;

  adamw(p: Buf, g: Buf, m: Buf, v: Buf, n: number, h: AdamWStep): void;
  sumSquares(x: Buf, n: number): number;
  allFinite(x: Buf, n: number): boolean;
}
