import { describe, expect, it } from 'vitest';
import { Arena, ArenaBuf, sizeClass } from './arena.js';
import { Rng } from '../util/rng.js';

const MB = 1 << 20;

describe('Arena', () => {
  it('rounds requests to size classes, four per power of two', () => {
    expect([
      sizeClass(4),
      sizeClass(256),
      sizeClass(257),
      sizeClass(1024),
      sizeClass(1025),
      sizeClass(1280),
      sizeClass(1281),
    ]).toEqual([256, 256, 320, 1024, 1280, 1280, 1536]);
  });

  it('merges freed neighbours and splits them for smaller requests', () => {
    const a = new Arena(8 * MB, false);
    const x = a.alloc(MB / 4); // 1 MB each
    const y = a.alloc(MB / 4);
    const guard = a.alloc(64); // keeps x and y off the top
    a.free(x);
    a.free(y);
    const big = a.alloc(MB / 2); // 2 MB: only the merged x + y fits
    expect(big.ptr).toBe(x.ptr);
    a.free(big);
    const small = a.alloc(1000); // 4000 B -> 4096: carved from the front of the free 2 MB
    const next = a.alloc(1000);
    expect(small.ptr).toBe(x.ptr);
    expect(next.ptr).toBe(x.ptr + 4096);
    expect(a.reservedBytes).toBe(2 * MB + 256);
    expect(guard.ptr).toBe(x.ptr + 2 * MB);
  });

  it('gives the top of the arena back to the bump pointer', () => {
    const a = new Arena(8 * MB, false);
    const x = a.alloc(1000);
    const y = a.alloc(1000);
    a.free(x); // listed free: y is above it
    a.free(y); // merges with x and reaches the top
    expect(a.reservedBytes).toBe(0);
    expect(a.inUse).toBe(0);
    expect(a.alloc(5000).ptr).toBe(x.ptr);
  });

  it('stays near its peak use while tensor sizes drift from step to step (no high-water mark per size class)', () => {
    const a = new Arena(8 * MB, false);
    const rng = new Rng(3);
    let peakInUse = 0;
    let peakReserved = 0;
    for (let step = 0; step < 200; step++) {
      // one "step": activations sized by this step's sequence length, some freed early, the rest at the end
      const len = 64 + rng.int(448);
      const live: ArenaBuf[] = [];
      for (let op = 0; op < 40; op++) {
        live.push(a.alloc(len * (64 + rng.int(960))));
        if (live.length > 8 && rng.random() < 0.5) a.free(live.splice(rng.int(live.length), 1)[0]!);
        peakInUse = Math.max(peakInUse, a.inUse);
        peakReserved = Math.max(peakReserved, a.reservedBytes);
      }
      for (const b of live) a.free(b);
    }
    expect(a.inUse).toBe(0);
    expect(a.reservedBytes).toBe(0); // everything merged back into the bump region
    expect(peakReserved).toBeLessThan(1.5 * peakInUse);
  });
});
