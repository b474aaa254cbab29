// The prebuilt native addon the package ships (prebuilds/<platform>-<arch>, `npm run build:prebuild`): built from
// today's native/ sources (its manifest's hash of them), the very file the manifest describes, and loaded on its own
// it gives a plain triple loop's matrix product on every kernel path this CPU has (AVX2, and AVX-512 where present).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prebuildDir, type IsaPath, type NativeAddon } from './native-addon.js';
import { packageRoot } from './node-kernels.js';

const dir = prebuildDir(packageRoot(), 'linux', 'x64');
const shipsHere = process.platform === 'linux' && process.arch === 'x64';

/** sha256 over native/'s files, by name order (each name, NUL, its bytes, NUL), as scripts/prebuild.mjs records it. */
function sourcesHash(): string {
  const native = join(packageRoot(), 'native');
  const h = createHash('sha256');
  for (const name of readdirSync(native).sort()) {
    if (!statSync(join(native, name)).isFile()) continue;
    h.update(`${name}\0`)
      .update(readFileSync(join(native, name)))
      .update('\0');
  }
  return h.digest('hex');
}

interface Manifest {
  platform: string;
  arch: string;
  sources: string;
  sha256: string;
  bytes: number;
  needs: { glibc: string | null; glibcxx: string | null };
}

describe('the shipped linux-x64 prebuild', () => {
  const manifest = JSON.parse(readFileSync(join(dir, 'ragen_native.json'), 'utf8')) as Manifest;
  const file = join(dir, 'ragen_native.node');

  it('was built from the native/ sources as they are now', () => {
    expect(
      manifest.sources,
      'native/ changed since prebuilds/linux-x64 was built: run `npm run build:prebuild` and commit prebuilds/',
    ).toBe(sourcesHash());
    expect([manifest.platform, manifest.arch]).toEqual(['linux', 'x64']);
  });

  it('is the file its manifest describes, small, and needs no newer C/C++ runtime than Debian 12 and Ubuntu 22.04 have', () => {
    const bytes = readFileSync(file);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(manifest.sha256);
    expect(bytes.length).toBe(manifest.bytes);
    expect(bytes.length).toBeLessThan(1 << 20);
    const version = (v: string | null) => (v ?? '0').split('.').map(Number);
    const atMost = (v: string | null, max: number[]) => {
      const x = version(v);
      for (let i = 0; i < max.length; i++) if ((x[i] ?? 0) !== max[i]) return (x[i] ?? 0) < max[i]!;
      return true;
    };
    expect(atMost(manifest.needs.glibc, [2, 35]), `glibc ${manifest.needs.glibc}`).toBe(true);
    expect(atMost(manifest.needs.glibcxx, [3, 4, 30]), `GLIBCXX ${manifest.needs.glibcxx}`).toBe(true);
  });

  describe.runIf(shipsHere && existsSync(file))('loaded on its own', () => {
    const addon = createRequire(import.meta.url)(file) as NativeAddon;
    const isa = addon.isa();
    const paths: IsaPath[] = isa.avx512 ? ['avx2', 'avx512'] : ['avx2'];

    for (const path of paths) {
      it(`multiplies matrices as a triple loop does on the ${path} path`, () => {
        expect(addon.setIsa(path)).toBe(path);
        const [M, K, N] = [67, 129, 83];
        const f32 = new Float32Array(new SharedArrayBuffer(4 * (M * K + K * N + M * N)));
        const [a, b, c] = [0, M * K, M * K + K * N]; // element offsets
        for (let i = 0; i < M * K; i++) f32[a + i] = Math.sin(0.37 * i);
        for (let i = 0; i < K * N; i++) f32[b + i] = Math.cos(0.11 * i);
        addon.setMemory(f32);
        addon.gemm(0, 0, M, N, K, a * 4, K, b * 4, N, c * 4, N, 1, 0, 1, 0, 0, 0);
        let err = 0;
        for (let i = 0; i < M; i++)
          for (let j = 0; j < N; j++) {
            let s = 0;
            for (let k = 0; k < K; k++) s += f32[a + i * K + k]! * f32[b + k * N + j]!;
            err = Math.max(err, Math.abs(f32[c + i * N + j]! - s));
          }
        expect(err).toBeLessThan(1e-3);
        expect(f32[c]).not.toBe(0);
      });
    }
  });
});
