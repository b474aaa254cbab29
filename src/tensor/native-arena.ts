// The native backend's tensor arena: one native block (native/memory.cc's nativeReserve) the size of the machine's
// RAM or more, mapped lazily so pages cost memory only once written, with the same allocator as the wasm arena. Node
// 20 has WebAssembly memory64 only behind flags, so past 4 GiB the tensors leave WebAssembly memory: the addon's
// kernels take byte offsets into this block, and JS reads and writes through the addon's copies.

import { totalmem } from 'node:os';
import { BlockArena } from './arena.js';
import type { NativeAddon } from './native-addon.js';

/** The first address handed out: above 0, which kernel arguments use for "no buffer". */
const NATIVE_ARENA_BASE = 4096;
const gib = (bytes: number): string => `${(bytes / 2 ** 30).toFixed(2)} GiB`;

/**
 * The reservation: twice the machine's RAM (address space, not memory; the arena can never use more than RAM and swap
 * hold), at least 16 GiB, or RAGEN_NATIVE_ARENA_GIB.
 */
export function nativeArenaBytes(env: string | undefined = process.env.RAGEN_NATIVE_ARENA_GIB): number {
  if (env !== undefined) {
    const g = Number(env);
    if (!(g > 0 && g <= 2 ** 20))
      throw new RangeError(`RAGEN_NATIVE_ARENA_GIB=${env} is not a size in GiB; e.g. RAGEN_NATIVE_ARENA_GIB=32`);
    return Math.ceil((g * 2 ** 30) / 4096) * 4096;
  }
  return Math.max(16 * 2 ** 30, 2 * Math.ceil(totalmem() / 2 ** 30) * 2 ** 30);
}

export class NativeArena extends BlockArena {
  /** The block's address: what the kernels' `setMemory` takes, and what byte offsets here are relative to. */
  readonly address: number;

  constructor(
    private readonly addon: NativeAddon,
    readonly capacity: number = nativeArenaBytes(),
  ) {
    super(NATIVE_ARENA_BASE);
    this.address = addon.nativeReserve(capacity);
  }

  protected ensure(end: number): void {
    if (end <= this.capacity) return;
    throw new RangeError(
      `native tensor arena is out of memory: ${gib(end)} needed, more than the ${gib(this.capacity)} reserved (twice this machine's ${gib(totalmem())} of RAM, or RAGEN_NATIVE_ARENA_GIB); free tensors you no longer need (tidy/dispose), shorten the batch, or run a model this size on model.engine=torch`,
    );
  }

  writeF32(ptr: number, src: ArrayLike<number>): void {
    const data = src instanceof Float32Array ? src : Float32Array.from(src);
    this.addon.nativeCopy(this.address, ptr, data, 1);
  }
  writeI32(ptr: number, src: Int32Array): void {
    this.addon.nativeCopy(this.address, ptr, src, 1);
  }
  readF32(ptr: number, out: Float32Array): void {
    this.addon.nativeCopy(this.address, ptr, out, 0);
  }
}
