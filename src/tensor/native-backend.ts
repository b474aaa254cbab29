// The native backend: the same arena and WASM kernels, with the hot kernels replaced by a C++ addon
// (native/ragen.cc: our own GEMM, AVX-512 or AVX2/FMA chosen at run time (native/isa.h); fused ops with 2 threads;
// native/nn.cc: the train step's elementwise, RMSNorm, SwiGLU, softmax / log-prob and AdamW kernels).

import type { Arena, ArenaBuf } from './arena.js';
import type {
  AdamWStep,
  AttentionDims,
  BackendName,
  BinaryOp,
  Buf,
  DecodeKernels,
  DecoderDims,
  GemmArgs,
} from './backend.js';
import { BINARY_OPS } from './backend.js';
import { NativeDecodeKernels } from './decode-kernels.js';
import type { IsaPath, NativeAddon, NativeIsa } from './native-addon.js';
import type { ThreadPool } from './thread-pool.js';
import { WasmBackend } from './wasm-backend.js';
import type { WasmKernels } from './wasm-kernels.js';

const p = (b: Buf): number => (b as ArenaBuf).ptr;

export class NativeBackend extends WasmBackend {
  override readonly name: BackendName = 'native';
  private memoryBytes = -1;

  /** The wasm kernels (and their worker thread) serve every op the addon does not replace. */
  constructor(
    k: WasmKernels,
    arena: Arena,
    pool: ThreadPool | null,
    readonly addon: NativeAddon,
    variant: string,
  ) {
    super(k, arena, pool, variant);
  }

  /** Tell the addon where the arena is (again after the memory grew). */
  private readonly sync = (): void => {
    const f32 = this.arena.f32;
    if (f32.byteLength !== this.memoryBytes) {
      this.addon.setMemory(f32);
      this.memoryBytes = f32.byteLength;
    }
  };

