// The Tensor: a shaped float32 view of backend storage, with reverse-mode autograd (a tape of GradNodes),
// inference mode (`noGrad`) and explicit lifetimes (`tidy`, `keep`, `dispose`), in PyTorch's vocabulary.

import { ShapeError } from '../util/index.js';
import type { Backend, Buf } from './backend.js';
import { getBackend, setLiveCounter } from './backends.js';

/** Backend storage shared by a tensor and its reshapes / detached copies. */
class Storage {
  refs = 1;
  constructor(
    readonly backend: Backend,
    readonly buf: Buf,
  ) {}
}

/** How a tensor was computed: its inputs and the map from its gradient to theirs. */
export interface GradNode {
  readonly name: string;
  readonly inputs: readonly Tensor[];
  /** Gradients w.r.t. each input (null where not needed; may be g itself); runs in no-grad mode. */
  backward(g: Tensor): (Tensor | null)[];
  /** Tensors saved only for backward, disposed once backward has run. */
  readonly saved?: readonly Tensor[];
}

// Arena backends free storage that was never disposed once its tensors are garbage collected.
const finalizer = new FinalizationRegistry<{ backend: Backend; buf: Buf }>(({ backend, buf }) => backend.free(buf));

let gradEnabled = true;
const scopes: Set<Tensor>[] = [];
let liveCount = 0;

export class Tensor {
  readonly shape: number[];
  readonly size: number;
  /** Set on leaves you optimise; results of ops on them get it too (unless in `noGrad`). */
  requiresGrad: boolean;
  /** Accumulated gradient after `backward()` (a leaf's own tensor, not tracked by `tidy`). */
  grad: Tensor | null = null;
  /** @internal the autograd record of an op result. */
  node: GradNode | null = null;
  private storage: Storage | null;

  /** @internal use the creation functions (`tensor`, `zeros`, ...) instead. */
  constructor(storage: Storage, shape: readonly number[], requiresGrad = false) {
    this.storage = storage;
    this.shape = [...shape];
    this.size = shapeSize(shape);
    this.requiresGrad = requiresGrad;
    liveCount++;
    scopes[scopes.length - 1]?.add(this);
  }

  /** @internal a fresh tensor with unspecified contents on the current backend. */
  static empty(shape: readonly number[], backend: Backend = getBackend()): Tensor {
    const n = shapeSize(shape);
    const storage = new Storage(backend, backend.alloc(n));
    if (!backend.name.startsWith('js')) finalizer.register(storage, { backend, buf: storage.buf }, storage);
    return new Tensor(storage, shape);
  }

  /** @internal the backend buffer (throws after dispose). */
  get buf(): Buf {
    if (!this.storage) throw new Error(`Tensor(${this.shape}) was disposed and cannot be used`);
    return this.storage.buf;
  }
  get backend(): Backend {
    if (!this.storage) throw new Error(`Tensor(${this.shape}) was disposed and cannot be used`);
    return this.storage.backend;
  }
  get isDisposed(): boolean {
    return this.storage === null;
  }
  get ndim(): number {
    return this.shape.length;
  }

  /** A copy of the data (an explicit read-out from the backend). */
  toFloat32Array(): Float32Array {
    return this.backend.read(this.buf, 0, this.size);
  }
  /** The value of a one-element tensor. */
  item(): number {
    if (this.size !== 1) throw new ShapeError(`item() needs a tensor with one element, got shape [${this.shape}]`);
    return this.backend.read(this.buf, 0, 1)[0]!;
  }
  /** A tensor sharing this one's storage, cut from the graph. */
  detach(): Tensor {
    return this.view(this.shape, false);
  }
  /** Same data, new shape (one dim may be -1). Shares storage; differentiable. */
  reshape(...shape: number[] | [readonly number[]]): Tensor {
    const dims: readonly number[] = Array.isArray(shape[0]) ? (shape[0] as readonly number[]) : (shape as number[]);
    const target = inferShape(dims, this.size, this.shape);
    const out = this.view(target, false);
    return attach(out, 'reshape', [this], (g) => [g.reshape(this.shape)]);
  }
  /** The first `n` entries along dim 0: a contiguous prefix sharing this tensor's storage, cut from the graph. */
  narrowRows(n: number): Tensor {
    if (!(this.ndim > 0 && Number.isInteger(n) && n >= 0 && n <= this.shape[0]!))
      throw new ShapeError(`narrowRows(${n}) of a tensor of shape [${this.shape}] needs 0 <= n <= ${this.shape[0]}`);
    return this.view([n, ...this.shape.slice(1)], false);
  }
  /** Free the storage now (shared storage is freed when its last tensor goes). Idempotent. */
  dispose(): void {
    if (!this.storage) return;
    const s = this.storage;
    this.storage = null;
    liveCount--;
    if (--s.refs === 0) {
      finalizer.unregister(s);
      s.backend.free(s.buf);
    }
  }

