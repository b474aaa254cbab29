// The fused decode behind `Backend.decodeKernels`: the wasm module's decodeStep (every layer and the head in one call
// per thread, prompts prefilled the same way) and the native addon's decodeLayer / decodeHead (a call per layer).
// Buffers in, arena addresses out: src/model/decode-fast.ts never sees a pointer.

import type { Arena, ArenaBuf, BlockArena } from './arena.js';
import type { Buf, DecodeCall, DecodeKernels, DecoderDims } from './backend.js';
import type { NativeAddon } from './native-addon.js';
import type { ThreadPool } from './thread-pool.js';
import type { WasmKernels } from './wasm-kernels.js';

const p = (b: Buf): number => (b as ArenaBuf).ptr;
const optP = (b: Buf | null): number => (b ? p(b) : 0);

/** Multiply-adds of a call below which one thread takes every row (the hand-off would cost more; as the addon). */
const SPLIT_FLOPS = 2 ** 21;
/** Pointers per layer in decodeStep's descriptor, in assembly/decode.ts's order. */
const DESC = 12;

/** Arena buffers a kernel set keeps between calls (scratch, staged ints), grown on demand and freed by `free`. */
class Slots {
  private readonly bufs = new Map<string, ArenaBuf>();
  constructor(private readonly arena: BlockArena) {}

  /** The address of slot `name`, at least `floats` long. */
  get(name: string, floats: number): number {
    const have = this.bufs.get(name);
    if (have && have.length >= floats) return have.ptr;
    if (have) this.arena.free(have);
    const b = this.arena.alloc(floats);
    this.bufs.set(name, b);
    return b.ptr;
  }

  /** Rows [seq0, seq0 + n) of a (sequences, capacity) key mask copied into slot `valid`; its address. */
  mask(keyValid: Int32Array, seq0: number, n: number, capacity: number): number {
    const at = this.get('valid', n * capacity);
    this.arena.writeI32(at, keyValid.subarray(seq0 * capacity, (seq0 + n) * capacity));
    return at;
  }

  free(): void {
    for (const b of this.bufs.values()) this.arena.free(b);
    this.bufs.clear();
  }
}

/** Floats of one thread's decodeLayer scratch for `rows` rows: x (C), qkv, y (H D), gate|up and act (3F) per row. */
function layerScratch(d: DecoderDims, rows: number): number {
  return rows * (d.C + (d.H + 2 * d.Hkv) * d.D + d.H * d.D + 3 * d.F);
}

/**
 * assembly/decode.ts: panels of 8 columns; one call per thread runs the whole step; the worker takes half the
 * sequences.
 */
export class WasmDecodeKernels implements DecodeKernels {
  readonly prefills = true;
  readonly threads: number;
  private readonly slots: Slots;

  constructor(
    private readonly k: WasmKernels,
    private readonly arena: Arena,
    private readonly pool: ThreadPool | null,
    private readonly dims: DecoderDims,
    private readonly capacity: number,
  ) {
    this.threads = pool ? 2 : 1;
    this.slots = new Slots(arena);
  }

  packedLength(N: number, K: number): number {
    return Math.ceil(N / 8) * 8 * K;
  }

  pack(w: Buf, out: Buf, N: number, K: number): void {
    this.k.decodePack(p(w), p(out), N, K);
  }

