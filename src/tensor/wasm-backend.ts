// The WASM SIMD backend: kernels compiled from assembly/ by AssemblyScript, tensors in the shared arena,
// large kernels split across a worker thread. No Node APIs here (browsers can use it); see node-kernels.ts.

import { Arena, ArenaBuf } from './arena.js';
import type {
  AdamWStep,
  AttentionDims,
  Backend,
  BackendName,
  BinaryOp,
  Buf,
  DecodeKernels,
  DecoderDims,
  GemmArgs,
  UnaryOp,
} from './backend.js';
import { BINARY_OPS, UNARY_OPS } from './backend.js';
import { WasmDecodeKernels } from './decode-kernels.js';
import { ropeAngle, ropeInvFreq } from './js-nn-kernels.js';
import type { KernelArgs, KernelName, ThreadPool } from './thread-pool.js';
import { WASM_KERNEL_ARITY, type WasmKernels } from './wasm-kernels.js';

/**
 * The exports of an instantiated kernel module as `WasmKernels`, after checking that each declared function is there
 * with its parameter count (a module built from other sources would otherwise read garbage arguments).
 */
export function checkKernels(exports: Record<string, unknown>): WasmKernels {
  const wrong = Object.entries(WASM_KERNEL_ARITY).flatMap(([name, n]) => {
    const f = exports[name];
    if (typeof f !== 'function') return [`${name} is missing`];
    return f.length === n ? [] : [`${name} takes ${f.length} arguments, not ${n}`];
  });
  if (wrong.length > 0)
    throw new Error(
      `the wasm kernel module does not match src/tensor/wasm-kernels.ts (${wrong.join('; ')}); rebuild it with \`npm run build\``,
    );
  return exports as unknown as WasmKernels;
}

const GEMM_SPLIT_MACS = 1 << 18; // below this many multiply-adds one thread is faster than a handshake
const ELEMWISE_SPLIT = 1 << 16;
const SMALL_M = 96; // up to this many rows, A B^T runs as dot products (gemmNT)

const p = (b: Buf): number => (b as ArenaBuf).ptr;

export class WasmBackend implements Backend {
  readonly name: BackendName = 'wasm';
  private readonly scratch: ArenaBuf[] = [];
  private ropeCache: { key: string; buf: ArenaBuf }[] = [];

  /**
   * @param k the instantiated kernel exports (instantiated on arena.memory)
   * @param pool a worker running the same module on the same memory, or null for one thread
   */
  constructor(
    readonly k: WasmKernels,
    readonly arena: Arena,
    readonly pool: ThreadPool | null,
    readonly variant: string,
  ) {}

  /**
   * The f32x4 multiply-add rate of one thread, GFLOP/s (best of 5 runs): the ceiling of any kernel of this module on
   * this machine.
   */
  fmaPeakGflops(): number {
    const n = 1 << 22; // 96 flops a round
    this.k.fmaProbe(n, 1);
    let best = Infinity;
    for (let r = 0; r < 5; r++) {
      const t0 = performance.now();
      this.k.fmaProbe(n, 1);
      best = Math.min(best, performance.now() - t0);
    }
    return (96 * n) / best / 1e6;
  }

  /** Threads used by the big kernels. */
  get threads(): number {
    return this.pool ? 2 : 1;
  }

  /** Per-thread scratch of at least `bytes`. */
  protected scratchFor(thread: number, bytes: number): number {
    const have = this.scratch[thread];
    if (have && have.bytes >= bytes) return have.ptr;
    if (have) this.arena.free(have);
    const b = this.arena.alloc(Math.ceil(bytes / 4));
    this.scratch[thread] = b;
    return b.ptr;
  }

  /** Run kernel `fn` with per-thread argument lists (one list: this thread only). */
  protected par<K extends KernelName>(fn: K, argsMain: KernelArgs<K>, argsWorker?: KernelArgs<K>): void {
    const call = this.k[fn] as (...a: number[]) => unknown;
    if (argsWorker && this.pool) this.pool.run(fn, argsMain, argsWorker);
    else call(...argsMain);
    if (argsWorker && !this.pool) call(...argsWorker);
  }

  /** Copy ids into the arena for the duration of fn. */
  protected withInts<T>(ids: Int32Array, fn: (ptr: number) => T): T {
    const b = this.arena.alloc(ids.length);
    this.arena.i32.set(ids, b.ptr >>> 2);
    try {
      return fn(b.ptr);
    } finally {
      this.arena.free(b);
    }
  }