  /** Backpropagate from this tensor. The seed `gradOutput` may be omitted only for one-element tensors. */
  backward(gradOutput?: Tensor): void {
    runBackward(this, gradOutput);
  }

  toString(): string {
    return `Tensor(shape=[${this.shape}], backend=${this.storage?.backend.name ?? 'disposed'})`;
  }

  private view(shape: readonly number[], requiresGrad: boolean): Tensor {
    const s = this.storage;
    if (!s) throw new Error(`Tensor(${this.shape}) was disposed and cannot be used`);
    s.refs++;
    return new Tensor(s, shape, requiresGrad);
  }
}

/** Number of elements of a shape. */
export function shapeSize(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0)
      throw new ShapeError(`invalid shape [${shape}]: dims must be non-negative integers`);
    n *= d;
  }
  return n;
}

function inferShape(dims: readonly number[], size: number, from: readonly number[]): number[] {
  const neg = dims.filter((d) => d === -1).length;
  if (neg > 1) throw new ShapeError(`reshape: at most one -1 allowed, got [${dims}]`);
  const known = dims.reduce((p, d) => (d === -1 ? p : p * d), 1);
  const out = dims.map((d) => (d === -1 ? size / known : d));
  if (out.some((d) => !Number.isInteger(d) || d < 0) || shapeSize(out) !== size)
    throw new ShapeError(`reshape: cannot view shape [${from}] (${size} elements) as [${dims}]`);
  return out;
}

/** @internal mark `out` as computed from `inputs`, recording a GradNode when any input needs a gradient. */
export function attach(
  out: Tensor,
  name: string,
  inputs: readonly Tensor[],
  backward: (g: Tensor) => (Tensor | null)[],
  saved?: Tensor[],
): Tensor {
  if (gradEnabled && inputs.some((t) => t.requiresGrad)) {
    out.requiresGrad = true;
    out.node = saved ? { name, inputs, backward, saved } : { name, inputs, backward };
  } else if (saved) {
    for (const t of saved) t.dispose();
  }
  return out;
}

/** Whether ops record the graph now (false inside `noGrad`). */
export function isGradEnabled(): boolean {
  return gradEnabled;
}

/** Run fn without recording the graph (inference mode). */
export function noGrad<T>(fn: () => T): T {
  const prev = gradEnabled;
  gradEnabled = false;
  try {
    return fn();
  } finally {
    gradEnabled = prev;
  }
}

/**
 * Run fn and dispose every tensor it created, except those it returns (a tensor, or an array / object
 * of tensors, one level deep), those passed to `keep`, and leaf gradients. Nests.
 */
export function tidy<T>(fn: () => T): T {
  const scope = new Set<Tensor>();
  scopes.push(scope);
  let result: T;
  try {
    result = fn();
  } finally {
    scopes.pop();
  }
  const kept = new Set<Tensor>();
  collectTensors(result, kept);
  const parent = scopes[scopes.length - 1];
  for (const t of scope) {
    if (kept.has(t)) parent?.add(t);
    else t.dispose();
  }
  return result;
}

function collectTensors(x: unknown, into: Set<Tensor>): void {
  if (x instanceof Tensor) {
    into.add(x);
  } else if (Array.isArray(x)) {
    for (const v of x) if (v instanceof Tensor) into.add(v);
  } else if (x && typeof x === 'object') {
    for (const v of Object.values(x)) if (v instanceof Tensor) into.add(v);
  }
}

/** Exempt tensors from every enclosing `tidy` (they live until disposed). Returns its argument. */
export function keep<T extends Tensor | Tensor[]>(t: T): T {
  for (const x of Array.isArray(t) ? t : [t]) for (const s of scopes) s.delete(x);
  return t;
}

/** Tensors created and not yet disposed (a leak check). */
export function liveTensors(): number {
  return liveCount;
}
setLiveCounter(liveTensors);

function runBackward(root: Tensor, gradOutput?: Tensor): void {
  if (!root.requiresGrad)
    throw new Error(
      'backward(): this tensor does not require grad (no input had requiresGrad, or it was made in noGrad)',
    );
  if (!gradOutput && root.size !== 1)
    throw new ShapeError(`backward(): a seed gradient is required for a non-scalar tensor of shape [${root.shape}]`);
  if (gradOutput && gradOutput.size !== root.size)
    throw new ShapeError(`backward(): seed gradient shape [${gradOutput.shape}] does not match [${root.shape}]`);
  noGrad(() => {
    const seed = Tensor.empty(root.shape, root.backend);
    if (gradOutput) root.backend.copyBlock(gradOutput.buf, 0, 0, seed.buf, 0, 0, 1, root.size, false);
    else root.backend.fill(seed.buf, 1);
    backpropagate([root], [seed]);
  });
}