  override gemm(a: GemmArgs): void {
    this.sync();
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

  override attention(
    q: Buf,
    k: Buf,
    v: Buf,
    out: Buf,
    probs: Buf,
    d: AttentionDims,
    keyValid: Int32Array | null,
  ): void {
    this.sync();
    const run = (kv: number): void =>
      this.addon.attention(p(q), p(k), p(v), p(out), p(probs), d.B, d.Hq, d.Hkv, d.T, d.S, d.D, d.offset, d.scale, kv);
    if (keyValid) this.withInts(keyValid, (kv) => (this.sync(), run(kv)));
    else run(0);
  }

  override attentionBackward(
    g: Buf,
    q: Buf,
    k: Buf,
    v: Buf,
    probs: Buf,
    dq: Buf,
    dk: Buf,
    dv: Buf,
    d: AttentionDims,
  ): void {
    this.sync();
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

  // The train step's non-GEMM kernels on the addon's threads (the wasm ones would hand off to the wasm worker, a
  // second helper thread beside the addon's). Unary ops, broadcast reductions and block copies stay in wasm.
  override binary(op: BinaryOp, a: Buf, b: Buf, out: Buf, n: number, m: number, inner: number): void {
    this.sync();
    this.addon.binary(BINARY_OPS.indexOf(op), p(a), p(b), p(out), n, m, inner);
  }
  override axpy(alpha: number, x: Buf, y: Buf, n: number): void {
    this.sync();
    this.addon.axpy(alpha, p(x), p(y), n);
  }
  override swiglu(gate: Buf, up: Buf, out: Buf, n: number): void {
    this.sync();
    this.addon.swiglu(p(gate), p(up), p(out), n);
  }
  override swigluBackward(g: Buf, gate: Buf, up: Buf, dgate: Buf, dup: Buf, n: number): void {
    this.sync();
    this.addon.swigluBackward(p(g), p(gate), p(up), p(dgate), p(dup), n);
  }
  override rmsNorm(x: Buf, w: Buf, y: Buf, rstd: Buf, rows: number, C: number, eps: number): void {
    this.sync();
    this.addon.rmsNorm(p(x), p(w), p(y), p(rstd), rows, C, eps);
  }
  override rmsNormBackward(g: Buf, x: Buf, w: Buf, rstd: Buf, dx: Buf, dw: Buf, rows: number, C: number): void {
    this.sync();
    this.addon.rmsNormBackward(p(g), p(x), p(w), p(rstd), p(dx), p(dw), rows, C);
  }
  override softmax(x: Buf, y: Buf, rows: number, C: number, log: boolean): void {
    this.sync();
    this.addon.softmax(p(x), p(y), rows, C, log ? 1 : 0);
  }
  override softmaxBackward(y: Buf, g: Buf, dx: Buf, rows: number, C: number, log: boolean): void {
    this.sync();
    this.addon.softmaxBackward(p(y), p(g), p(dx), rows, C, log ? 1 : 0);
  }
  override logprobTarget(logits: Buf, targets: Int32Array, out: Buf, lse: Buf, N: number, V: number): void {
    this.withInts(targets, (tp) => {
      this.sync();
      this.addon.logprobTarget(p(logits), tp, p(out), p(lse), N, V);
    });
  }
  override logprobTargetBackward(
    g: Buf,
    logits: Buf,
    targets: Int32Array,
    lse: Buf,
    dlogits: Buf,
    N: number,
    V: number,
  ): void {
    this.withInts(targets, (tp) => {
      this.sync();
      this.addon.logprobTargetBackward(p(g), p(logits), tp, p(lse), p(dlogits), N, V);
    });
  }
  override entropy(logits: Buf, out: Buf, lse: Buf, N: number, V: number): void {
    this.sync();
    this.addon.entropy(p(logits), p(out), p(lse), N, V);
  }
  override entropyBackward(g: Buf, logits: Buf, lse: Buf, ent: Buf, dlogits: Buf, N: number, V: number): void {
    this.sync();
    this.addon.entropyBackward(p(g), p(logits), p(lse), p(ent), p(dlogits), N, V);
  }
  override adamw(pp: Buf, g: Buf, m: Buf, v: Buf, n: number, s: AdamWStep): void {
    this.sync();
    this.addon.adamw(p(pp), p(g), p(m), p(v), n, s.lr, s.beta1, s.beta2, s.eps, s.weightDecay, s.bc1, s.bc2);
  }
  override rope(
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
    this.sync();
    this.addon.rope(p(x), p(out), B, H, T, D, tab, positions.length === B * T && B > 1 ? 1 : 0, inverse ? -1 : 1);
  }
  override permute(src: Buf, dst: Buf, shape: readonly number[], perm: readonly number[]): void {
    const st = [shape[1]! * shape[2]! * shape[3]!, shape[2]! * shape[3]!, shape[3]!, 1];
    const n = perm.map((q) => shape[q]!),
      s = perm.map((q) => st[q]!);
    this.sync();
    this.addon.permute4(p(src), p(dst), n[0]!, n[1]!, n[2]!, n[3]!, s[0]!, s[1]!, s[2]!, s[3]!);
  }

  /** The addon's fused decode (a call per layer; prompts are prefilled op by op). */
  override decodeKernels(dims: DecoderDims, capacity: number): DecodeKernels {
    return new NativeDecodeKernels(this.addon, this.arena, this.sync, dims, capacity);
  }

  /**
   * y (M, N) (+)= x (M, K) op(W) with W a bf16 matrix in native memory at `w` (+ wOffset bytes), (N, K) when nt
   * (x W^T) else (K, N). `path` as the addon's gemmBf16 (0 = the best this CPU has).
   */
  gemmBf16(path: number, nt: boolean, M: number, N: number, K: number, x: Buf, w: number, y: Buf, acc: boolean): void {
    this.addon.gemmBf16(path, nt ? 1 : 0, M, N, K, this.arena.f32, p(x), w, 0, p(y), acc ? 1 : 0);
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
