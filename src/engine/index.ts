// engine: the Engine interface and its implementations.
export type { Engine, SamplingParams, Generation, ModelRole, ForwardResult } from './types.js';