  alloc(n: number): Buf {
    return this.arena.alloc(n);
  }
  free(buf: Buf): void {
    this.arena.free(buf as ArenaBuf);
  }
  write(buf: Buf, src: ArrayLike<number>, offset = 0): void {
    this.arena.f32.set(src, (p(buf) >>> 2) + offset);
  }
  read(buf: Buf, offset = 0, length = buf.length - offset, out?: Float32Array): Float32Array {
    const s = (p(buf) >>> 2) + offset;
    if (!out || out.length < length) return this.arena.f32.slice(s, s + length);
    out.set(this.arena.f32.subarray(s, s + length));
    return out.subarray(0, length);
  }
  fill(buf: Buf, value: number, offset = 0, length = buf.length - offset): void {
    this.k.fill(p(buf) + offset * 4, length, value);
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
    this.k.copyBlock(p(src) + srcOff * 4, srcStride, p(dst) + dstOff * 4, dstStride, rows, cols, accumulate ? 1 : 0);
  }
  permute(src: Buf, dst: Buf, shape: readonly number[], perm: readonly number[]): void {
    const st = [shape[1]! * shape[2]! * shape[3]!, shape[2]! * shape[3]!, shape[3]!, 1];
    const n = perm.map((q) => shape[q]!),
      s = perm.map((q) => st[q]!);
    this.k.permute4(p(src), p(dst), n[0]!, n[1]!, n[2]!, n[3]!, s[0]!, s[1]!, s[2]!, s[3]!);
  }

  binary(op: BinaryOp, a: Buf, b: Buf, out: Buf, n: number, m: number, inner: number): void {
    const code = BINARY_OPS.indexOf(op);
    // split at a whole number of broadcast periods
    const period = inner === 1 ? m : inner * m;
    const half = Math.floor(n / period / 2) * period;
    if (n >= ELEMWISE_SPLIT && half > 0)
      this.par(
        'binary',
        [code, p(a), p(b), p(out), half, m, inner],
        [code, p(a) + half * 4, p(b), p(out) + half * 4, n - half, m, inner],
      );
    else this.k.binary(code, p(a), p(b), p(out), n, m, inner);
  }
  reduceBroadcast(g: Buf, a: Buf | null, out: Buf, n: number, m: number, inner: number): void {
    this.k.reduceBroadcast(p(g), a ? p(a) : 0, p(out), n, m, inner);
  }
  unary(op: UnaryOp, x: Buf, out: Buf, n: number): void {
    const code = UNARY_OPS.indexOf(op);
    const h = (n >> 3) << 2;
    if (n >= ELEMWISE_SPLIT) this.par('unary', [code, p(x), p(out), h], [code, p(x) + h * 4, p(out) + h * 4, n - h]);
    else this.k.unary(code, p(x), p(out), n);
  }
  unaryBackward(op: UnaryOp, x: Buf, y: Buf, g: Buf, out: Buf, n: number): void {
    const code = UNARY_OPS.indexOf(op);
    const h = (n >> 3) << 2,
      o = h * 4;
    if (n >= ELEMWISE_SPLIT)
      this.par(
        'unaryBackward',
        [code, p(x), p(y), p(g), p(out), h],
        [code, p(x) + o, p(y) + o, p(g) + o, p(out) + o, n - h],
      );
    else this.k.unaryBackward(code, p(x), p(y), p(g), p(out), n);
  }
  affine(x: Buf, out: Buf, n: number, s: number, t: number): void {
    this.k.affine(p(x), p(out), n, s, t);
  }
  axpy(alpha: number, x: Buf, y: Buf, n: number): void {
    const h = (n >> 3) << 2,
      o = h * 4;
    if (n >= ELEMWISE_SPLIT) this.par('axpy', [alpha, p(x), p(y), h], [alpha, p(x) + o, p(y) + o, n - h]);
    else this.k.axpy(alpha, p(x), p(y), n);
  }
  sumAxis(x: Buf, out: Buf, outer: number, len: number, inner: number): void {
    this.k.sumAxis(p(x), p(out), outer, len, inner);
  }
  expandAxis(g: Buf, out: Buf, outer: number, len: number, inner: number, s: number): void {
    this.k.expandAxis(p(g), p(out), outer, len, inner, s);
  }

