// Which kernel backend new tensors use: `setBackend`, `getBackend`, env var RAGEN_BACKEND.
// Default: native when built and loadable, else wasm, else the js reference; a fallback prints one line saying why.

import { ConfigError, didYouMean } from '../util/index.js';
import type { Backend, BackendName } from './backend.js';
import { JsBackend } from './js-backend.js';

const NAMES: readonly BackendName[] = ['js', 'js64', 'wasm', 'native'];

/** A loader returns the backend, or throws an Error saying why it is unavailable. */
type Loader = () => Backend;

const loaders = new Map<BackendName, Loader>([
  ['js', () => new JsBackend(32)],
  ['js64', () => new JsBackend(64)],
]);
const loaded = new Map<BackendName, Backend>();
let current: Backend | null = null;

/** @internal register how a backend is loaded (the Node loader registers wasm and native). */
export function registerBackendLoader(name: BackendName, loader: Loader): void {
  loaders.set(name, loader);
  loaded.delete(name);
}

/** Load (once) and return a backend by name, without making it current. Throws when unavailable. */
export function loadBackend(name: BackendName): Backend {
  if (!NAMES.includes(name))
    throw new ConfigError(`Unknown tensor backend \`${name}\`.${didYouMean(name, NAMES)} Valid: ${NAMES.join(', ')}.`);
  const have = loaded.get(name);
  if (have) return have;
  const loader = loaders.get(name);
  if (!loader)
    throw new ConfigError(`Tensor backend \`${name}\` is not available in this build (no loader registered).`);
  let b: Backend;
  try {
    b = loader();
  } catch (e) {
    throw new ConfigError(`Tensor backend \`${name}\` is unavailable: ${(e as Error).message}`);
  }
  loaded.set(name, b);
  return b;
}

/** Whether a backend can be loaded here. */
export function backendAvailable(name: BackendName): boolean {
  try {
    loadBackend(name);
    return true;
  } catch {
    return false;
  }
}

/** Make a backend current for tensors created from now on. Tensors of different backends do not mix. */
export function setBackend(name: BackendName): Backend {
  current = loadBackend(name);
  return current;
}

/** Use a backend object built by hand (e.g. a WASM backend instantiated in a browser). */
export function useBackend(backend: Backend): void {
  current = backend;
}

/** The current backend; on first use picks RAGEN_BACKEND, else native, else wasm, else js (logged). */
export function getBackend(): Backend {
  if (current) return current;
  const env = typeof process !== 'undefined' ? process.env?.RAGEN_BACKEND : undefined;
  if (env) return setBackend(env as BackendName);
  const why: string[] = [];
  for (const name of ['native', 'wasm'] as const) {
    if (!loaders.has(name)) continue;
    try {
      const b = setBackend(name);
      if (why.length > 0) console.warn(`ragen tensor: using the ${name} backend (${why.join('; ')})`);
      return b;
    } catch (e) {
      why.push((e as Error).message);
    }
  }
  if (loaders.has('wasm'))
    console.warn(`ragen tensor: using the slow js reference backend (${why.join('; ')}). Run \`npm run build\`.`);
  return setBackend('js');
}

/** Tensors alive, and for arena backends the bytes in use and reserved (the arena's high-water mark). */
export function memoryStats(): { liveTensors: number; arenaInUse: number | null; arenaReserved: number | null } {
  const arena = (current as { arena?: { inUse: number; reservedBytes: number } } | null)?.arena;
  return { liveTensors: liveCounter(), arenaInUse: arena?.inUse ?? null, arenaReserved: arena?.reservedBytes ?? null };
}

/**
 * The current backend's 128-bit (f32x4) multiply-add rate of one thread, GFLOP/s, measured now, and its kernel threads:
 * the ceiling of the wasm kernels on this machine. null for the js backends.
 */
export function simdPeak(): { gflopsPerThread: number; threads: number } | null {
  const be = current as { fmaPeakGflops?: () => number; threads?: number } | null;
  if (typeof be?.fmaPeakGflops !== 'function') return null;
  return { gflopsPerThread: be.fmaPeakGflops(), threads: be.threads ?? 1 };
}

/**
 * The current backend's float32 FMA rate of one thread on the widest instruction-set path its kernels take here
 * (native: AVX-512 or AVX2, measured now in the thread's own CPU time), that path, and its kernel threads: the ceiling
 * of the native kernels on this machine. null for the other backends.
 */
export function fmaPeak(): { gflopsPerThread: number; threads: number; isa: string } | null {
  const be = current as {
    fmaPeak?: (seconds?: number) => number;
    isa?: () => { path: string };
    kernelThreads?: number;
  } | null;
  if (typeof be?.fmaPeak !== 'function' || typeof be.isa !== 'function') return null;
  return { gflopsPerThread: be.fmaPeak(0.3), threads: be.kernelThreads ?? 1, isa: be.isa().path };
}

let liveCounter: () => number = () => 0;
/** @internal tensor.ts reports its live count here (avoids an import cycle). */
export function setLiveCounter(fn: () => number): void {
  liveCounter = fn;
}

/** The names of all backends. */
export function backendNames(): readonly BackendName[] {
  return NAMES;
}
