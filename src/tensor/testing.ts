// Test helper: which kernel backends the backend-conditional tests run on. On a laptop without a C++ toolchain the
// tests of an unbuilt backend are skipped; with RAGEN_REQUIRE_BACKENDS=1 (.ci/run sets it) they fail instead, so CI
// cannot go green with hundreds of kernel tests silently skipped.
import { loadBackend, type BackendName } from './index.js'; // index.js registers the wasm and native loaders
import type { IsaPath } from './native-addon.js';
import type { NativeBackend } from './native-backend.js';

const HOW_TO_BUILD: Partial<Record<BackendName, string>> = {
  wasm: '`npm run build` compiles assembly/ into build/kernels/ragen.wasm (AssemblyScript, a dev dependency: run `npm ci` first)',
  native:
    '`npm run build` compiles native/ into build/native/ragen_native.node with node-gyp (needs g++ and make: `apt-get install build-essential`)',
};

/** Whether RAGEN_REQUIRE_BACKENDS=1 asks that every backend be present (CI). */
export function backendsRequired(): boolean {
  return process.env.RAGEN_REQUIRE_BACKENDS === '1';
}

/**
 * Whether tests gated on backend `name` should run: true when it loads, false (skip) when it does not; with
 * RAGEN_REQUIRE_BACKENDS=1 a backend that does not load throws, naming it, why it failed and how to build it.
 */
export function testBackend(name: BackendName): boolean {
  try {
    loadBackend(name);
    return true;
  } catch (e) {
    if (!backendsRequired()) return false;
    const how = HOW_TO_BUILD[name] ?? 'see docs/';
    throw new Error(
      `RAGEN_REQUIRE_BACKENDS=1 requires the ${name} backend, and it does not load: ${(e as Error).message}. To build it: ${how}. Unset RAGEN_REQUIRE_BACKENDS to skip its tests instead.`,
    );
  }
}

/**
 * The native kernels' instruction-set paths, widest first, each with null when the cores have it (its tests run) or
 * the reason its tests are skipped; empty when the native backend does not load.
 */
export function nativeIsaPaths(): { path: IsaPath; skip: string | null }[] {
  if (!testBackend('native')) return [];
  const isa = (loadBackend('native') as NativeBackend).isa();
  return [
    { path: 'avx512', skip: isa.avx512 ? null : 'the cores lack AVX-512 F/BW/DQ/VL' },
    { path: 'avx2', skip: isa.avx2 ? null : 'the cores lack AVX2/FMA' },
  ];
}
