// Gradient checking: central finite differences on the float64 reference backend, and agreement of any
// backend's forward values and gradients with that reference. Used by the tests of src/tensor and src/model.

import { Rng } from '../util/index.js';
import type { BackendName } from './backend.js';
import { getBackend, setBackend } from './backends.js';
import { tensor } from './creation.js';
import { mul, sum } from './ops.js';
import { Tensor, noGrad, tidy } from './tensor.js';

/** An input of a checked function: its shape and values (random when omitted). */
export interface CheckInput {
  shape: number[];
  data?: Float32Array | number[];
  /** Check this input's gradient. @default true */
  grad?: boolean;
}

export interface GradCheckResult {
  /** Largest |analytic - numeric| / (atol + rtol * |numeric|); <= 1 passes. */
  worst: number;
  detail: string;
}

function makeData(inputs: readonly CheckInput[], seed: number): Float64Array[] {
  const rng = new Rng(seed);
  return inputs.map((inp) => {
    const n = inp.shape.reduce((p, d) => p * d, 1);
    if (inp.data) return Float64Array.from(inp.data);
    return Float64Array.from({ length: n }, () => rng.normal());
  });
}

/** Runs fn on leaves made from data on the current backend; returns the weighted-sum loss, value and grads. */
function evaluate(
  fn: (xs: Tensor[]) => Tensor,
  inputs: readonly CheckInput[],
  data: readonly Float64Array[],
  withGrad: boolean,
) {
  return tidy(() => {
    const xs = inputs.map((inp, i) => tensor(data[i]!, inp.shape, { requiresGrad: withGrad && (inp.grad ?? true) }));
    const out = fn(xs);
    const w = new Rng(12345);
    const weights = tensor(
      Float64Array.from({ length: out.size }, () => w.normal()),
      out.shape,
    );
    const loss = sum(mul(out, weights));
    // js64 keeps float64 values: read them directly, as finite differences need the precision
    const value = loss.buf instanceof Float64Array ? loss.buf[0]! : loss.item();
    const outData = out.toFloat32Array();
    let grads: (Float32Array | null)[] = [];
    if (withGrad) {
      loss.backward();
      grads = xs.map((x) => x.grad?.toFloat32Array() ?? null);
      for (const x of xs) x.grad?.dispose();
    }
    return { value, outData, grads };
  });
}

/**
 * Central finite differences; checks up to `maxPerInput` entries per input. On the float64 reference
 * (`js64`, the default) the tolerances can be tight; on a float32 backend pass a larger eps and tolerances.
 */
export function finiteDifferenceCheck(
  fn: (xs: Tensor[]) => Tensor,
  inputs: readonly CheckInput[],
  opts: { seed?: number; eps?: number; atol?: number; rtol?: number; maxPerInput?: number; backend?: BackendName } = {},
): GradCheckResult {
  const prev = getBackend();
  setBackend(opts.backend ?? 'js64');
  try {
    const { eps = 1e-6, atol = 1e-6, rtol = 1e-5, maxPerInput = 24, seed = 1 } = opts;
    const data = makeData(inputs, seed);
    const { grads } = evaluate(fn, inputs, data, true);
    let worst = 0,
      detail = 'ok';
    const pick = new Rng(seed + 7);
    inputs.forEach((inp, i) => {
      if (inp.grad === false) return;
      const d = data[i]!;
      const idx =
        d.length <= maxPerInput ? [...d.keys()] : Array.from({ length: maxPerInput }, () => pick.int(d.length));
      for (const j of idx) {
        const orig = d[j]!;
        d[j] = orig + eps;
        const plus = noGrad(() => evaluate(fn, inputs, data, false).value);
        d[j] = orig - eps;
        const minus = noGrad(() => evaluate(fn, inputs, data, false).value);
        d[j] = orig;
        const numeric = (plus - minus) / (2 * eps);
        const analytic = grads[i]?.[j] ?? 0;
        const err = Math.abs(analytic - numeric) / (atol + rtol * Math.abs(numeric));
        if (err > worst) {
          worst = err;
          detail = `input ${i} [${j}]: analytic ${analytic}, numeric ${numeric}`;
        }
      }
    });
    return { worst, detail };
  } finally {
    setBackend(prev.name);
  }
}

/** Forward values and gradients on `backend` vs the js64 reference; error relative to each array's max magnitude. */
export function compareWithReference(
  backend: BackendName,
  fn: (xs: Tensor[]) => Tensor,
  inputs: readonly CheckInput[],
  seed = 1,
): { outErr: number; gradErr: number } {
  const prev = getBackend();
  try {
    const data = makeData(inputs, seed);
    setBackend('js64');
    const ref = evaluate(fn, inputs, data, true);
    setBackend(backend);
    const got = evaluate(fn, inputs, data, true);
    const rel = (a: Float32Array | null, b: Float32Array | null): number => {
      if (!a || !b) return a === b ? 0 : Infinity;
      let mx = 0,
        err = 0;
      for (let i = 0; i < a.length; i++) mx = Math.max(mx, Math.abs(a[i]!));
      for (let i = 0; i < a.length; i++) err = Math.max(err, Math.abs(a[i]! - b[i]!));
      return err / Math.max(mx, 1e-6);
    };
    const gradErr = Math.max(
      0,
      ...ref.grads.map((g, i) => (inputs[i]!.grad === false ? 0 : rel(g, got.grads[i] ?? null))),
    );
    return { outErr: rel(ref.outData, got.outData), gradErr };
  } finally {
    setBackend(prev.name);
  }
}
