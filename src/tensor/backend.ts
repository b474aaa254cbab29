// The kernel-backend interface: coarse kernels (gemm, norms, attention, fused losses, optimizer step),
// each with an explicit backward kernel, and optionally a fused decode step. Buffers are opaque handles:
// reading data out is an explicit call.

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
  /**
   * A copy of `length` elements from `offset` (an explicit read-out: data may not live in JS memory). With `out` (at
   * least `length` long) a backend may copy into it instead of a new array: the copy is the returned array either way.
   */
  read(buf: Buf, offset?: number, length?: number, out?: Float32Array): Float32Array;
  fill(buf: Buf, value: number, offset?: number, length?: number): void;
  /** rows x cols block copy between strided layouts; adds into dst when accumulate. */
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
  ): void;
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
  /**
   * Rotary embedding, HF rotate_half convention, on x (B, H, T, D); positions has T or B*T entries. inverse = backward.
   */
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
  ): void;
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

  /**
   * The fused decode kernels for a decoder of `dims` whose KV cache holds `capacity` slots per sequence, or absent
   * where the model decodes op by op (the js backends). src/model/decode-fast.ts drives them.
   */
  decodeKernels?(dims: DecoderDims, capacity: number): DecodeKernels;
}

/** The shapes of a Llama / Qwen2-family decoder, as the fused decode needs them. */
export interface DecoderDims {
  /** Hidden size, query heads, KV heads, head dimension, MLP width, vocabulary size. */
  C: number;
  H: number;
  Hkv: number;
  D: number;
  F: number;
  V: number;
  /** RMSNorm epsilon. */
  eps: number;
}

/**
 * One decoder layer for the fused decode: norm weights as stored, matrices packed by `DecodeKernels.pack`, its KV
 * cache.
 */
export interface DecodeLayer {
  inNorm: Buf;
  /** q | k | v (((H + 2 Hkv) D), C), its bias or null. */
  qkv: Buf;
  qkvBias: Buf | null;
  /** o_proj (C, H D), its bias or null. */
  o: Buf;
  oBias: Buf | null;
  postNorm: Buf;
  /** gate | up (2F, C). */
  gateUp: Buf;
  /** down_proj (C, F). */
  down: Buf;
  /** Qwen3's per-head q / k RMSNorm weights (D), or null. */
  qNorm: Buf | null;
  kNorm: Buf | null;
  /** The layer's cache, (sequences, Hkv, capacity, D) each. */
  keys: Buf;
  values: Buf;
}

/**
 * One fused call: rows [0, rows) of `h` (T consecutive tokens of each of the sequences seq0, seq0 + 1, ...; the first
 * at cache slot `start`) through every layer (their keys and values appended to the cache, each attending to its
 * sequence's slots up to its own), then each sequence's last row through the final norm and the LM head into rows
 * seq0, seq0 + 1, ... of logits, probs and lse. T = 1 decodes one token per sequence; T > 1 prefills prompts.
 */
export interface DecodeCall {
  layers: readonly DecodeLayer[];
  /** The final RMSNorm weight (C) and the LM head packed (V, C). */
  norm: Buf;
  head: Buf;
  /** (rows, C): the rows' token embeddings on entry; scratch afterwards. */
  h: Buf;
  /** (rows, D): cos (D/2) | sin (D/2) of each row's RoPE position. */
  rope: Buf;
  /** (sequences, capacity) key mask of the whole cache (0 hides a slot), or null when every slot is real. */
  keyValid: Int32Array | null;
  rows: number;
  T: number;
  seq0: number;
  start: number;
  /** (sequences, V), (sequences, V), (sequences): logits, softmax(logits * invTemp) and log-sum-exp(logits). */
  logits: Buf;
  probs: Buf;
  lse: Buf;
  /** 1 / temperature; 0 (greedy) leaves probs untouched. */
  invTemp: number;
}

/** A backend's fused decode kernels for one decoder shape and cache capacity; `dispose` frees their scratch. */
export interface DecodeKernels {
  /** Whether a call takes T > 1 tokens per sequence (prompts); otherwise only T = 1 and seq0 = 0. */
  readonly prefills: boolean;
  /** Threads that split a call's sequences between them (a sequence's rows stay on one). */
  readonly threads: number;
  /** Floats of W (N, K) once packed. */
  packedLength(N: number, K: number): number;
  /** out = W (N, K) in the kernels' panel layout. */
  pack(w: Buf, out: Buf, N: number, K: number): void;
  run(call: DecodeCall): void;
  dispose(): void;
}
