// The native backend: the same arena and WASM kernels, with the hot kernels replaced by a C++ addon
// (native/ragen.cc: OpenBLAS sgemm when found, else our AVX2 micro-kernel; fused ops with 2 threads).

import type { Arena, ArenaBuf } from './arena.js';
import type { AttentionDims, BackendName, Buf, DecodeKernels, DecoderDims, GemmArgs } from './backend.js';
import { NativeDecodeKernels } from './decode-kernels.js';
import type { ThreadPool } from './thread-pool.js';
import { WasmBackend } from './wasm-backend.js';
import type { WasmKernels } from './wasm-kernels.js';

/**
 * The addon's functions (native/ragen.cc, native/decode.inc); pointers are byte addresses in the arena, the base set
 * by `setMemory`, 0 where a pointer is optional. Each checks its argument count and types and throws a TypeError
 * naming itself otherwise.
 */
export interface NativeAddon {
  setMemory(view: Float32Array): void;
  info(): string;
  gemm(tA: number, tB: number, M: number, N: number, K: number, a: number, lda: number, b: number, ldb: number, c: number, ldc: number,
    alpha: number, accumulate: number, batch: number, strideA: number, strideB: number, strideC: number): void;
  attention(q: number, k: number, v: number, out: number, probs: number, B: number, Hq: number, Hkv: number, T: number, S: number, D: number,
    offset: number, scale: number, keyValid: number): void;
  attentionBackward(g: number, q: number, k: number, v: number, probs: number, dq: number, dk: number, dv: number,
    B: number, Hq: number, Hkv: number, T: number, S: number, D: number, scale: number): void;
  /** out = W (N, K) in panels of 16 columns (ceil(N / 16) * 16 * K floats). */
  decodePack(w: number, out: number, N: number, K: number): void;
  /** h (B, C) += one decoder layer at cache slot `start`, scratch holding B (C + (H + 2 Kh) D + H D + 3F) floats. */
  decodeLayer(h: number, scratch: number, inNorm: number, qkvP: number, qkvBias: number, oP: number, oBias: number, postNorm: number, guP: number,
    downP: number, kc: number, vc: number, tab: number, qNorm: number, kNorm: number, valid: number,
    B: number, C: number, H: number, Kh: number, D: number, F: number, cap: number, start: number, eps: number, scale: number): void;
  /** logits (B, V) = rmsnorm(h) head^T, lse (B), probs = softmax(logits * invTemp) unless invTemp is 0. */
  decodeHead(h: number, scratch: number, norm: number, headP: number, logits: number, B: number, C: number, V: number, eps: number,
    probs: number, lse: number, invTemp: number): void;
}

/** Each addon function's argument count (the addon checks the same counts; node-kernels.ts checks the names at load). */
export const NATIVE_ADDON_ARITY: { readonly [K in keyof NativeAddon]: number } = {
  setMemory: 1,
  info: 0,
  gemm: 17,
  attention: 14,
  attentionBackward: 15,
  decodePack: 4,
  decodeLayer: 26,
  decodeHead: 12,
};

const p = (b: Buf): number => (b as ArenaBuf).ptr;

export class NativeBackend extends WasmBackend {
  override readonly name: BackendName = 'native';
  private memoryBytes = -1;

  /** The wasm kernels (and their worker thread) serve every op the addon does not replace. */
  constructor(k: WasmKernels, arena: Arena, pool: ThreadPool | null, readonly addon: NativeAddon, variant: string) {
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
    this.addon.gemm(a.transA ? 1 : 0, a.transB ? 1 : 0, M, N, K, p(a.a) + (a.offA ?? 0) * 4, a.transA ? M : K, p(a.b) + (a.offB ?? 0) * 4, a.transB ? K : N,
      p(a.c) + (a.offC ?? 0) * 4, N, a.alpha, a.accumulate ? 1 : 0, a.batch, a.strideA, a.strideB, a.strideC);
  }

  override attention(q: Buf, k: Buf, v: Buf, out: Buf, probs: Buf, d: AttentionDims, keyValid: Int32Array | null): void {
    this.sync();
    const run = (kv: number): void =>
      this.addon.attention(p(q), p(k), p(v), p(out), p(probs), d.B, d.Hq, d.Hkv, d.T, d.S, d.D, d.offset, d.scale, kv);
    if (keyValid) this.withInts(keyValid, (kv) => (this.sync(), run(kv)));
    else run(0);
  }

  override attentionBackward(g: Buf, q: Buf, k: Buf, v: Buf, probs: Buf, dq: Buf, dk: Buf, dv: Buf, d: AttentionDims): void {
    this.sync();
    this.addon.attentionBackward(p(g), p(q), p(k), p(v), p(probs), p(dq), p(dk), p(dv), d.B, d.Hq, d.Hkv, d.T, d.S, d.D, d.scale);
  }

  /** The addon's fused decode (a call per layer; prompts are prefilled op by op). */
  override decodeKernels(dims: DecoderDims, capacity: number): DecodeKernels {
    return new NativeDecodeKernels(this.addon, this.arena, this.sync, dims, capacity);
  }

  /** Which kernels the addon was built with. */
  info(): string {
    return this.addon.info();
  }
}

