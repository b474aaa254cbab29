// The native backend: every tensor in native memory (native-arena.ts, past WebAssembly's 4 GiB) and every op in a C++
// addon (native/ragen.cc: our own GEMM, AVX-512 or AVX2/FMA chosen at run time (native/isa.h), fused attention with 2
// threads; native/nn.cc: the train step's elementwise, RMSNorm, SwiGLU, softmax / log-prob and AdamW kernels;
// native/ops.cc: fills, copies, reductions, unary ops, embeddings). No wasm kernel runs here: they cannot reach it.

import type { ArenaBuf } from './arena.js';
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
import { NativeDecodeKernels } from './decode-kernels.js';
import { ropeAngle, ropeInvFreq } from './js-nn-kernels.js';
import type { IsaPath, NativeAddon, NativeIsa } from './native-addon.js';
import type { NativeArena } from './native-arena.js';

const p = (b: Buf): number => (b as ArenaBuf).ptr;

export class NativeBackend implements Backend {
  readonly name: BackendName = 'native';
  private ropeCache: { key: string; buf: ArenaBuf }[] = [];

  constructor(
    readonly arena: NativeArena,
    readonly addon: NativeAddon,
  ) {
    addon.setMemory(arena.address);
  }

  /** Copy ids into the arena for the duration of fn. */
  private withInts<T>(ids: Int32Array, fn: (ptr: number) => T): T {
    const b = this.arena.alloc(ids.length);
    this.arena.writeI32(b.ptr, ids);
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
    this.arena.writeF32(p(buf) + offset * 4, src);
  }
  read(buf: Buf, offset = 0, length = buf.length - offset, out?: Float32Array): Float32Array {
    const dst = out && out.length >= length ? out.subarray(0, length) : new Float32Array(length);
    this.arena.readF32(p(buf) + offset * 4, dst);
    return dst;
  }
  fill(buf: Buf, value: number, offset = 0, length = buf.length - offset): void {
    this.addon.fill(p(buf) + offset * 4, length, value);
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
    this.addon.copyBlock(
      p(src) + srcOff * 4,
      srcStride,
      p(dst) + dstOff * 4,
      dstStride,
      rows,
      cols,
      accumulate ? 1 : 0,
    );
  }
  permute(src: Buf, dst: Buf, shape: readonly number[], perm: readonly number[]): void {
    const st = [shape[1]! * shape[2]! * shape[3]!, shape[2]! * shape[3]!, shape[3]!, 1];
    const n = perm.map((q) => shape[q]!),
      s = perm.map((q) => st[q]!);
    this.addon.permute4(p(src), p(dst), n[0]!, n[1]!, n[2]!, n[3]!, s[0]!, s[1]!, s[2]!, s[3]!);
  }

  binary(op: BinaryOp, a: Buf, b: Buf, out: Buf, n: number, m: number, inner: number): void {
    this.addon.binary(BINARY_OPS.indexOf(op), p(a), p(b), p(out), n, m, inner);
  }
  reduceBroadcast(g: Buf, a: Buf | null, out: Buf, n: number, m: number, inner: number): void {
    this.addon.reduceBroadcast(p(g), a ? p(a) : 0, p(out), n, m, inner);
  }
  unary(op: UnaryOp, x: Buf, out: Buf, n: number): void {
    this.addon.unary(UNARY_OPS.indexOf(op), p(x), p(out), n);
  }
  unaryBackward(op: UnaryOp, x: Buf, y: Buf, g: Buf, out: Buf, n: number): void {
    this.addon.unaryBackward(UNARY_OPS.indexOf(op), p(x), p(y), p(g), p(out), n);
  }
  affine(x: Buf, out: Buf, n: number, s: number, t: number): void {
    this.addon.affine(p(x), p(out), n, s, t);
  }
  axpy(alpha: number, x: Buf, y: Buf, n: number): void {
    this.addon.axpy(alpha, p(x), p(y), n);
  }
  sumAxis(x: Buf, out: Buf, outer: number, len: number, inner: number): void {
    this.addon.sumAxis(p(x), p(out), outer, len, inner);
  }
  expandAxis(g: Buf, out: Buf, outer: number, len: number, inner: number, s: number): void {
    this.addon.expandAxis(p(g), p(out), outer, len, inner, s);
  }

  gemm(a: GemmArgs): void {
    const { M, N, K } = a;
    this.addon.gemm(
      a.transA ? 1 : 0,
      a.transB ? 1 : 0,
      M,
      N,
      K,
      p(a.a) + (a.offA ?? 0) * 4,
      a.transA ? M : K,
      p(a.b) + (a.offB ?? 0) * 4,
      a.transB ? K : N,
      p(a.c) + (a.offC ?? 0) * 4,
      N,
      a.alpha,
      a.accumulate ? 1 : 0,
      a.batch,
      a.strideA,
      a.strideB,
      a.strideC,
    );
  }

  embedding(w: Buf, ids: Int32Array, out: Buf, C: number): void {
    this.withInts(ids, (ip) => this.addon.embedding(p(w), ip, p(out), ids.length, C));
  }
  embeddingBackward(g: Buf, ids: Int32Array, dw: Buf, C: number): void {
    this.withInts(ids, (ip) => this.addon.embeddingBackward(p(g), ip, p(dw), ids.length, C));
  }

