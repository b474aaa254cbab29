// The tensor arenas: one allocator (BlockArena) over a range of byte addresses, and the wasm backend's storage for it,
// one shared WebAssembly.Memory (so kernels and worker threads work in place; at most 4 GiB); the native backend's,
// a native block past that limit, is native-arena.ts. Requests are rounded to size classes (4 per power of two);
// freed blocks merge with free neighbours, are split to serve smaller requests, and give the top of the arena back
// to the bump pointer. Without the merging, a run whose tensor shapes vary (RL batches do) kept a separate
// high-water mark per size class and grew past the 4 GiB WebAssembly limit.

import type { Buf } from './backend.js';

/** A region of the arena: byte address and element count. */
export class ArenaBuf implements Buf {
  constructor(
    readonly ptr: number,
    readonly length: number,
    readonly bytes: number,
  ) {}
}

const PAGE = 65536;
/** Bytes below this address are reserved for the WASM module's own data and the thread control block. */
export const ARENA_BASE = 1 << 20;
/** Address of the thread-pool control block (Int32 flags then Float64 arguments). */
export const CONTROL_ADDR = 512 * 1024;
const MAX_PAGES = 65536;
/** The most bytes the arena can hand out: a WebAssembly (memory32) memory holds at most 4 GiB. */
export const ARENA_LIMIT_BYTES = MAX_PAGES * PAGE - ARENA_BASE;

/** Round a byte size up to its size class. */
export function sizeClass(bytes: number): number {
  if (bytes <= 256) return 256;
  const p = 2 ** Math.floor(Math.log2(bytes));
  const step = p / 4;
  return Math.ceil(bytes / step) * step;
}

/** Free-block bin of a size: floor(log2(bytes)) (not clz32: native arenas pass 4 GiB). */
const binOf = (bytes: number): number => (bytes < 2 ** 31 ? 31 - Math.clz32(bytes) : Math.floor(Math.log2(bytes)));
/** Blocks looked at in a request's own bin before moving to the larger bins (where any block fits). */
const SCAN = 8;

/**
 * A first-fit allocator with merging over byte addresses from `base` up; the storage behind them (and reads and writes
 * from JS) is the subclass's. Addresses start above 0, so 0 can stand for "no buffer" in kernel arguments.
 */
export abstract class BlockArena {
  private top: number;
  /** Free blocks: start -> bytes, end -> start, and the starts binned by binOf(bytes). */
  private readonly freeAt = new Map<number, number>();
  private readonly freeEnd = new Map<number, number>();
  private readonly bins: Set<number>[] = Array.from({ length: 54 }, () => new Set<number>());
  /** Bytes handed out and not freed. */
  inUse = 0;

  constructor(private readonly base: number) {
    this.top = base;
  }

  /** Bytes below the bump pointer: handed out, or free blocks under it (not the memory's size, which never shrinks). */
  get reservedBytes(): number {
    return this.top - this.base;
  }

  /** Make addresses below `end` usable (growing the storage), or throw a RangeError saying why it cannot. */
  protected abstract ensure(end: number): void;
  /** Copy `src` to the float32 slots from byte address `ptr`. */
  abstract writeF32(ptr: number, src: ArrayLike<number>): void;
  /** Copy `src` to the int32 slots from byte address `ptr`. */
  abstract writeI32(ptr: number, src: Int32Array): void;
  /** Copy `out.length` float32 slots from byte address `ptr` into `out`. */
  abstract readF32(ptr: number, out: Float32Array): void;

  alloc(n: number): ArenaBuf {
    const bytes = sizeClass(Math.max(n, 1) * 4);
    const ptr = this.take(bytes) ?? this.bump(bytes);
    this.inUse += bytes;
    return new ArenaBuf(ptr, n, bytes);
  }

  free(buf: ArenaBuf): void {
    this.inUse -= buf.bytes;
    let start = buf.ptr;
    let bytes = buf.bytes;
    const before = this.freeEnd.get(start);
    if (before !== undefined) {
      bytes += this.unlist(before);
      start = before;
    }
    if (this.freeAt.has(start + bytes)) bytes += this.unlist(start + bytes);
    if (start + bytes === this.top) this.top = start;
    else this.list(start, bytes);
  }

