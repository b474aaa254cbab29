// The C++ addon's interface (native/ragen.cc): its functions and their argument counts, below the native backend
// and its decode kernels so that both can name it; and where the addon is found (a build from source, else the
// package's prebuild for this platform), loaded and checked.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { WasmKernels } from './wasm-kernels.js';

/**
 * The backend's non-GEMM kernels the addon runs too (native/nn.cc, native/ops.cc): the wasm kernels' functions with
 * the same arguments, pointers as below.
 */
type NativeNnKernel =
  | 'fill'
  | 'copyBlock'
  | 'reduceBroadcast'
  | 'unary'
  | 'unaryBackward'
  | 'affine'
  | 'sumAxis'
  | 'expandAxis'
  | 'embedding'
  | 'embeddingBackward'
  | 'sumSquares'
  | 'allFinite'
  | 'swiglu'
  | 'swigluBackward'
  | 'axpy'
  | 'binary'
  | 'rmsNorm'
  | 'rmsNormBackward'
  | 'softmax'
  | 'softmaxBackward'
  | 'logprobTarget'
  | 'logprobTargetBackward'
  | 'entropy'
  | 'entropyBackward'
  | 'adamw'
  | 'rope'
  | 'permute4';

/**
 * The addon's functions (native/ragen.cc, native/decode.inc); pointers are byte offsets into the memory `setMemory`
 * named, 0 where a pointer is optional. Each checks its argument count and types and throws a TypeError naming itself
 * otherwise.
 */
export interface NativeAddon extends Pick<WasmKernels, NativeNnKernel> {
  /** The memory of every pointer argument: a native block's address (the native arena) or a Float32Array. */
  setMemory(memory: Float32Array | number): void;
  info(): string;
  gemm(
    tA: number,
    tB: number,
    M: number,
    N: number,
    K: number,
    a: number,
    lda: number,
    b: number,
    ldb: number,
    c: number,
    ldc: number,
    alpha: number,
    accumulate: number,
    batch: number,
    strideA: number,
    strideB: number,
    strideC: number,
  ): void;
  attention(
    q: number,
    k: number,
    v: number,
    out: number,
    probs: number,
    B: number,
    Hq: number,
    Hkv: number,
    T: number,
    S: number,
    D: number,
    offset: number,
    scale: number,
    keyValid: number,
  ): void;
  attentionBackward(
    g: number,
    q: number,
    k: number,
    v: number,
    probs: number,
    dq: number,
    dk: number,
    dv: number,
    B: number,
    Hq: number,
    Hkv: number,
    T: number,
    S: number,
    D: number,
    scale: number,
  ): void;
  /** out = W (N, K) in panels of 16 columns (ceil(N / 16) * 16 * K floats). */
  decodePack(w: number, out: number, N: number, K: number): void;
  /** h (B, C) += one decoder layer at cache slot `start`, scratch holding B (C + (H + 2 Kh) D + H D + 3F) floats. */
  decodeLayer(
    h: number,
    scratch: number,
    inNorm: number,
    qkvP: number,
    qkvBias: number,
    oP: number,
    oBias: number,
    postNorm: number,
    guP: number,
    downP: number,
    kc: number,
    vc: number,
    tab: number,
    qNorm: number,
    kNorm: number,
    valid: number,
    B: number,
    C: number,
    H: number,
    Kh: number,
    D: number,
    F: number,
    cap: number,
    start: number,
    eps: number,
    scale: number,
  ): void;
  /** A zeroed native block of `bytes` (e.g. bf16 weights, beside the arena); its address. */
  nativeAlloc(bytes: number): number;
  /** As nativeAlloc, for an arena's address space (pages cost memory once written); nativeAllocated leaves it out. */
  nativeReserve(bytes: number): number;
  nativeFree(address: number): void;
  /** Copy the array's bytes into the block at `byteOffset` (toNative 1) or out of it (0). */
  nativeCopy(address: number, byteOffset: number, data: ArrayBufferView, toNative: number): void;
  /** Bytes in live native blocks, reservations left out. */
  nativeAllocated(): number;
  /**
   * y (M, N) (+)= x (M, K) op(W): x, y float32 at byte offsets of `arena` (a view, or a native block's address), W bf16 at `wOffset` of block `w`, (N, K)
   * when nt (x W^T) else (K, N); path 0 the best present, 1 scalar, 2 avx2, 3 avx512, 4 avx512bf16.
   */
  gemmBf16(
    path: number,
    nt: number,
    M: number,
    N: number,
    K: number,
    arena: Float32Array | number,
    x: number,
    w: number,
    wOffset: number,
    y: number,
    accumulate: number,
  ): void;
  /** Write `data` as bf16 (round to nearest even) at `byteOffset` of the block. */
  bf16Store(address: number, byteOffset: number, data: Float32Array): void;
  /** Read bf16 values at `byteOffset` of the block into `out` as float32. */
  bf16Load(address: number, byteOffset: number, out: Float32Array): void;
  /** The bf16 GEMM paths this CPU has, e.g. "scalar avx2 avx512 avx512bf16". */
  bf16Paths(): string;
  /** logits (B, V) = rmsnorm(h) head^T, lse (B), probs = softmax(logits * invTemp) unless invTemp is 0. */
  decodeHead(
    h: number,
    scratch: number,
    norm: number,
    headP: number,
    logits: number,
    B: number,
    C: number,
    V: number,
    eps: number,
    probs: number,
    lse: number,
    invTemp: number,
  ): void;
  /** The instruction sets the cores have (cpuid), the widest kernel path for them and the path taken now. */
  isa(): NativeIsa;
  /** Cap the kernels' path at `avx2` or `avx512` (tests run each path present); returns the path taken now. */
  setIsa(path: IsaPath): IsaPath;
  /** One thread's independent float32 FMA rate on the path taken now, GFLOP/s of its own CPU time over ~`seconds`. */
  fmaPeak(seconds: number): number;
  /** The threads one kernel call runs on. */
  threads(): number;
}

