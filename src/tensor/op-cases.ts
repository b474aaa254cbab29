// A table of every differentiable op on small seeded shapes (odd sizes on purpose), shared by the
// finite-difference tests and the fast-backend-vs-reference tests.

import { Rng } from '../util/index.js';
import type { CheckInput } from './grad-check.js';
import * as T from './index.js';
import type { Tensor } from './tensor.js';

export interface OpCase {
  name: string;
  inputs: CheckInput[];
  fn: (xs: Tensor[]) => Tensor;
}

const ids = (n: number, V: number, seed: number): Int32Array => {
  const r = new Rng(seed);
  return Int32Array.from({ length: n }, () => r.int(V));
};
const positive = (n: number, seed: number): number[] => {
  const r = new Rng(seed);
  return Array.from({ length: n }, () => 0.5 + 2 * r.random());
};
const awayFromZero = (n: number, seed: number): number[] => {
  const r = new Rng(seed);
  return Array.from({ length: n }, () => (r.random() < 0.5 ? -1 : 1) * (0.2 + r.random()));
};

export const OP_CASES: OpCase[] = [
  { name: 'add same shape', inputs: [{ shape: [3, 5] }, { shape: [3, 5] }], fn: ([a, b]) => T.add(a!, b!) },
  { name: 'add bias broadcast', inputs: [{ shape: [2, 3, 5] }, { shape: [5] }], fn: ([a, b]) => T.add(a!, b!) },
  { name: 'add bias first', inputs: [{ shape: [5] }, { shape: [4, 5] }], fn: ([a, b]) => T.add(a!, b!) },
  { name: 'sub per-row scalar', inputs: [{ shape: [4, 7] }, { shape: [4, 1] }], fn: ([a, b]) => T.sub(a!, b!) },
  { name: 'mul middle broadcast', inputs: [{ shape: [2, 3, 5] }, { shape: [3, 1] }], fn: ([a, b]) => T.mul(a!, b!) },
  { name: 'mul scalar tensor', inputs: [{ shape: [3, 4] }, { shape: [] }], fn: ([a, b]) => T.mul(a!, b!) },
  { name: 'div', inputs: [{ shape: [3, 6] }, { shape: [6], data: positive(6, 3) }], fn: ([a, b]) => T.div(a!, b!) },
  { name: 'neg', inputs: [{ shape: [7] }], fn: ([a]) => T.neg(a!) },
  { name: 'exp', inputs: [{ shape: [9] }], fn: ([a]) => T.exp(a!) },
  { name: 'log', inputs: [{ shape: [9], data: positive(9, 4) }], fn: ([a]) => T.log(a!) },
  { name: 'sqrt', inputs: [{ shape: [9], data: positive(9, 5) }], fn: ([a]) => T.sqrt(a!) },
  { name: 'silu', inputs: [{ shape: [3, 11] }], fn: ([a]) => T.silu(a!) },
  { name: 'sigmoid', inputs: [{ shape: [13] }], fn: ([a]) => T.sigmoid(a!) },
  { name: 'tanh', inputs: [{ shape: [13] }], fn: ([a]) => T.tanh(a!) },
  { name: 'relu', inputs: [{ shape: [13], data: awayFromZero(13, 6) }], fn: ([a]) => T.relu(a!) },
  { name: 'square', inputs: [{ shape: [13] }], fn: ([a]) => T.square(a!) },
  { name: 'affine', inputs: [{ shape: [2, 5] }], fn: ([a]) => T.affine(a!, -1.5, 0.25) },
  { name: 'sum all', inputs: [{ shape: [3, 4] }], fn: ([a]) => T.sum(a!) },
  { name: 'sum axis 1', inputs: [{ shape: [2, 3, 4] }], fn: ([a]) => T.sum(a!, 1) },
  { name: 'mean axis -1 keepDim', inputs: [{ shape: [3, 5] }], fn: ([a]) => T.mean(a!, -1, true) },
  { name: 'mean all', inputs: [{ shape: [3, 5] }], fn: ([a]) => T.mean(a!) },
  { name: 'reshape', inputs: [{ shape: [2, 6] }], fn: ([a]) => T.exp(a!.reshape(3, -1)) },
  { name: 'transpose heads', inputs: [{ shape: [2, 3, 4, 5] }], fn: ([a]) => T.transpose(a!, 1, 2) },
  { name: 'permute 3d', inputs: [{ shape: [2, 3, 4] }], fn: ([a]) => T.permute(a!, [2, 0, 1]) },
  { name: 'narrow', inputs: [{ shape: [3, 7, 2] }], fn: ([a]) => T.narrow(a!, 1, 2, 4) },
  { name: 'slice negative', inputs: [{ shape: [5, 3] }], fn: ([a]) => T.slice(a!, 0, -3) },
  { name: 'concat axis 1', inputs: [{ shape: [2, 3] }, { shape: [2, 5] }], fn: ([a, b]) => T.concat([a!, b!], 1) },
  { name: 'matmul', inputs: [{ shape: [5, 7] }, { shape: [7, 3] }], fn: ([a, b]) => T.matmul(a!, b!) },
  {
    name: 'matmul transA',
    inputs: [{ shape: [7, 5] }, { shape: [7, 3] }],
    fn: ([a, b]) => T.matmul(a!, b!, { transA: true }),
  },
  {
    name: 'matmul transB',
    inputs: [{ shape: [5, 7] }, { shape: [3, 7] }],
    fn: ([a, b]) => T.matmul(a!, b!, { transB: true }),
  },
  {
    name: 'matmul transA transB',
    inputs: [{ shape: [7, 5] }, { shape: [3, 7] }],
    fn: ([a, b]) => T.matmul(a!, b!, { transA: true, transB: true }),
  },
  {
    name: 'matmul batched',
    inputs: [{ shape: [2, 3, 5, 4] }, { shape: [2, 3, 4, 6] }],
    fn: ([a, b]) => T.matmul(a!, b!),
  },
  {
    name: 'matmul batched transB',
    inputs: [{ shape: [3, 5, 4] }, { shape: [3, 6, 4] }],
    fn: ([a, b]) => T.matmul(a!, b!, { transB: true }),
  },
  {
    name: 'matmul broadcast b 2d',
    inputs: [{ shape: [2, 5, 4] }, { shape: [4, 3] }],
    fn: ([a, b]) => T.matmul(a!, b!),
  },
  {
    name: 'matmul broadcast b 2d transA',
    inputs: [{ shape: [2, 4, 5] }, { shape: [4, 3] }],
    fn: ([a, b]) => T.matmul(a!, b!, { transA: true }),
  },
  {
    name: 'matmul broadcast a 2d',
    inputs: [{ shape: [5, 4] }, { shape: [3, 4, 2] }],
    fn: ([a, b]) => T.matmul(a!, b!),
  },
  {
    name: 'linear with bias',
    inputs: [{ shape: [2, 3, 6] }, { shape: [5, 6] }, { shape: [5] }],
    fn: ([x, w, b]) => T.linear(x!, w!, b!),
  },
  { name: 'embedding', inputs: [{ shape: [6, 5] }], fn: ([w]) => T.embedding(w!, Int32Array.from([1, 4, 1, 0, 5])) },
  { name: 'rmsNorm', inputs: [{ shape: [3, 9] }, { shape: [9] }], fn: ([x, w]) => T.rmsNorm(x!, w!, 1e-5) },
  {
    name: 'rope shared positions',
    inputs: [{ shape: [2, 3, 4, 6] }],
    fn: ([x]) => T.rope(x!, Int32Array.from([0, 1, 2, 3]), 10000),
  },
  {
    name: 'rope per-sequence positions',
    inputs: [{ shape: [2, 1, 3, 8] }],
    fn: ([x]) => T.rope(x!, Int32Array.from([5, 6, 7, 0, 1, 2]), 500),
  },
  { name: 'swiglu', inputs: [{ shape: [3, 7] }, { shape: [3, 7] }], fn: ([g, u]) => T.swiglu(g!, u!) },
  { name: 'gelu', inputs: [{ shape: [3, 9] }], fn: ([x]) => T.gelu(x!) },
  { name: 'softmax', inputs: [{ shape: [3, 7] }], fn: ([x]) => T.softmax(x!) },
  { name: 'logSoftmax', inputs: [{ shape: [3, 7] }], fn: ([x]) => T.logSoftmax(x!) },
  { name: 'logprobOfTarget', inputs: [{ shape: [5, 11] }], fn: ([x]) => T.logprobOfTarget(x!, ids(5, 11, 8)) },
  { name: 'crossEntropy', inputs: [{ shape: [5, 11] }], fn: ([x]) => T.crossEntropy(x!, ids(5, 11, 9)) },
  {
    name: 'crossEntropy masked',
    inputs: [{ shape: [5, 11] }],
    fn: ([x]) => T.crossEntropy(x!, ids(5, 11, 9), [1, 0, 1, 1, 0]),
  },
  { name: 'entropy', inputs: [{ shape: [4, 9] }], fn: ([x]) => T.entropy(x!) },
  {
    name: 'causalAttention GQA',
    inputs: [{ shape: [2, 4, 5, 3] }, { shape: [2, 2, 5, 3] }, { shape: [2, 2, 5, 3] }],
    fn: ([q, k, v]) => T.causalAttention(q!, k!, v!),
  },
  {
    name: 'causalAttention offset (KV cache)',
    inputs: [{ shape: [1, 2, 2, 4] }, { shape: [1, 1, 6, 4] }, { shape: [1, 1, 6, 4] }],
    fn: ([q, k, v]) => T.causalAttention(q!, k!, v!, { queryOffset: 3 }),
  },
  {
    name: 'causalAttention key padding',
    inputs: [{ shape: [2, 2, 4, 3] }, { shape: [2, 2, 4, 3] }, { shape: [2, 2, 4, 3] }],
    fn: ([q, k, v]) => T.causalAttention(q!, k!, v!, { keyValid: Int32Array.from([0, 1, 1, 1, 1, 1, 0, 1]) }),
  },
  {
    // rows past one micro-kernel block (8 on AVX-512, 6 on AVX2) after cached keys: the native kernel's causal skipping
    name: 'causalAttention row blocks after an offset',
    inputs: [{ shape: [1, 2, 19, 5] }, { shape: [1, 1, 23, 5] }, { shape: [1, 1, 23, 5] }],
    fn: ([q, k, v]) => T.causalAttention(q!, k!, v!, { queryOffset: 4 }),
  },
  { name: 'dropout', inputs: [{ shape: [4, 6] }], fn: ([x]) => T.dropout(x!, 0.3, new Rng(11)) },
];
