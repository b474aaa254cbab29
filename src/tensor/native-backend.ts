// The native backend: the same arena and WASM kernels, with the hot kernels replaced by a C++ addon
// (native/ragen.cc: our own GEMM, AVX-512 or AVX2/FMA chosen at run time (native/isa.h); fused ops with 2 threads).

import type { Arena, ArenaBuf } from './arena.js';
import type { AttentionDims, BackendName, Buf, DecodeKernels, DecoderDims, GemmArgs } from './backend.js';
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