  gemm(a: GemmArgs): void {
    const { M, N, K } = a;
    const lda = a.transA ? M : K,
      ldb = a.transB ? K : N;
    const pa = p(a.a) + (a.offA ?? 0) * 4,
      pb = p(a.b) + (a.offB ?? 0) * 4,
      pc = p(a.c) + (a.offC ?? 0) * 4;
    const tA = a.transA ? 1 : 0,
      tB = a.transB ? 1 : 0,
      acc = a.accumulate ? 1 : 0;
    if (a.transB && !a.transA && M <= SMALL_M) {
      // few rows (decoding): dot products, no packing; two threads split the columns
      const h = (N >> 3) << 2;
      const args = (n0: number, n: number): KernelArgs<'gemmNTBatched'> => [
        M,
        n,
        K,
        pa,
        lda,
        pb + n0 * K * 4,
        ldb,
        pc + n0 * 4,
        N,
        a.alpha,
        acc,
        a.batch,
        a.strideA,
        a.strideB,
        a.strideC,
      ];
      if (this.pool && h > 0 && M * N * K * a.batch >= GEMM_SPLIT_MACS && (a.strideC !== 0 || a.batch === 1))
        this.par('gemmNTBatched', args(0, h), args(h, N - h));
      else this.k.gemmNTBatched(...args(0, N));
      return;
    }
    const s0 = this.scratchFor(0, this.k.gemmScratchBytes());
    const big = M * N * K * a.batch >= GEMM_SPLIT_MACS && this.pool;
    if (!big) {
      this.k.gemmBatched(
        tA,
        tB,
        M,
        N,
        K,
        pa,
        lda,
        pb,
        ldb,
        pc,
        N,
        a.alpha,
        acc,
        a.batch,
        a.strideA,
        a.strideB,
        a.strideC,
        s0,
      );
      return;
    }
    const s1 = this.scratchFor(1, this.k.gemmScratchBytes());
    const common = (
      m: number,
      n: number,
      offA: number,
      offB: number,
      offC: number,
      batch: number,
      bOff: number,
      s: number,
    ): KernelArgs<'gemmBatched'> => [
      tA,
      tB,
      m,
      n,
      K,
      pa + offA * 4 + bOff * a.strideA * 4,
      lda,
      pb + offB * 4 + bOff * a.strideB * 4,
      ldb,
      pc + offC * 4 + bOff * a.strideC * 4,
      N,
      a.alpha,
      acc,
      batch,
      a.strideA,
      a.strideB,
      a.strideC,
      s,
    ];
    if (a.batch >= 2 && a.strideC !== 0) {
      const hb = a.batch >> 1;
      this.par('gemmBatched', common(M, N, 0, 0, 0, hb, 0, s0), common(M, N, 0, 0, 0, a.batch - hb, hb, s1));
    } else if (M >= N && M >= 8) {
      const hm = (M >> 3) << 2; // multiple of 4 rows
      const offA2 = a.transA ? hm : hm * K;
      this.par(
        'gemmBatched',
        common(hm, N, 0, 0, 0, a.batch, 0, s0),
        common(M - hm, N, offA2, 0, hm * N, a.batch, 0, s1),
      );
    } else if (N >= 16) {
      const hn = (N >> 4) << 3; // multiple of 8 columns
      const offB2 = a.transB ? hn * K : hn;
      this.par('gemmBatched', common(M, hn, 0, 0, 0, a.batch, 0, s0), common(M, N - hn, 0, offB2, hn, a.batch, 0, s1));
    } else {
      this.k.gemmBatched(
        tA,
        tB,
        M,
        N,
        K,
        pa,
        lda,
        pb,
        ldb,
        pc,
        N,
        a.alpha,
        acc,
        a.batch,
        a.strideA,
        a.strideB,
        a.strideC,
        s0,
      );
    }
  }

  embedding(w: Buf, ids: Int32Array, out: Buf, C: number): void {
    this.withInts(ids, (ip) => this.k.embedding(p(w), ip, p(out), ids.length, C));
  }
  embeddingBackward(g: Buf, ids: Int32Array, dw: Buf, C: number): void {
    this.withInts(ids, (ip) => this.k.embeddingBackward(p(g), ip, p(dw), ids.length, C));
  }
  rmsNorm(x: Buf, w: Buf, y: Buf, rstd: Buf, rows: number, C: number, eps: number): void {
    const h = rows >> 1;
    if (rows * C >= ELEMWISE_SPLIT && h > 0)
      this.par(
        'rmsNorm',
        [p(x), p(w), p(y), p(rstd), h, C, eps],
        [p(x) + h * C * 4, p(w), p(y) + h * C * 4, p(rstd) + h * 4, rows - h, C, eps],
      );
    else this.k.rmsNorm(p(x), p(w), p(y), p(rstd), rows, C, eps);
  }
  rmsNormBackward(g: Buf, x: Buf, w: Buf, rstd: Buf, dx: Buf, dw: Buf, rows: number, C: number): void {
    this.k.rmsNormBackward(p(g), p(x), p(w), p(rstd), p(dx), p(dw), rows, C);
  }

