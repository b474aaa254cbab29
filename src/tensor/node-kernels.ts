// Node loader of the built kernels (filled in with the wasm and native backends).
export {};
