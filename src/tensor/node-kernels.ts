// Node loader of the kernels built by `npm run build` (scripts/build-kernels.mjs): the WASM module
// (relaxed-SIMD build when V8 accepts it, else the plain SIMD build with a line saying why) with a worker thread,
// and the optional native addon, each checked against its declared functions.

import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { packageRoot } from '../util/index.js';
import { Arena } from './arena.js';
import { registerBackendLoader } from './backends.js';
import { loadNativeAddon } from './native-addon.js';
import { NativeArena } from './native-arena.js';
import { NativeBackend } from './native-backend.js';
import { WORKER_SOURCE, createThreadPool, workerInitData, type ThreadPool } from './thread-pool.js';
import { WasmBackend, checkKernels } from './wasm-backend.js';
import { WASM_KERNEL_ARITY, type WasmKernels } from './wasm-kernels.js';

// The package root (where build/ lives): util's, re-exported for the tensor tests.
export { packageRoot };

/** Compile the kernel module: the relaxed-SIMD (FMA) build if V8 takes it, else the plain SIMD build. */
function compileKernels(dir: string): { module: WebAssembly.Module; variant: string } {
  const plain = join(dir, 'ragen.wasm'),
    relaxed = join(dir, 'ragen-relaxed.wasm');
  if (!existsSync(plain))
    throw new Error(`${plain} is missing; run \`npm run build\` (it compiles assembly/ with AssemblyScript)`);
  if (process.env.RAGEN_WASM_RELAXED === '0')
    return { module: new WebAssembly.Module(readFileSync(plain)), variant: 'simd' };
  let why = `${relaxed} is missing`;
  if (existsSync(relaxed)) {
    try {
      setFlagsFromString('--experimental-wasm-relaxed-simd'); // Node 20 ships relaxed SIMD behind this flag
      return { module: new WebAssembly.Module(readFileSync(relaxed)), variant: 'simd+relaxed' };
    } catch (e) {
      why = `this V8 rejects relaxed SIMD: ${(e as Error).message}`;
    }
  }
  console.warn(
    `ragen tensor: wasm kernels without relaxed-SIMD FMA (slower matmuls) because ${why}; RAGEN_WASM_RELAXED=0 picks them quietly`,
  );
  return { module: new WebAssembly.Module(readFileSync(plain)), variant: 'simd' };
}

let shared: {
  arena: Arena;
  kernels: WasmKernels;
  module: WebAssembly.Module;
  variant: string;
  pool?: ThreadPool | null;
} | null = null;

/** One arena + module instance per process, for the wasm backend. */
function sharedKernels() {
  if (shared) return shared;
  const { module, variant } = compileKernels(join(packageRoot(), 'build', 'kernels'));
  const arena = new Arena();
  const inst = new WebAssembly.Instance(module, {
    env: {
      memory: arena.memory,
      abort: () => {
        throw new Error('wasm abort');
      },
    },
  });
  shared = { arena, kernels: checkKernels(inst.exports), module, variant };
  return shared;
}

function threadCount(): number {
  const env = process.env.RAGEN_THREADS;
  if (env) return Math.max(1, Math.min(2, Number.parseInt(env, 10) || 1));
  return availableParallelism() >= 2 ? 2 : 1;
}

/** The worker thread running the same kernels on the same memory (started once; null for one thread). */
function sharedPool(): ThreadPool | null {
  const s = sharedKernels();
  if (s.pool !== undefined) return s.pool;
  s.pool = null;
  if (threadCount() < 2) return null;
  const names = Object.keys(WASM_KERNEL_ARITY);
  const boot =
    "init((typeof require === 'function' ? require('node:worker_threads') : process.getBuiltinModule('node:worker_threads')).workerData);";
  const worker = new Worker(`${WORKER_SOURCE}\n${boot}`, {
    eval: true,
    execArgv: [], // run as a script whatever flags (e.g. --input-type=module) the main process got
    workerData: workerInitData(s.module, s.arena.memory, names),
  });
  worker.on('error', (e) => console.warn(`ragen tensor: the kernel worker thread failed: ${e.message}`));
  worker.unref();
  s.pool = createThreadPool(s.arena.memory, s.kernels, names, () => void worker.terminate());
  if (!s.pool) console.warn('ragen tensor: the kernel worker thread did not start; kernels run on one thread');
  return s.pool;
}

function loadWasm(): WasmBackend {
  const s = sharedKernels();
  return new WasmBackend(s.kernels, s.arena, sharedPool(), s.variant);
}

/** The addon alone: its tensors live in native memory, which the wasm kernels cannot reach. */
function loadNative(): NativeBackend {
  const { addon } = loadNativeAddon(packageRoot());
  return new NativeBackend(new NativeArena(addon), addon);
}

registerBackendLoader('wasm', loadWasm);
registerBackendLoader('native', loadNative);