  /** cos/sin table of the positions (cached: every layer reuses the same positions). */
  protected ropeTable(positions: Int32Array, D: number, theta: number): number {
    const key = `${D}|${theta}|${positions.join(',')}`;
    const hit = this.ropeCache.find((e) => e.key === key);
    if (hit) return hit.buf.ptr;
    const half = D / 2,
      inv = ropeInvFreq(D, theta);
    const tab = new Float32Array(positions.length * D);
    for (let e = 0; e < positions.length; e++)
      for (let i = 0; i < half; i++) {
        const ang = ropeAngle(positions[e]!, inv[i]!);
        tab[e * D + i] = Math.cos(ang);
        tab[e * D + half + i] = Math.sin(ang);
      }
    const buf = this.arena.alloc(tab.length);
    this.arena.f32.set(tab, buf.ptr >>> 2);
    this.ropeCache.unshift({ key, buf });
    if (this.ropeCache.length > 8) this.arena.free(this.ropeCache.pop()!.buf);
    return buf.ptr;
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
    const tab = this.ropeTable(positions, D, theta);
    this.k.rope(p(x), p(out), B, H, T, D, tab, positions.length === B * T && B > 1 ? 1 : 0, inverse ? -1 : 1);
  }
  swiglu(gate: Buf, up: Buf, out: Buf, n: number): void {
    const h = (n >> 3) << 2,
      o = h * 4;
    if (n >= ELEMWISE_SPLIT)
      this.par('swiglu', [p(gate), p(up), p(out), h], [p(gate) + o, p(up) + o, p(out) + o, n - h]);
    else this.k.swiglu(p(gate), p(up), p(out), n);
  }
  swigluBackward(g: Buf, gate: Buf, up: Buf, dgate: Buf, dup: Buf, n: number): void {
    const h = (n >> 3) << 2,
      o = h * 4;
    if (n >= ELEMWISE_SPLIT)
      this.par(
        'swigluBackward',
        [p(g), p(gate), p(up), p(dgate), p(dup), h],
        [p(g) + o, p(gate) + o, p(up) + o, p(dgate) + o, p(dup) + o, n - h],
      );
    else this.k.swigluBackward(p(g), p(gate), p(up), p(dgate), p(dup), n);
  }
  /** Row-split a kernel whose arguments are (buffers with `rows` rows of C) + rows + trailing args. */
  private rowSplit(
    fn: 'softmax' | 'softmaxBackward' | 'logprobTarget' | 'logprobTargetBackward' | 'entropy' | 'entropyBackward',
    bufs: [number, number][],
    rows: number,
    C: number,
    tail: number[],
  ): void {
    const h = rows >> 1;
    const args = (r: number, n: number) =>
      [...bufs.map(([ptr, width]) => ptr + r * width * 4), n, ...tail] as KernelArgs<typeof fn>;
    if (rows * C >= ELEMWISE_SPLIT && h > 0) this.par(fn, args(0, h), args(h, rows - h));
    else this.par(fn, args(0, rows));
  }
  softmax(x: Buf, y: Buf, rows: number, C: number, log: boolean): void {
    this.rowSplit(
      'softmax',
      [
        [p(x), C],
        [p(y), C],
      ],
      rows,
      C,
      [C, log ? 1 : 0],
    );
  }
  softmaxBackward(y: Buf, g: Buf, dx: Buf, rows: number, C: number, log: boolean): void {
    this.rowSplit(
      'softmaxBackward',
      [
        [p(y), C],
        [p(g), C],
        [p(dx), C],
      ],
      rows,
      C,
      [C, log ? 1 : 0],
    );
  }
  logprobTarget(logits: Buf, targets: Int32Array, out: Buf, lse: Buf, N: number, V: number): void {
    this.withInts(targets, (tp) =>
      this.rowSplit(
        'logprobTarget',
        [
          [p(logits), V],
          [tp, 1],
          [p(out), 1],
          [p(lse), 1],
        ],
        N,
        V,
        [V],
      ),
    );
  }
  logprobTargetBackward(g: Buf, logits: Buf, targets: Int32Array, lse: Buf, dlogits: Buf, N: number, V: number): void {
    this.withInts(targets, (tp) =>
      this.rowSplit(
        'logprobTargetBackward',
        [
          [p(g), 1],
          [p(logits), V],
          [tp, 1],
          [p(lse), 1],
          [p(dlogits), V],
        ],
        N,
        V,
        [V],
      ),
    );
  }
  entropy(logits: Buf, out: Buf, lse: Buf, N: number, V: number): void {
    this.rowSplit(
      'entropy',
      [
        [p(logits), V],
        [p(out), 1],
        [p(lse), 1],
      ],
      N,
      V,
      [V],
    );
  }
  entropyBackward(g: Buf, logits: Buf, lse: Buf, ent: Buf, dlogits: Buf, N: number, V: number): void {
    this.rowSplit(
      'entropyBackward',
      [
        [p(g), 1],
        [p(logits), V],
        [p(lse), 1],
        [p(ent), 1],
        [p(dlogits), V],
      ],
      N,
      V,
      [V],
    );
  }

