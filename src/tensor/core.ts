// The tensor library's public surface without any Node-only module (shared by index.ts for Node and
// browser.ts for browsers).

export { Tensor, noGrad, tidy, keep, isGradEnabled, liveTensors } from './tensor.js';
export type { GradNode } from './tensor.js';
export { tensor, scalar, full, zeros, ones, randn, rand, empty } from './creation.js';
export type { CreateOptions } from './creation.js';
export {
  add,
  sub,
  mul,
  div,
  neg,
  exp,
  log,
  sqrt,
  silu,
  sigmoid,
  tanh,
  relu,
  square,
  affine,
  scale,
  addScalar,
  sum,
  mean,
} from './ops.js';
export { permute, transpose, narrow, slice, concat, assignSlice } from './shape-ops.js';
export { checkpoint } from './checkpoint.js';
export { matmul, linear } from './linalg.js';
export type { MatmulOptions } from './linalg.js';
export {
  embedding,
  rmsNorm,
  rope,
  swiglu,
  softmax,
  logSoftmax,
  logprobOfTarget,
  crossEntropy,
  entropy,
  causalAttention,
  dropout,
  gelu,
} from './nn.js';
export type { AttentionOptions } from './nn.js';
export { AdamW, clipGradNorm, gradNorm, gradsAreFinite } from './optim.js';
export type { AdamWOptions, AdamWState } from './optim.js';
export {
  setBackend,
  getBackend,
  loadBackend,
  backendAvailable,
  useBackend,
  backendNames,
  memoryStats,
  simdPeak,
  fmaPeak,
} from './backends.js';
export type {
  Backend,
  BackendName,
  Buf,
  GemmArgs,
  AttentionDims,
  AdamWStep,
  DecoderDims,
  DecodeLayer,
  DecodeCall,
  DecodeKernels,
} from './backend.js';
export { ARENA_LIMIT_BYTES } from './arena.js';
export { finiteDifferenceCheck, compareWithReference } from './grad-check.js';
export type { CheckInput, GradCheckResult } from './grad-check.js';

import type { Tensor } from './tensor.js';

/** Reshape as a function (same as `x.reshape(...)`). */
export function reshape(x: Tensor, shape: number[]): Tensor {
  return x.reshape(shape);
}

/** Ids for ops that take them (embedding, targets) are plain Int32Arrays; this converts number arrays. */
export function fromInt32(ids: ArrayLike<number>): Int32Array {
  return Int32Array.from(ids);
}
