// tensor: float32 tensors with reverse-mode autograd, fused kernels on pluggable backends (js reference,
// WASM SIMD, native), AdamW. PyTorch vocabulary. Other folders import only from here.

import './node-kernels.js'; // registers the wasm and native loaders (Node)

export * from './core.js';
export { CONTROL_ADDR } from './arena.js';
export type { WasmBackend } from './wasm-backend.js';
export { Bf16Matrix, linearBf16, bf16Paths, nativeAllocatedBytes, BF16_PATHS } from './bf16.js';
export type { Bf16Path } from './bf16.js';