  attention(q: Buf, k: Buf, v: Buf, out: Buf, probs: Buf, d: AttentionDims, keyValid: Int32Array | null): void {
    const run = (kv: number): void => {
      const pairs = d.B * d.Hkv;
      const sb = this.k.attentionScratchBytes(d.Hq / d.Hkv, d.T, d.S, d.D);
      const args = (p0: number, p1: number, s: number): KernelArgs<'attention'> => [
        p(q),
        p(k),
        p(v),
        p(out),
        p(probs),
        d.B,
        d.Hq,
        d.Hkv,
        d.T,
        d.S,
        d.D,
        d.offset,
        d.scale,
        kv,
        p0,
        p1,
        s,
      ];
      const h = pairs >> 1;
      if (this.pool && h > 0 && d.B * d.Hq * d.T * d.S * d.D >= GEMM_SPLIT_MACS)
        this.par('attention', args(0, h, this.scratchFor(0, sb)), args(h, pairs, this.scratchFor(1, sb)));
      else this.k.attention(...args(0, pairs, this.scratchFor(0, sb)));
    };
    if (keyValid) this.withInts(keyValid, run);
    else run(0);
  }
  attentionBackward(g: Buf, q: Buf, k: Buf, v: Buf, probs: Buf, dq: Buf, dk: Buf, dv: Buf, d: AttentionDims): void {
    const pairs = d.B * d.Hkv;
    const sb = this.k.attentionScratchBytes(d.Hq / d.Hkv, d.T, d.S, d.D);
    const args = (p0: number, p1: number, s: number): KernelArgs<'attentionBackward'> => [
      p(g),
      p(q),
      p(k),
      p(v),
      p(probs),
      p(dq),
      p(dk),
      p(dv),
      d.B,
      d.Hq,
      d.Hkv,
      d.T,
      d.S,
      d.D,
      d.scale,
      p0,
      p1,
      s,
    ];
    const h = pairs >> 1;
    if (this.pool && h > 0 && d.B * d.Hq * d.T * d.S * d.D >= GEMM_SPLIT_MACS)
      this.par('attentionBackward', args(0, h, this.scratchFor(0, sb)), args(h, pairs, this.scratchFor(1, sb)));
    else this.k.attentionBackward(...args(0, pairs, this.scratchFor(0, sb)));
  }

  adamw(pp: Buf, g: Buf, m: Buf, v: Buf, n: number, s: AdamWStep): void {
    const hp = [s.lr, s.beta1, s.beta2, s.eps, s.weightDecay, s.bc1, s.bc2] as const;
    const h = (n >> 3) << 2,
      o = h * 4;
    if (n >= ELEMWISE_SPLIT)
      this.par('adamw', [p(pp), p(g), p(m), p(v), h, ...hp], [p(pp) + o, p(g) + o, p(m) + o, p(v) + o, n - h, ...hp]);
    else this.k.adamw(p(pp), p(g), p(m), p(v), n, ...hp);
  }
  sumSquares(x: Buf, n: number): number {
    return this.k.sumSquares(p(x), n);
  }
  allFinite(x: Buf, n: number): boolean {
    return this.k.allFinite(p(x), n) === 1;
  }

  /**
   * assembly/decode.ts's fused step: one call per thread runs every layer and the head; prompts are prefilled the same
   * way.
   */
  decodeKernels(dims: DecoderDims, capacity: number): DecodeKernels {
    return new WasmDecodeKernels(this.k, this.arena, this.pool, dims, capacity);
  }
}
