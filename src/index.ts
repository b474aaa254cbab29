// ragen-ts public surface.
export * from './util/index.js';
export * from './env/index.js';
export * as tensor from './tensor/index.js';
export * from './model/index.js';
export * from './engine/index.js';
export * from './algo/index.js';
export * from './metrics/index.js';
export * from './config/index.js';
export * from './train/index.js';
export * from './tokenizer/index.js';
export * from './agent/index.js';
