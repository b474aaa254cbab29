// One shared WebAssembly.Memory holding every tensor of the wasm and native backends, so kernels and worker
// threads work in place. Requests are rounded to size classes (4 per power of two); freed blocks merge with
// free neighbours, are split to serve smaller requests, and give the top of the arena back to the bump
// pointer. Without the merging, a run whose tensor shapes vary (RL batches do) kept a separate high-water
// mark per size class and grew past the 4 GiB WebAssembly limit.

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

/** Free-block bin of a size: floor(log2(bytes)). */
const binOf = (bytes: number): number => 31 - Math.clz32(bytes);
/** Blocks looked at in a request's own bin before moving to the larger bins (where any block fits). */
const SCAN = 8;

export class Arena {
  readonly memory: WebAssembly.Memory;
  private top = ARENA_BASE;
  /** Free blocks: start -> bytes, end -> start, and the starts binned by binOf(bytes). */
  private readonly freeAt = new Map<number, number>();
  private readonly freeEnd = new Map<number, number>();
  private readonly bins: Set<number>[] = Array.from({ length: 33 }, () => new Set<number>());
  private f32View: Float32Array;
  private i32View: Int32Array;
  /** Bytes handed out and not freed. */
  inUse = 0;

  /** @param shared a SharedArrayBuffer-backed memory (needed for worker threads). */
  constructor(initialBytes = 64 << 20, shared = true) {
    const pages = Math.ceil(Math.max(initialBytes, 2 * ARENA_BASE) / PAGE);
    this.memory = new WebAssembly.Memory({ initial: pages, maximum: MAX_PAGES, shared });
    this.f32View = new Float32Array(this.memory.buffer);
    this.i32View = new Int32Array(this.memory.buffer);
  }

  /** Bytes below the bump pointer: handed out, or free blocks under it (not the memory's size, which never shrinks). */
  get reservedBytes(): number {
    return this.top - ARENA_BASE;
  }

  get f32(): Float32Array {
    return this.f32View;
  }
  get i32(): Int32Array {
    return this.i32View;
  }

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
    const end = ptr + bytes;
    // Check against our view, not the memory: kernels may grow the memory themselves, and a view made
    // before such a growth is too short for blocks past its end.
    if (end > this.f32View.byteLength) {
      const have = this.memory.buffer.byteLength;
      if (end > have) {
        const needPages = Math.ceil((end - have) / PAGE);
        const havePages = have / PAGE;
        const grow = Math.min(Math.max(needPages, Math.ceil(havePages / 4)), MAX_PAGES - havePages);
        if (grow < needPages)
          throw new RangeError(
            `tensor arena is out of memory: ${(end / 2 ** 30).toFixed(2)} GiB needed, more than the 4 GiB one WebAssembly memory can hold; free tensors you no longer need (tidy/dispose), shorten the batch (fewer or shorter sequences per forward), or run a model this size on model.engine=torch`,
          );
        this.memory.grow(grow);
      }
      this.f32View = new Float32Array(this.memory.buffer);
      this.i32View = new Int32Array(this.memory.buffer);
    }
    this.top = end;
    return ptr;
  }
}
