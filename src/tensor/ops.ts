// Elementwise math (with trailing-dims / per-row broadcasting) and reductions, each with its backward.

import { ShapeError } from '../util/index.js';
import type { BinaryOp, UnaryOp } from './backend.js';
import { Tensor, attach } from './tensor.js';

/** @internal check that tensors share one backend and return it. */
export function backendOf(...ts: Tensor[]) {
  const b = ts[0]!.backend;
  for (const t of ts)
    if (t.backend !== b)
      throw new Error(
        `tensors from backends ${b.name} and ${t.backend.name} cannot be mixed; create them after setBackend()`,
      );
  return b;
}

/** How b broadcasts against a: b[floor(i / inner) % m]. */
interface Broadcast {
  m: number;
  inner: number;
}

/**
 * b broadcasts against a when, aligned at the right, b's non-1 dims form one contiguous block equal
 * to a's dims there: a trailing-dims tensor (a bias), a per-row scalar (R, 1), a scalar, or same shape.
 */
export function broadcastOf(a: readonly number[], b: readonly number[]): Broadcast | null {
  if (b.length > a.length) return null;
  const pad = a.length - b.length;
  const bb = [...new Array<number>(pad).fill(1), ...b];
  let first = -1,
    last = -1;
  for (let i = 0; i < bb.length; i++) if (bb[i] !== 1) ((first = first < 0 ? i : first), (last = i));
  if (first < 0) return { m: 1, inner: 1 };
  let m = 1,
    inner = 1;
  for (let i = first; i <= last; i++) {
    if (bb[i] !== a[i]) return null;
    m *= a[i]!;
  }
  for (let i = last + 1; i < a.length; i++) inner *= a[i]!;
  return { m, inner };
}

function binaryOp(op: BinaryOp, a: Tensor, b: Tensor): Tensor {
  let bc = broadcastOf(a.shape, b.shape);
  if (!bc && (op === 'add' || op === 'mul') && broadcastOf(b.shape, a.shape)) return binaryOp(op, b, a);
  if (!bc)
    throw new ShapeError(
      `${op}: shapes [${a.shape}] and [${b.shape}] do not broadcast (b must be a trailing block of a's dims, e.g. a bias or a per-row scalar)`,
    );
  const be = backendOf(a, b);
  const out = Tensor.empty(a.shape, be);
  be.binary(op, a.buf, b.buf, out.buf, a.size, bc.m, bc.inner);
  return attach(out, op, [a, b], (g) => {
    const n = a.size;
    let ga: Tensor | null = null,
      gb: Tensor | null = null;
    if (a.requiresGrad) {
      if (op === 'add' || op === 'sub')
        ga = g; // passed through: the engine hands it out once
      else {
        ga = Tensor.empty(a.shape, be);
        be.binary(op, g.buf, b.buf, ga.buf, n, bc.m, bc.inner);
      }
    }
    if (b.requiresGrad) {
      gb = Tensor.empty(b.shape, be);
      if (op === 'add' || op === 'sub') {
        be.reduceBroadcast(g.buf, null, gb.buf, n, bc.m, bc.inner);
        if (op === 'sub') be.affine(gb.buf, gb.buf, b.size, -1, 0);
      } else if (op === 'mul') {
        be.reduceBroadcast(g.buf, a.buf, gb.buf, n, bc.m, bc.inner);
      } else {
        // d(a/b)/db = -(a/b)/b
        const t = Tensor.empty(a.shape, be);
        be.binary('div', out.buf, b.buf, t.buf, n, bc.m, bc.inner);
        be.reduceBroadcast(g.buf, t.buf, gb.buf, n, bc.m, bc.inner);
        be.affine(gb.buf, gb.buf, b.size, -1, 0);
        t.dispose();
      }
    }
    return [ga, gb];
  });
}

/** a + b (b may broadcast: same shape, trailing dims, per-row scalar, scalar). */
export const add = (a: Tensor, b: Tensor): Tensor => binaryOp('add', a, b);
/** a - b. */
export const sub = (a: Tensor, b: Tensor): Tensor => binaryOp('sub', a, b);
/** a * b. */
export const mul = (a: Tensor, b: Tensor): Tensor => binaryOp('mul', a, b);
/** a / b. */
export const div = (a: Tensor, b: Tensor): Tensor => binaryOp('div', a, b);

