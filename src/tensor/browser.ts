// Browser entry of the tensor library: everything in core.ts plus `createWasmBackend` (no Node APIs).
// Usage: useBackend(await createWasmBackend(await fetch('/ragen-single.wasm')))
export * from './core.js';
export { createWasmBackend } from './wasm-browser.js';
