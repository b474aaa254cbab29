// Full-vocabulary entropy of next-token distributions from logits, and its backward, for the entropy
// bonus and the entropy filter (veRL `entropy_from_logits`). A plain reference; engines fuse their own.
import { ShapeError } from '../util/errors.js';
import type { Nums } from './shape.js';

/**
 * H = −Σ_v p_v log p_v with p = softmax(z), for each of the n = logits.length / V rows (a row per
 * token). Computed stably as H = logsumexp(z) − Σ_v p_v z_v. Returns n entropies.
 */
export function entropyFromLogits(logits: Nums, V: number): Float64Array {
  if (!(V > 0) || logits.length % V !== 0) throw new ShapeError(`entropyFromLogits: ${logits.length} logits is not a whole number of rows of V = ${V}.`);
  const n = logits.length / V;
  const out = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    let m = -Infinity;
    for (let v = 0; v < V; v++) m = Math.max(m, logits[r * V + v]!);
    let z = 0;
    let s = 0;
    for (let v = 0; v < V; v++) {
      const e = Math.exp(logits[r * V + v]! - m);
      z += e;
      s += e * (logits[r * V + v]! - m);
    }
    out[r] = Math.log(z) - s / z;
  }
  return out;
}

/**
 * Backward of `entropyFromLogits`: given dL/dH per row, returns dL/dz = dL/dH · (−p_v (log p_v + H)).
 */
export function entropyFromLogitsBackward(logits: Nums, V: number, gradH: Nums): Float64Array {
  const H = entropyFromLogits(logits, V);
  if (gradH.length !== H.length) throw new ShapeError(`entropyFromLogitsBackward: gradH has ${gradH.length} entries for ${H.length} rows.`);
  const out = new Float64Array(logits.length);
  for (let r = 0; r < H.length; r++) {
    let m = -Infinity;
    for (let v = 0; v < V; v++) m = Math.max(m, logits[r * V + v]!);
    let z = 0;
    for (let v = 0; v < V; v++) z += Math.exp(logits[r * V + v]! - m);
    const logZ = Math.log(z) + m;
    for (let v = 0; v < V; v++) {
      const logp = logits[r * V + v]! - logZ;
      out[r * V + v] = gradH[r]! * -Math.exp(logp) * (logp + H[r]!);
    }
  }
  return out;
}
