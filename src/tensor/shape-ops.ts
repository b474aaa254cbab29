// Shape ops that move data: permute / transpose, narrow / slice, concat, and in-place slice assignment
// (for KV caches). Reshape is a view (Tensor.reshape).

import { ShapeError } from '../util/index.js';
import { backendOf, splitAt } from './ops.js';
import { Tensor, attach, isGradEnabled } from './tensor.js';

function normAxis(axis: number, ndim: number, what: string): number {
  const a = axis < 0 ? axis + ndim : axis;
  if (!Number.isInteger(a) || a < 0 || a >= ndim)
    throw new ShapeError(`${what}: axis ${axis} is out of range for a tensor with ${ndim} dims`);
  return a;
}

/** Merge dims that stay adjacent under perm and drop size-1 dims, then pad to exactly 4 dims. */
function collapse(shape: readonly number[], perm: readonly number[]): { shape: number[]; perm: number[] } {
  const keepDims = perm.filter((p) => shape[p] !== 1);
  // groups of source dims, in output order, that are consecutive in the source
  const groups: number[][] = [];
  for (const p of keepDims) {
    const last = groups[groups.length - 1];
    if (last && last[last.length - 1]! + 1 === p) last.push(p);
    else groups.push([p]);
  }
  const bySource = [...groups].sort((a, b) => a[0]! - b[0]!);
  const srcShape = bySource.map((g) => g.reduce((n, d) => n * shape[d]!, 1));
  const newPerm = groups.map((g) => bySource.indexOf(g));
  if (srcShape.length > 4)
    throw new ShapeError(`permute: [${perm}] of shape [${shape}] moves more than 4 independent dims (unsupported)`);
  while (srcShape.length < 4) {
    srcShape.unshift(1);
    for (let i = 0; i < newPerm.length; i++) newPerm[i]! += 1;
    newPerm.unshift(0);
  }
  return { shape: srcShape, perm: newPerm };
}

/** Reorder dims: out.shape[i] = x.shape[perm[i]]. */
export function permute(x: Tensor, perm: readonly number[]): Tensor {
  if (perm.length !== x.ndim || [...perm].sort((p, q) => p - q).some((p, i) => p !== i))
    throw new ShapeError(`permute: [${perm}] is not a permutation of ${x.ndim} dims (shape [${x.shape}])`);
  const be = x.backend;
  const out = Tensor.empty(
    perm.map((p) => x.shape[p]!),
    be,
  );
  const c = collapse(x.shape, perm);
  be.permute(x.buf, out.buf, c.shape, c.perm);
  const inv = perm.map((_, i) => perm.indexOf(i));
  return attach(out, 'permute', [x], (g) => [permute(g, inv)]);
}

/** Swap two dims. */
export function transpose(x: Tensor, dim0: number, dim1: number): Tensor {
  const a = normAxis(dim0, x.ndim, 'transpose'),
    b = normAxis(dim1, x.ndim, 'transpose');
  const perm = x.shape.map((_, i) => i);
  perm[a] = b;
  perm[b] = a;
  return permute(x, perm);
}

/** The elements [start, start + length) along `axis` (a copy). */
export function narrow(x: Tensor, axis: number, start: number, length: number): Tensor {
  const a = normAxis(axis, x.ndim, 'narrow');
  const [outer, len, inner] = splitAt(x.shape, a);
  if (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 0 || start + length > len)
    throw new ShapeError(
      `narrow: [${start}, ${start + length}) is outside axis ${axis} of length ${len} (shape [${x.shape}])`,
    );
  const be = x.backend;
  const out = Tensor.empty(
    x.shape.map((d, i) => (i === a ? length : d)),
    be,
  );
  be.copyBlock(x.buf, start * inner, len * inner, out.buf, 0, length * inner, outer, length * inner, false);
  return attach(out, 'narrow', [x], (g) => {
    const gx = Tensor.empty(x.shape, be);
    be.fill(gx.buf, 0);
    be.copyBlock(g.buf, 0, length * inner, gx.buf, start * inner, len * inner, outer, length * inner, false);
    return [gx];
  });
}

/** Elements [start, end) along `axis` (end defaults to the axis length; negative indexes count from the end). */
export function slice(x: Tensor, axis: number, start: number, end?: number): Tensor {
  const len = x.shape[normAxis(axis, x.ndim, 'slice')]!;
  const s = start < 0 ? start + len : start;
  const e = end === undefined ? len : end < 0 ? end + len : end;
  return narrow(x, axis, s, e - s);
}

/** Join tensors along `axis`; other dims must match. */
export function concat(xs: readonly Tensor[], axis: number): Tensor {
  if (xs.length === 0) throw new ShapeError('concat: needs at least one tensor');
  const first = xs[0]!;
  const a = normAxis(axis, first.ndim, 'concat');
  for (const t of xs)
    if (t.ndim !== first.ndim || t.shape.some((d, i) => i !== a && d !== first.shape[i]))
      throw new ShapeError(`concat: shapes [${first.shape}] and [${t.shape}] differ outside axis ${axis}`);
  const be = backendOf(...xs);
  const total = xs.reduce((n, t) => n + t.shape[a]!, 0);
  const shape = first.shape.map((d, i) => (i === a ? total : d));
  const out = Tensor.empty(shape, be);
  const [outer, , inner] = splitAt(shape, a);
  let at = 0;
  const starts: number[] = [];
  for (const t of xs) {
    const l = t.shape[a]!;
    starts.push(at);
    be.copyBlock(t.buf, 0, l * inner, out.buf, at * inner, total * inner, outer, l * inner, false);
    at += l;
  }
  return attach(out, 'concat', xs, (g) =>
    xs.map((t, i) => {
      if (!t.requiresGrad) return null;
      const l = t.shape[a]!;
      const gx = Tensor.empty(t.shape, be);
      be.copyBlock(g.buf, starts[i]! * inner, total * inner, gx.buf, 0, l * inner, outer, l * inner, false);
      return gx;
    }),
  );
}

/** In place, without autograd: dst[..., start:start+len, ...] = src along `axis` (for KV caches). */
export function assignSlice(dst: Tensor, src: Tensor, axis: number, start: number): void {
  const a = normAxis(axis, dst.ndim, 'assignSlice');
  const l = src.shape[a];
  if (
    src.ndim !== dst.ndim ||
    l === undefined ||
    src.shape.some((d, i) => i !== a && d !== dst.shape[i]) ||
    start < 0 ||
    start + l > dst.shape[a]!
  )
    throw new ShapeError(`assignSlice: cannot write [${src.shape}] into [${dst.shape}] at ${start} along axis ${axis}`);
  if (isGradEnabled() && dst.requiresGrad)
    throw new Error(
      'assignSlice: the destination requires grad; in-place writes are only for no-grad buffers such as KV caches',
    );
  const be = backendOf(dst, src);
  const [outer, len, inner] = splitAt(dst.shape, a);
  be.copyBlock(src.buf, 0, l * inner, dst.buf, start * inner, len * inner, outer, l * inner, false);
}