function unaryOp(op: UnaryOp, x: Tensor): Tensor {
  const be = x.backend;
  const out = Tensor.empty(x.shape, be);
  be.unary(op, x.buf, out.buf, x.size);
  return attach(out, op, [x], (g) => {
    const gx = Tensor.empty(x.shape, be);
    be.unaryBackward(op, x.buf, out.buf, g.buf, gx.buf, x.size);
    return [gx];
  });
}

export const neg = (x: Tensor): Tensor => unaryOp('neg', x);
export const exp = (x: Tensor): Tensor => unaryOp('exp', x);
export const log = (x: Tensor): Tensor => unaryOp('log', x);
export const sqrt = (x: Tensor): Tensor => unaryOp('sqrt', x);
/** x * sigmoid(x). */
export const silu = (x: Tensor): Tensor => unaryOp('silu', x);
export const sigmoid = (x: Tensor): Tensor => unaryOp('sigmoid', x);
export const tanh = (x: Tensor): Tensor => unaryOp('tanh', x);
export const relu = (x: Tensor): Tensor => unaryOp('relu', x);
export const square = (x: Tensor): Tensor => unaryOp('square', x);

/** x * s + t for numbers s, t. */
export function affine(x: Tensor, s: number, t = 0): Tensor {
  const be = x.backend;
  const out = Tensor.empty(x.shape, be);
  be.affine(x.buf, out.buf, x.size, s, t);
  return attach(out, 'affine', [x], (g) => {
    const gx = Tensor.empty(x.shape, be);
    be.affine(g.buf, gx.buf, x.size, s, 0);
    return [gx];
  });
}

/** x * s for a number s. */
export const scale = (x: Tensor, s: number): Tensor => affine(x, s, 0);
/** x + t for a number t. */
export const addScalar = (x: Tensor, t: number): Tensor => affine(x, 1, t);

function normAxis(axis: number, ndim: number, what: string): number {
  const a = axis < 0 ? axis + ndim : axis;
  if (!Number.isInteger(a) || a < 0 || a >= ndim)
    throw new ShapeError(`${what}: axis ${axis} is out of range for a tensor with ${ndim} dims`);
  return a;
}

/** @internal (outer, len, inner) split of a shape around an axis. */
export function splitAt(shape: readonly number[], axis: number): [number, number, number] {
  let outer = 1,
    inner = 1;
  for (let i = 0; i < axis; i++) outer *= shape[i]!;
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i]!;
  return [outer, shape[axis]!, inner];
}

/** Sum over `axis` (all elements when omitted: a scalar of shape []). */
export function sum(x: Tensor, axis?: number, keepDim = false): Tensor {
  return reduce(x, axis, keepDim, 1, 'sum');
}

/** Mean over `axis` (all elements when omitted). */
export function mean(x: Tensor, axis?: number, keepDim = false): Tensor {
  const len = axis === undefined ? x.size : x.shape[normAxis(axis, x.ndim, 'mean')]!;
  return reduce(x, axis, keepDim, 1 / len, 'mean');
}

function reduce(x: Tensor, axis: number | undefined, keepDim: boolean, s: number, name: string): Tensor {
  const be = x.backend;
  let outer: number, len: number, inner: number, shape: number[];
  if (axis === undefined) {
    [outer, len, inner] = [1, x.size, 1];
    shape = keepDim ? x.shape.map(() => 1) : [];
  } else {
    const a = normAxis(axis, x.ndim, name);
    [outer, len, inner] = splitAt(x.shape, a);
    shape = keepDim ? x.shape.map((d, i) => (i === a ? 1 : d)) : x.shape.filter((_, i) => i !== a);
  }
  const out = Tensor.empty(shape, be);
  be.sumAxis(x.buf, out.buf, outer, len, inner);
  if (s !== 1) be.affine(out.buf, out.buf, out.size, s, 0);
  return attach(out, name, [x], (g) => {
    const gx = Tensor.empty(x.shape, be);
    be.expandAxis(g.buf, gx.buf, outer, len, inner, s);
    return [gx];
  });
}