/**
 * @internal backpropagate from several outputs at once, each with its seed gradient (same size; copied, not
 * consumed): the graph is walked once, so a part two outputs share runs its backward once (activation checkpointing).
 */
export function backwardFrom(roots: readonly Tensor[], seeds: readonly Tensor[]): void {
  if (roots.length !== seeds.length)
    throw new RangeError(`backwardFrom: ${roots.length} outputs but ${seeds.length} seed gradients`);
  roots.forEach((r, i) => {
    if (!r.requiresGrad) throw new Error(`backwardFrom: output ${i} (shape [${r.shape}]) does not require grad`);
    if (seeds[i]!.size !== r.size)
      throw new ShapeError(
        `backwardFrom: seed ${i} has shape [${seeds[i]!.shape}] for an output of shape [${r.shape}]`,
      );
  });
  noGrad(() => {
    const own = new Map<Tensor, Tensor>();
    roots.forEach((r, i) => {
      const prev = own.get(r);
      if (prev) r.backend.axpy(1, seeds[i]!.buf, prev.buf, r.size);
      else own.set(r, cloneOf(seeds[i]!));
    });
    backpropagate([...own.keys()], [...own.values()]);
  });
}

/** @internal run fn with the graph recorded, even inside `noGrad` (the recompute of a checkpointed segment). */
export function withGrad<T>(fn: () => T): T {
  const prev = gradEnabled;
  gradEnabled = true;
  try {
    return fn();
  } finally {
    gradEnabled = prev;
  }
}

/** Reverse-mode sweep from `roots` with their seed gradients (owned: disposed or handed on); in noGrad. */
function backpropagate(roots: readonly Tensor[], seeds: readonly Tensor[]): void {
  // Topological order by iterative DFS.
  const order: Tensor[] = [];
  const seen = new Set<Tensor>();
  for (const root of roots) {
    if (seen.has(root)) continue;
    const stack: [Tensor, number][] = [[root, 0]];
    seen.add(root);
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      const inputs = top[0].node?.inputs ?? [];
      if (top[1] < inputs.length) {
        const next = inputs[top[1]++]!;
        if (next.requiresGrad && !seen.has(next)) {
          seen.add(next);
          stack.push([next, 0]);
        }
      } else {
        order.push(top[0]);
        stack.pop();
      }
    }
  }
  const grads = new Map<Tensor, Tensor>();
  roots.forEach((r, i) => grads.set(r, seeds[i]!));
  for (let i = order.length - 1; i >= 0; i--) {
    const t = order[i]!;
    const g = grads.get(t);
    if (!g) continue;
    grads.delete(t);
    const node = t.node;
    if (!node) {
      accumulateLeafGrad(t, g);
      continue;
    }
    const gs = node.backward(g);
    // a backward may pass g itself through (add, sub); hand each tensor out once
    const handed = new Set<Tensor>();
    node.inputs.forEach((inp, j) => {
      let gi = gs[j];
      if (!gi) return;
      if (handed.has(gi)) gi = cloneOf(gi);
      handed.add(gi);
      if (!inp.requiresGrad) return gi.dispose();
      const prev = grads.get(inp);
      if (!prev) {
        if (sameShape(gi, inp.shape)) grads.set(inp, gi);
        else {
          grads.set(inp, gi.reshape(inp.shape));
          gi.dispose();
        }
      } else {
        inp.backend.axpy(1, gi.buf, prev.buf, prev.size);
        gi.dispose();
      }
    });
    if (!handed.has(g)) g.dispose();
    for (const s of node.saved ?? []) s.dispose();
    t.node = null;
  }
}

function cloneOf(t: Tensor): Tensor {
  const out = Tensor.empty(t.shape, t.backend);
  t.backend.copyBlock(t.buf, 0, 0, out.buf, 0, 0, 1, t.size, false);
  return out;
}

function accumulateLeafGrad(t: Tensor, g: Tensor): void {
  keep(g);
  if (!t.grad) {
    t.grad = sameShape(g, t.shape) ? g : reshapeKeep(g, t.shape);
  } else {
    t.backend.axpy(1, g.buf, t.grad.buf, t.size);
    g.dispose();
  }
}

function sameShape(t: Tensor, shape: readonly number[]): boolean {
  return t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]);
}

function reshapeKeep(g: Tensor, shape: readonly number[]): Tensor {
  const r = keep(noGrad(() => g.reshape(shape)));
  g.dispose();
  return r;
}
