// Creating tensors: from data, zeros/ones/full, seeded normal and uniform samples.

import { ShapeError } from '../util/index.js';
import type { Rng } from '../util/index.js';
import { Tensor, shapeSize } from './tensor.js';

export interface CreateOptions {
  /** Make a leaf whose gradient `backward()` accumulates (a parameter). @default false */
  requiresGrad?: boolean;
}

/** A tensor holding a copy of `data` with the given shape (default: 1-D). */
export function tensor(
  data: Float32Array | Float64Array | readonly number[],
  shape?: readonly number[],
  opts: CreateOptions = {},
): Tensor {
  const s = shape ?? [data.length];
  if (shapeSize(s) !== data.length)
    throw new ShapeError(`tensor(): ${data.length} values do not fill shape [${s}] (${shapeSize(s)} elements)`);
  const t = Tensor.empty(s);
  t.backend.write(t.buf, data);
  t.requiresGrad = opts.requiresGrad ?? false;
  return t;
}

/** A one-element tensor of shape []. */
export function scalar(value: number, opts: CreateOptions = {}): Tensor {
  return tensor([value], [], opts);
}

/** A tensor filled with `value`. */
export function full(shape: readonly number[], value: number, opts: CreateOptions = {}): Tensor {
  const t = Tensor.empty(shape);
  t.backend.fill(t.buf, value);
  t.requiresGrad = opts.requiresGrad ?? false;
  return t;
}

export function zeros(shape: readonly number[], opts: CreateOptions = {}): Tensor {
  return full(shape, 0, opts);
}

export function ones(shape: readonly number[], opts: CreateOptions = {}): Tensor {
  return full(shape, 1, opts);
}

/** Normal samples with mean 0 and standard deviation `std`, drawn from `rng` (same seed -> same tensor). */
export function randn(shape: readonly number[], rng: Rng, std = 1, opts: CreateOptions = {}): Tensor {
  const data = new Float32Array(shapeSize(shape));
  for (let i = 0; i < data.length; i++) data[i] = rng.normal() * std;
  return tensor(data, shape, opts);
}

/** Uniform samples in [lo, hi), drawn from `rng`. */
export function rand(shape: readonly number[], rng: Rng, lo = 0, hi = 1, opts: CreateOptions = {}): Tensor {
  const data = new Float32Array(shapeSize(shape));
  for (let i = 0; i < data.length; i++) data[i] = lo + (hi - lo) * rng.random();
  return tensor(data, shape, opts);
}

/** An uninitialised tensor (contents unspecified): for outputs a kernel overwrites entirely. */
export function empty(shape: readonly number[]): Tensor {
  return Tensor.empty(shape);
}