/** A kernel path of the native addon (native/isa.h). */
export type IsaPath = 'avx2' | 'avx512';

/** What `isa()` reports. */
export interface NativeIsa {
  avx2: boolean;
  avx512: boolean;
  avx512bf16: boolean;
  avx512vnni: boolean;
  amxBf16: boolean;
  best: IsaPath | 'none';
  path: IsaPath | 'none';
}

/**
 * Each addon function's argument count (the addon checks the same counts; node-kernels.ts checks the names at load).
 */
export const NATIVE_ADDON_ARITY: { readonly [K in keyof NativeAddon]: number } = {
  setMemory: 1,
  info: 0,
  gemm: 17,
  attention: 14,
  attentionBackward: 15,
  decodePack: 4,
  decodeLayer: 26,
  decodeHead: 12,
  nativeAlloc: 1,
  nativeReserve: 1,
  nativeFree: 1,
  nativeCopy: 4,
  nativeAllocated: 0,
  gemmBf16: 11,
  bf16Store: 3,
  bf16Load: 3,
  bf16Paths: 0,
  isa: 0,
  setIsa: 1,
  fmaPeak: 1,
  threads: 0,
  swiglu: 4,
  swigluBackward: 6,
  axpy: 4,
  binary: 7,
  rmsNorm: 7,
  rmsNormBackward: 8,
  softmax: 5,
  softmaxBackward: 6,
  logprobTarget: 6,
  logprobTargetBackward: 7,
  entropy: 5,
  entropyBackward: 7,
  adamw: 12,
  rope: 9,
  permute4: 10,
  fill: 3,
  copyBlock: 7,
  reduceBroadcast: 6,
  unary: 4,
  unaryBackward: 6,
  affine: 5,
  sumAxis: 5,
  expandAxis: 6,
  embedding: 5,
  embeddingBackward: 5,
  sumSquares: 2,
  allFinite: 2,
};

/** The folder of the package's prebuilt addon for `platform`-`arch` (`npm run prebuild` writes it), e.g. linux-x64. */
export function prebuildDir(root: string, platform: string = process.platform, arch: string = process.arch): string {
  return join(root, 'prebuilds', `${platform}-${arch}`);
}

/**
 * The addon files tried, in order: a build from this copy's sources (build/native: `npm run build`, or
 * `npm run build:native` in an installed package), then the prebuild shipped for this platform and architecture.
 */
export function nativeAddonCandidates(root: string, platform?: string, arch?: string): string[] {
  return [
    join(root, 'build', 'native', 'ragen_native.node'),
    join(prebuildDir(root, platform, arch), 'ragen_native.node'),
  ];
}

/**
 * Load the first addon of `nativeAddonCandidates` that loads and has every function of NATIVE_ADDON_ARITY; `file` is
 * the one taken. Throws one message naming each file tried and why it was not taken, and the fix.
 */
export function loadNativeAddon(root: string): { addon: NativeAddon; file: string } {
  const require = createRequire(import.meta.url);
  const why: string[] = [];
  for (const file of nativeAddonCandidates(root)) {
    if (!existsSync(file)) continue;
    let addon: Record<string, unknown>;
    try {
      addon = require(file) as Record<string, unknown>;
    } catch (e) {
      // e.g. a CPU without AVX2 + FMA (the addon refuses), or a C++ runtime older than the build's (GLIBCXX_...)
      why.push(`${file} did not load: ${(e as Error).message.split('\n')[0]}`);
      continue;
    }
    const missing = Object.keys(NATIVE_ADDON_ARITY).filter((name) => typeof addon[name] !== 'function');
    if (missing.length === 0) return { addon: addon as unknown as NativeAddon, file };
    why.push(`${file} lacks ${missing.join(', ')} (built from older sources)`);
  }
  const fix = existsSync(join(root, 'native', 'binding.gyp'))
    ? '`npm run build:native` builds it from native/ (needs g++ and make)'
    : 'this copy has no native/ sources to build it from';
  if (why.length === 0)
    throw new Error(
      `no native addon: neither a build from source (${nativeAddonCandidates(root)[0]}) nor a prebuild for ${process.platform}-${process.arch} (${nativeAddonCandidates(root)[1]}); ${fix}`,
    );
  throw new Error(`${why.join('; ')}; ${fix}`);
}
