// Activation checkpointing (torch.utils.checkpoint's idea): run a segment without recording its graph, keep only its
// inputs, and run it again with the graph recorded when backward reaches it. Memory: the segment's outputs instead of
// every intermediate; compute: one more forward of the segment.

import { attach, backwardFrom, isGradEnabled, keep, noGrad, Tensor, tidy, withGrad } from './tensor.js';

/**
 * `fn(...inputs)` with its intermediates freed at once and recomputed in backward. `fn` must be a pure function of
 * its inputs and of `params` (the leaves it reads, e.g. weights): called twice, it must compute the same thing (reset
 * any randomness it draws, see `replay`). Gradients reach `inputs` through the returned tensors and accumulate into
 * the `.grad` of every leaf the recompute reads that needs one, as the plain graph's would. Outputs must be new
 * tensors (not an input). Without a graph to record (noGrad, or nothing needs a gradient): `fn(...inputs)`, its
 * intermediates freed as it returns.
 */
export function checkpoint(
  fn: (...inputs: Tensor[]) => Tensor[],
  inputs: readonly Tensor[],
  params: readonly Tensor[],
  replay?: () => void,
): Tensor[] {
  if (!isGradEnabled() || ![...inputs, ...params].some((t) => t.requiresGrad)) return tidy(() => fn(...inputs));
  const outs = tidy(() => noGrad(() => fn(...inputs)));
  for (const o of outs)
    if (inputs.includes(o)) throw new Error('checkpoint: a segment returned one of its inputs; return new tensors');
  // Each output's gradient is parked in `pending` by its own node; the anchor, which every output depends on and which
  // depends on the inputs and params, runs after all of them (topological order) and recomputes once.
  const pending: (Tensor | null)[] = outs.map(() => null);
  const anchor = Tensor.empty([1], outs[0]!.backend);
  attach(anchor, 'checkpoint', [...inputs, ...params], () => {
    replay?.();
    const grads = tidy(() =>
      withGrad(() => {
        const leaves = inputs.map((x) => {
          const d = x.detach();
          d.requiresGrad = x.requiresGrad;
          return d;
        });
        const again = fn(...leaves);
        const roots: Tensor[] = [];
        const seeds: Tensor[] = [];
        again.forEach((r, i) => {
          if (pending[i] && r.requiresGrad) {
            roots.push(r);
            seeds.push(pending[i]!);
          }
        });
        if (roots.length > 0) backwardFrom(roots, seeds);
        return leaves.map((l) => l.grad);
      }),
    );
    for (const g of pending) g?.dispose();
    pending.fill(null);
    return [...grads, ...params.map(() => null)];
  });
  anchor.backend.fill(anchor.buf, 0);
  return outs.map((o, i) =>
    attach(o, 'checkpoint-output', [anchor], (g) => {
      const copy = Tensor.empty(g.shape, g.backend);
      g.backend.copyBlock(g.buf, 0, 0, copy.buf, 0, 0, 1, g.size, false);
      pending[i] = keep(copy);
      const zero = Tensor.empty([1], g.backend);
      g.backend.fill(zero.buf, 0);
      return [zero];
    }),
  );
}
