// Instantiating the WASM backend without Node: from bytes or a fetch Response, on one thread.
// Use build/kernels/ragen-single.wasm (non-shared memory: works without cross-origin isolation), or
// ragen.wasm with `shared: true` where SharedArrayBuffer is available.

import { Arena } from './arena.js';
import { WasmBackend, checkKernels } from './wasm-backend.js';

export interface CreateWasmOptions {
  /** The module imports a shared memory (ragen.wasm / ragen-relaxed.wasm). @default false (ragen-single.wasm) */
  shared?: boolean;
  /** Initial arena size in bytes. @default 64 MiB */
  initialBytes?: number;
}

/** Compile and instantiate the kernels; pass the result to `useBackend`. */
export async function createWasmBackend(
  source: ArrayBuffer | ArrayBufferView | { arrayBuffer(): Promise<ArrayBuffer> },
  opts: CreateWasmOptions = {},
): Promise<WasmBackend> {
  const bytes =
    'arrayBuffer' in source && typeof source.arrayBuffer === 'function'
      ? await source.arrayBuffer()
      : (source as ArrayBuffer | ArrayBufferView);
  // (a cast, not a copy: the DOM typings, used when the dashboard bundles this file, want BufferSource)
  const module = await WebAssembly.compile(bytes as ArrayBuffer);
  const arena = new Arena(opts.initialBytes, opts.shared ?? false);
  const inst = new WebAssembly.Instance(module, {
    env: {
      memory: arena.memory,
      abort: () => {
        throw new Error('wasm abort');
      },
    },
  });
  return new WasmBackend(checkKernels(inst.exports), arena, null, 'simd');
}
