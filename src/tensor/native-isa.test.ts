// The native addon's run-time instruction-set detection (native/isa.h) against the kernel's own view of the CPU
// (/proc/cpuinfo's flags, Linux), forcing a narrower path, and the FMA-peak probe behind `ragen bench engine`'s ceiling.
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBackend } from './index.js';
import type { NativeBackend } from './native-backend.js';
import { testBackend } from './testing.js';

const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : null;
const flags = new Set(
  cpuinfo
    ?.match(/^flags\s*:(.*)$/m)?.[1]
    ?.trim()
    .split(/\s+/) ?? [],
);

describe.runIf(testBackend('native'))('native instruction-set dispatch', () => {
  const be = loadBackend('native') as NativeBackend;
  afterAll(() => void be.setIsa('avx512'));

  it.runIf(cpuinfo)('reports the instruction sets /proc/cpuinfo lists, and takes the widest path', () => {
    const isa = be.isa();
    const avx512 = ['avx512f', 'avx512bw', 'avx512dq', 'avx512vl'].every((f) => flags.has(f));
    expect({
      avx2: isa.avx2,
      avx512: isa.avx512,
      bf16: isa.avx512bf16,
      vnni: isa.avx512vnni,
      amx: isa.amxBf16,
    }).toEqual({
      avx2: flags.has('avx2') && flags.has('fma'),
      avx512,
      bf16: avx512 && flags.has('avx512_bf16'),
      vnni: avx512 && flags.has('avx512_vnni'),
      amx: flags.has('amx_bf16') && flags.has('amx_tile'),
    });
    expect(isa.best).toBe(avx512 ? 'avx512' : 'avx2');
  });

  it('setIsa caps the path (and names a bad one)', () => {
    expect(be.setIsa('avx2')).toBe('avx2');
    expect(be.isa().path).toBe('avx2');
    expect(be.info()).toMatch(/avx2/);
    expect(be.setIsa('avx512')).toBe(be.isa().best);
    expect(() => be.setIsa('sse' as 'avx2')).toThrow(/unknown path "sse"; valid: avx2, avx512/);
  });

  // Intel's AVX-512 cores have 512-bit FMA units; AMD's Zen 4 runs a 512-bit FMA on its 256-bit units in two halves,
  // so there the two paths share one peak
  const amd = /^vendor_id\s*:\s*AuthenticAMD$/m.test(cpuinfo ?? '');
  it.runIf(flags.has('avx512f'))(
    `measures ${amd ? 'the same FMA rate (AMD)' : 'about twice the FMA rate'} on the avx512 path as on avx2`,
    () => {
      be.setIsa('avx2');
      const narrow = be.fmaPeak(0.2);
      be.setIsa('avx512');
      const wide = be.fmaPeak(0.2);
      expect(narrow).toBeGreaterThan(1);
      if (amd) expect(wide / narrow).toBeGreaterThan(0.8);
      else expect(wide / narrow).toBeGreaterThan(1.4);
    },
  );
});
