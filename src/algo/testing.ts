// Test helpers for src/algo (not exported from the package): seeded arrays and central finite differences.
import { Rng } from '../util/rng.js';

/** n normal(0, scale) numbers from a seeded Rng, as Float64Array. */
export function randn(rng: Rng, n: number, scale = 1): Float64Array {
  return Float64Array.from({ length: n }, () => rng.normal() * scale);
}

/** A random 0/1 mask of n entries with P(1) = p. */
export function randMask(rng: Rng, n: number, p = 0.7): Float64Array {
  return Float64Array.from({ length: n }, () => (rng.random() < p ? 1 : 0));
}

/** Central difference (f(x + h e_i) − f(x − h e_i)) / 2h, restoring x. */
export function centralDiff(f: (x: Float64Array) => number, x: Float64Array, i: number, h = 1e-6): number {
  const x0 = x[i]!;
  x[i] = x0 + h;
  const fp = f(x);
  x[i] = x0 - h;
  const fm = f(x);
  x[i] = x0;
  return (fp - fm) / (2 * h);
}

/** Largest |grad_i − numeric_i| over all i. */
export function maxGradError(
  f: (x: Float64Array) => number,
  x: Float64Array,
  grad: ArrayLike<number>,
  h = 1e-6,
): number {
  let err = 0;
  for (let i = 0; i < x.length; i++) err = Math.max(err, Math.abs(grad[i]! - centralDiff(f, x, i, h)));
  return err;
}