  run(c: DecodeCall): void {
    const { C, H, Hkv: K, D, F, V, eps } = this.dims;
    const cap = this.capacity,
      T = c.T,
      L = c.layers.length;
    const scale = 1 / Math.sqrt(D);
    const desc = this.slots.get('desc', L * DESC);
    const i32 = this.arena.i32;
    c.layers.forEach((l, i) => {
      const ptrs = [
        p(l.inNorm),
        p(l.qkv),
        optP(l.qkvBias),
        p(l.o),
        optP(l.oBias),
        p(l.postNorm),
        p(l.gateUp),
        p(l.down),
        p(l.keys),
        p(l.values),
        optP(l.qNorm),
        optP(l.kNorm),
      ];
      i32.set(ptrs, (desc >>> 2) + i * DESC);
    });
    const valid = c.keyValid ? this.slots.mask(c.keyValid, c.seq0, c.rows / T, cap) : 0;
    // x, qkv, y, gate|up, act, attention scores, then the GEMMs' packed input, 4 floats of alignment and a 4 x 8 tile
    const scratchFloats = (rows: number): number =>
      layerScratch(this.dims, rows) + H * cap + (rows + 3) * Math.max(C, H * D, F) + 4 + 32;
    const args = (r0: number, r1: number, scratch: number): Parameters<WasmKernels['decodeStep']> => {
      const s = r0 / T,
        seq = c.seq0 + s; // first sequence of these rows: within the call, and in the cache
      return [
        desc,
        L,
        p(c.h) + 4 * r0 * C,
        scratch,
        p(c.rope) + 4 * r0 * D,
        valid ? valid + 4 * s * cap : 0,
        4 * seq * K * cap * D,
        r1 - r0,
        C,
        H,
        K,
        D,
        F,
        cap,
        c.start,
        eps,
        scale,
        T,
        p(c.norm),
        p(c.head),
        p(c.logits) + 4 * seq * V,
        V,
        p(c.probs) + 4 * seq * V,
        p(c.lse) + 4 * seq,
        c.invTemp,
      ];
    };
    // the worker takes the second half of the sequences (a sequence's rows stay on one thread)
    const half = ((c.rows / T) >> 1) * T;
    const flops = 2 * c.rows * (C * (H + 2 * K) * D + H * D * C + 3 * C * F);
    if (!this.pool || half === 0 || flops < SPLIT_FLOPS) {
      this.k.decodeStep(...args(0, c.rows, this.slots.get('scratch0', scratchFloats(c.rows))));
      return;
    }
    const s0 = this.slots.get('scratch0', scratchFloats(half)),
      s1 = this.slots.get('scratch1', scratchFloats(c.rows - half));
    this.pool.run('decodeStep', args(0, half, s0), args(half, c.rows, s1));
  }

  dispose(): void {
    this.slots.free();
  }
}

/**
 * native/decode.inc: panels of 16 columns; a call per layer and one for the head, each splitting rows over two threads.
 */
export class NativeDecodeKernels implements DecodeKernels {
  readonly prefills = false;
  readonly threads = 2;
  private readonly slots: Slots;

  constructor(
    private readonly addon: NativeAddon,
    arena: BlockArena,
    private readonly dims: DecoderDims,
    private readonly capacity: number,
  ) {
    this.slots = new Slots(arena);
  }

  packedLength(N: number, K: number): number {
    return Math.ceil(N / 16) * 16 * K;
  }

  pack(w: Buf, out: Buf, N: number, K: number): void {
    this.addon.decodePack(p(w), p(out), N, K);
  }

  run(c: DecodeCall): void {
    if (c.T !== 1 || c.seq0 !== 0)
      throw new RangeError(
        `native decodeKernels: one token per sequence from sequence 0 (no prefill), got T = ${c.T}, seq0 = ${c.seq0}`,
      );
    const { C, H, Hkv: K, D, F, V, eps } = this.dims;
    const B = c.rows,
      cap = this.capacity,
      scale = 1 / Math.sqrt(D);
    const scratch = this.slots.get('scratch', layerScratch(this.dims, B));
    const valid = c.keyValid ? this.slots.mask(c.keyValid, 0, B, cap) : 0;
    for (const l of c.layers) {
      this.addon.decodeLayer(
        p(c.h),
        scratch,
        p(l.inNorm),
        p(l.qkv),
        optP(l.qkvBias),
        p(l.o),
        optP(l.oBias),
        p(l.postNorm),
        p(l.gateUp),
        p(l.down),
        p(l.keys),
        p(l.values),
        p(c.rope),
        optP(l.qNorm),
        optP(l.kNorm),
        valid,
        B,
        C,
        H,
        K,
        D,
        F,
        cap,
        c.start,
        eps,
        scale,
      );
    }
    this.addon.decodeHead(
      p(c.h),
      scratch,
      p(c.norm),
      p(c.head),
      p(c.logits),
      B,
      C,
      V,
      eps,
      p(c.probs),
      p(c.lse),
      c.invTemp,
    );
  }

  dispose(): void {
    this.slots.free();
  }
}
