// The native backend: the same arena and WASM kernels, with the hot kernels replaced by a C++ addon
// (native/ragen.cc: OpenBLAS sgemm when found, else our AVX2 micro-kernel; fused ops with 2 threads).

import type { Arena, ArenaBuf } from './arena.js';
import type { AdamWStep, AttentionDims, BackendName, Buf, GemmArgs } from './backend.js';
import { WasmBackend, type WasmKernels } from './wasm-backend.js';

/** The addon's functions; pointers are byte addresses in the arena, the base set by `setMemory`. */
export interface NativeAddon {
  setMemory(view: Float32Array): void;
  info(): string;
  gemm(tA: number, tB: number, M: number, N: number, K: number, a: number, lda: number, b: number, ldb: number, c: number, ldc: number,
    alpha: number, accumulate: number, batch: number, strideA: number, strideB: number, strideC: number): void;
}

const p = (b: Buf): number => (b as ArenaBuf).ptr;

export class NativeBackend extends WasmBackend {
  override readonly name: BackendName = 'native';
  private memoryBytes = -1;

  constructor(k: WasmKernels, arena: Arena, readonly addon: NativeAddon, variant: string) {
    super(k, arena, null, variant);
  }

  /** Tell the addon where the arena is (again after the memory grew). */
  private sync(): void {
    const f32 = this.arena.f32;
    if (f32.byteLength !== this.memoryBytes) {
      this.addon.setMemory(f32);
      this.memoryBytes = f32.byteLength;
    }
  }

  override gemm(a: GemmArgs): void {
    this.sync();
    const { M, N, K } = a;
    this.addon.gemm(a.transA ? 1 : 0, a.transB ? 1 : 0, M, N, K, p(a.a) + (a.offA ?? 0) * 4, a.transA ? M : K, p(a.b) + (a.offB ?? 0) * 4, a.transB ? K : N,
      p(a.c) + (a.offC ?? 0) * 4, N, a.alpha, a.accumulate ? 1 : 0, a.batch, a.strideA, a.strideB, a.strideC);
  }

  /** Which kernels the addon was built with. */
  info(): string {
    return this.addon.info();
  }
}

export type { AdamWStep, AttentionDims };