  attention(q: Buf, k: Buf, v: Buf, out: Buf, probs: Buf, d: AttentionDims, keyValid: Int32Array | null): void {
    const run = (kv: number): void =>
      this.addon.attention(p(q), p(k), p(v), p(out), p(probs), d.B, d.Hq, d.Hkv, d.T, d.S, d.D, d.offset, d.scale, kv);
    if (keyValid) this.withInts(keyValid, run);
    else run(0);
  }
  attentionBackward(g: Buf, q: Buf, k: Buf, v: Buf, probs: Buf, dq: Buf, dk: Buf, dv: Buf, d: AttentionDims): void {
    this.addon.attentionBackward(
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
    );
  }

  swiglu(gate: Buf, up: Buf, out: Buf, n: number): void {
    this.addon.swiglu(p(gate), p(up), p(out), n);
  }
  swigluBackward(g: Buf, gate: Buf, up: Buf, dgate: Buf, dup: Buf, n: number): void {
    this.addon.swigluBackward(p(g), p(gate), p(up), p(dgate), p(dup), n);
  }
  rmsNorm(x: Buf, w: Buf, y: Buf, rstd: Buf, rows: number, C: number, eps: number): void {
    this.addon.rmsNorm(p(x), p(w), p(y), p(rstd), rows, C, eps);
  }
  rmsNormBackward(g: Buf, x: Buf, w: Buf, rstd: Buf, dx: Buf, dw: Buf, rows: number, C: number): void {
    this.addon.rmsNormBackward(p(g), p(x), p(w), p(rstd), p(dx), p(dw), rows, C);
  }
  softmax(x: Buf, y: Buf, rows: number, C: number, log: boolean): void {
    this.addon.softmax(p(x), p(y), rows, C, log ? 1 : 0);
  }
  softmaxBackward(y: Buf, g: Buf, dx: Buf, rows: number, C: number, log: boolean): void {
    this.addon.softmaxBackward(p(y), p(g), p(dx), rows, C, log ? 1 : 0);
  }
  logprobTarget(logits: Buf, targets: Int32Array, out: Buf, lse: Buf, N: number, V: number): void {
    this.withInts(targets, (tp) => this.addon.logprobTarget(p(logits), tp, p(out), p(lse), N, V));
  }
  logprobTargetBackward(g: Buf, logits: Buf, targets: Int32Array, lse: Buf, dlogits: Buf, N: number, V: number): void {
    this.withInts(targets, (tp) => this.addon.logprobTargetBackward(p(g), p(logits), tp, p(lse), p(dlogits), N, V));
  }
  entropy(logits: Buf, out: Buf, lse: Buf, N: number, V: number): void {
    this.addon.entropy(p(logits), p(out), p(lse), N, V);
  }
  entropyBackward(g: Buf, logits: Buf, lse: Buf, ent: Buf, dlogits: Buf, N: number, V: number): void {
    this.addon.entropyBackward(p(g), p(logits), p(lse), p(ent), p(dlogits), N, V);
  }
  adamw(pp: Buf, g: Buf, m: Buf, v: Buf, n: number, s: AdamWStep): void {
    this.addon.adamw(p(pp), p(g), p(m), p(v), n, s.lr, s.beta1, s.beta2, s.eps, s.weightDecay, s.bc1, s.bc2);
  }
  sumSquares(x: Buf, n: number): number {
    return this.addon.sumSquares(p(x), n);
  }
  allFinite(x: Buf, n: number): boolean {
    return this.addon.allFinite(p(x), n) === 1;
  }

  /** cos/sin table of the positions (cached: every layer reuses the same positions). */
  private ropeTable(positions: Int32Array, D: number, theta: number): number {
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
    this.arena.writeF32(buf.ptr, tab);
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
    this.addon.rope(p(x), p(out), B, H, T, D, tab, positions.length === B * T && B > 1 ? 1 : 0, inverse ? -1 : 1);
  }

  /** The addon's fused decode (a call per layer; prompts are prefilled op by op). */
  decodeKernels(dims: DecoderDims, capacity: number): DecodeKernels {
    return new NativeDecodeKernels(this.addon, this.arena, dims, capacity);
  }

  /**
   * y (M, N) (+)= x (M, K) op(W) with W a bf16 matrix in native memory at `w` (+ wOffset bytes), (N, K) when nt
   * (x W^T) else (K, N). `path` as the addon's gemmBf16 (0 = the best this CPU has).
   */
  gemmBf16(path: number, nt: boolean, M: number, N: number, K: number, x: Buf, w: number, y: Buf, acc: boolean): void {
    this.addon.gemmBf16(path, nt ? 1 : 0, M, N, K, this.arena.address, p(x), w, 0, p(y), acc ? 1 : 0);
  }

  /** Which kernels the addon runs. */
  info(): string {
    return this.addon.info();
  }

  /** The cores' instruction sets and the kernels' path (native/isa.h). */
  isa(): NativeIsa {
    return this.addon.isa();
  }

  /** Cap the kernels' path at `path` (each path present is tested against the reference); returns the path taken. */
  setIsa(path: IsaPath): IsaPath {
    return this.addon.setIsa(path);
  }

  /** One kernel thread's float32 FMA rate on the path taken, GFLOP/s (the cores' ceiling for any kernel). */
  fmaPeak(seconds = 0.2): number {
    return this.addon.fmaPeak(seconds);
  }

  /** The threads a kernel call runs on. */
  get kernelThreads(): number {
    return this.addon.threads();
  }
}
