// The native backend's arena past WebAssembly's 4 GiB: ~5 GiB of tensors written by the kernels, then ops on tensors
// placed above the 4 GiB mark, checked against plain JS arithmetic, and the tensors below left intact.
import { freemem } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { ArenaBuf } from './arena.js';
import { ARENA_LIMIT_BYTES } from './arena.js';
import type { Buf } from './backend.js';
import { loadBackend } from './index.js';
import { nativeArenaBytes } from './native-arena.js';
import type { NativeBackend } from './native-backend.js';
import { testBackend } from './testing.js';

const GIB = 2 ** 30;
/** RAM the test writes (5 GiB of tensors) and a margin for the rest of the process. */
const NEED = 6.5 * GIB;
const lacksRam = freemem() < NEED;

describe.skipIf(!testBackend('native'))('the native arena', () => {
  it('reserves twice the RAM (at least 16 GiB) unless RAGEN_NATIVE_ARENA_GIB says otherwise, and refuses a bad size', () => {
    expect(nativeArenaBytes('6')).toBe(6 * GIB);
    expect(nativeArenaBytes(undefined)).toBeGreaterThanOrEqual(16 * GIB);
    expect(() => nativeArenaBytes('lots')).toThrow(/RAGEN_NATIVE_ARENA_GIB=lots is not a size in GiB/);
  });

  it('keeps reservations out of nativeAllocated (they are address space) and frees them', () => {
    const { addon } = loadBackend('native') as NativeBackend;
    const before = addon.nativeAllocated();
    const block = addon.nativeReserve(GIB);
    expect(addon.nativeAllocated()).toBe(before);
    addon.nativeCopy(block, GIB - 8, Float32Array.of(1.5, -2), 1); // its last bytes are usable
    const back = new Float32Array(2);
    addon.nativeCopy(block, GIB - 8, back, 0);
    expect(Array.from(back)).toEqual([1.5, -2]);
    addon.nativeFree(block);
    expect(() => addon.nativeFree(block)).toThrow(/is not a live block/);
    const owned = addon.nativeAlloc(4096);
    expect(addon.nativeAllocated()).toBe(before + 4096);
    addon.nativeFree(owned);
  });

  it('names the size asked for when the reservation is full', () => {
    const be = loadBackend('native') as NativeBackend;
    const reserved = be.arena.capacity;
    expect(() => be.alloc(reserved / 4 + 1)).toThrow(
      /native tensor arena is out of memory: .* GiB needed, more than the/,
    );
  });

  describe.skipIf(lacksRam)(`past 4 GiB (skipped with under ${NEED / GIB} GiB of free RAM)`, () => {
    it('holds ~5 GiB of tensors and runs ops on tensors above the 4 GiB mark as plain JS computes them', () => {
      const be = loadBackend('native') as NativeBackend;
      const ptr = (b: Buf): number => (b as ArenaBuf).ptr;
      const base = be.arena.reservedBytes;
      // five 1 GiB tensors, each filled by the fill kernel with its own value (the pages become real memory)
      const big = Array.from({ length: 5 }, (_, i) => {
        const b = be.alloc(GIB / 4);
        be.fill(b, i + 1);
        return b;
      });
      expect(be.arena.reservedBytes - base).toBeGreaterThanOrEqual(5 * GIB);
      expect(ptr(big[4]!)).toBeGreaterThan(ARENA_LIMIT_BYTES);

      // small operands, all placed past 4 GiB in the arena
      const [M, K, N] = [5, 7, 3];
      const x = be.alloc(M * K),
        w = be.alloc(K * N),
        y = be.alloc(M * N),
        e = be.alloc(M * K),
        s = be.alloc(M * K);
      for (const b of [x, w, y, e, s]) expect(ptr(b)).toBeGreaterThan(2 ** 32);
      const xs = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i + 1));
      const ws = Float32Array.from({ length: K * N }, (_, i) => Math.cos(2 * i));
      be.write(x, xs);
      be.write(w, ws);
      be.gemm({ transA: false, transB: false, M, N, K, a: x, b: w, c: y, batch: 1, strideA: 0, strideB: 0, strideC: 0, alpha: 1, accumulate: false }); // prettier-ignore
      be.unary('exp', x, e, M * K);
      be.softmax(x, s, M, K, false);
      const got = be.read(y);
      for (let i = 0; i < M; i++)
        for (let j = 0; j < N; j++) {
          let want = 0;
          for (let k = 0; k < K; k++) want += xs[i * K + k]! * ws[k * N + j]!;
          expect(got[i * N + j]).toBeCloseTo(want, 5);
        }
      const ex = be.read(e),
        sm = be.read(s);
      for (let i = 0; i < M * K; i++) expect(ex[i]).toBeCloseTo(Math.exp(xs[i]!), 5);
      for (let i = 0; i < M; i++) {
        const row = Array.from(xs.subarray(i * K, (i + 1) * K), Math.exp);
        const z = row.reduce((a, b) => a + b, 0);
        for (let k = 0; k < K; k++) expect(sm[i * K + k]).toBeCloseTo(row[k]! / z, 6);
      }
      expect(be.sumSquares(x, M * K)).toBeCloseTo(
        xs.reduce((a, v) => a + v * v, 0),
        4,
      );

      // the big tensors still hold their own values at both ends (no address wrapped around at 4 GiB)
      big.forEach((b, i) => {
        expect(Array.from(be.read(b, 0, 2))).toEqual([i + 1, i + 1]);
        expect(Array.from(be.read(b, b.length - 2, 2))).toEqual([i + 1, i + 1]);
      });
      for (const b of [...big, x, w, y, e, s]) be.free(b);
      expect(be.arena.reservedBytes).toBe(base);
    });
  });
});