  /**
   * A free block of at least `bytes` (first fit among a few of its own bin, else any of a larger bin), split to size.
   */
  private take(bytes: number): number | undefined {
    const own = this.bins[binOf(bytes)]!;
    let seen = 0;
    for (const start of own) {
      if (this.freeAt.get(start)! >= bytes) return this.carve(start, bytes);
      if (++seen === SCAN) break;
    }
    for (let b = binOf(bytes) + 1; b < this.bins.length; b++) {
      const bin = this.bins[b]!;
      if (bin.size > 0) return this.carve(bin.values().next().value!, bytes);
    }
    return undefined;
  }

  private carve(start: number, bytes: number): number {
    const size = this.unlist(start);
    if (size > bytes) this.list(start + bytes, size - bytes);
    return start;
  }

  private list(start: number, bytes: number): void {
    this.freeAt.set(start, bytes);
    this.freeEnd.set(start + bytes, start);
    this.bins[binOf(bytes)]!.add(start);
  }

  /** Remove the free block at `start`; its size. */
  private unlist(start: number): number {
    const bytes = this.freeAt.get(start)!;
    this.freeAt.delete(start);
    this.freeEnd.delete(start + bytes);
    this.bins[binOf(bytes)]!.delete(start);
    return bytes;
  }

  private bump(bytes: number): number {
    const ptr = this.top;
    this.ensure(ptr + bytes);
    this.top = ptr + bytes;
    return ptr;
  }
}

/** The wasm backend's arena: one WebAssembly.Memory of at most 4 GiB (memory32), grown on demand. */
export class Arena extends BlockArena {
  readonly memory: WebAssembly.Memory;
  private f32View: Float32Array;
  private i32View: Int32Array;

  /** @param shared a SharedArrayBuffer-backed memory (needed for worker threads). */
  constructor(initialBytes = 64 << 20, shared = true) {
    super(ARENA_BASE);
    const pages = Math.ceil(Math.max(initialBytes, 2 * ARENA_BASE) / PAGE);
    this.memory = new WebAssembly.Memory({ initial: pages, maximum: MAX_PAGES, shared });
    this.f32View = new Float32Array(this.memory.buffer);
    this.i32View = new Int32Array(this.memory.buffer);
  }

  get f32(): Float32Array {
    return this.f32View;
  }
  get i32(): Int32Array {
    return this.i32View;
  }

  writeF32(ptr: number, src: ArrayLike<number>): void {
    this.f32View.set(src, ptr >>> 2);
  }
  writeI32(ptr: number, src: Int32Array): void {
    this.i32View.set(src, ptr >>> 2);
  }
  readF32(ptr: number, out: Float32Array): void {
    out.set(this.f32View.subarray(ptr >>> 2, (ptr >>> 2) + out.length));
  }

  protected ensure(end: number): void {
    // Check against our view, not the memory: kernels may grow the memory themselves, and a view made
    // before such a growth is too short for blocks past its end.
    if (end <= this.f32View.byteLength) return;
    const have = this.memory.buffer.byteLength;
    if (end > have) {
      const needPages = Math.ceil((end - have) / PAGE);
      const havePages = have / PAGE;
      const grow = Math.min(Math.max(needPages, Math.ceil(havePages / 4)), MAX_PAGES - havePages);
      if (grow < needPages)
        throw new RangeError(
          `tensor arena is out of memory: ${(end / 2 ** 30).toFixed(2)} GiB needed, more than the 4 GiB one WebAssembly memory can hold; free tensors you no longer need (tidy/dispose), shorten the batch (fewer or shorter sequences per forward), or run a model this size on the native backend (model.backend=native, no 4 GiB limit) or on model.engine=torch`,
        );
      this.memory.grow(grow);
    }
    this.f32View = new Float32Array(this.memory.buffer);
    this.i32View = new Int32Array(this.memory.buffer);
  }
}
