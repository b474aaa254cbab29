// One shared WebAssembly.Memory holding every tensor of the wasm and native backends, with a
// size-class free list (4 classes per power of two), so kernels and worker threads work in place.

import type { Buf } from './backend.js';

/** A region of the arena: byte address and element count. */
export class ArenaBuf implements Buf {
  constructor(readonly ptr: number, readonly length: number, readonly bytes: number) {}
}

const PAGE = 65536;
/** Bytes below this address are reserved for the WASM module's own data and the thread control block. */
export const ARENA_BASE = 1 << 20;
/** Address of the thread-pool control block (Int32 flags then Float64 arguments). */
export const CONTROL_ADDR = 512 * 1024;
const MAX_PAGES = 65536;

/** Round a byte size up to its size class. */
export function sizeClass(bytes: number): number {
  if (bytes <= 256) return 256;
  const p = 2 ** Math.floor(Math.log2(bytes));
  const step = p / 4;
  return Math.ceil(bytes / step) * step;
}

export class Arena {
  readonly memory: WebAssembly.Memory;
  private top = ARENA_BASE;
  private readonly freeLists = new Map<number, number[]>();
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

  /** Bytes reserved from the memory so far (the high-water mark of the bump pointer). */
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
    const list = this.freeLists.get(bytes);
    const ptr = list && list.length > 0 ? list.pop()! : this.bump(bytes);
    this.inUse += bytes;
    return new ArenaBuf(ptr, n, bytes);
  }

  free(buf: ArenaBuf): void {
    let list = this.freeLists.get(buf.bytes);
    if (!list) this.freeLists.set(buf.bytes, (list = []));
    list.push(buf.ptr);
    this.inUse -= buf.bytes;
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
          throw new RangeError(`tensor arena is out of memory: ${(end / 2 ** 30).toFixed(2)} GiB needed, WebAssembly memory is limited to 4 GiB; free tensors (tidy/dispose) or use a smaller batch`);
        this.memory.grow(grow);
      }
      this.f32View = new Float32Array(this.memory.buffer);
      this.i32View = new Int32Array(this.memory.buffer);
    }
    this.top = end;
    return ptr;
  }
}
