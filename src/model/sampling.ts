// Picking the next token from one row of probabilities: greedy, top-k, top-p (nucleus), seeded.
// Temperature is applied before (softmax of logits / T, in a kernel); this follows Hugging Face's warper
// order (temperature, then top-k, then top-p over the remaining mass).
import type { Rng } from '../util/index.js';

/** Filters applied to a row of (tempered) probabilities. */
export interface SamplerSettings {
  /** Nucleus mass in (0, 1]; 1 = off. */
  topP: number;
  /** Keep the k most likely tokens; 0 = off. */
  topK: number;
}

/** Index of the largest value of `row[off, off + n)` (the first one on ties). */
export function argmax(row: Float32Array, off: number, n: number): number {
  let best = -Infinity;
  let arg = 0;
  for (let i = 0; i < n; i++) {
    const z = row[off + i]!;
    if (z > best) {
      best = z;
      arg = i;
    }
  }
  return arg;
}

/** Draws tokens from probability rows, with scratch space reused across rows (no allocation per token). */
export class Sampler {
  private cand: Float32Array;

  constructor(readonly vocabSize: number) {
    this.cand = new Float32Array(vocabSize);
  }

  /**
   * Sample a token from `probs[off, off + V)` after top-k / top-p filtering. `normalized` rows (a softmax)
   * skip the pass that sums the mass when nothing is filtered; others need not sum to 1.
   */
  pick(probs: Float32Array, off: number, s: SamplerSettings, rng: Rng, normalized = false): number {
    const V = this.vocabSize;
    const p = probs.subarray(off, off + V);
    let threshold = 0; // tokens below it are excluded
    if (s.topK > 0 && s.topK < V) threshold = this.kthLargest(p, s.topK);
    let mass = 0;
    if (normalized && threshold === 0 && s.topP >= 1) mass = 1;
    else for (let i = 0; i < V; i++) if (p[i]! >= threshold) mass += p[i]!;
    if (s.topP < 1) {
      threshold = Math.max(threshold, this.nucleusThreshold(p, threshold, mass, s.topP * mass));
      mass = 0;
      for (let i = 0; i < V; i++) if (p[i]! >= threshold) mass += p[i]!;
    }
    let u = rng.random() * mass;
    let last = -1;
    for (let i = 0; i < V; i++) {
      if (p[i]! < threshold || p[i] === 0) continue;
      last = i;
      u -= p[i]!;
      if (u < 0) return i;
    }
    return last >= 0 ? last : argmax(p, 0, V); // rounding left u >= 0: the last eligible token
  }

  /** The k-th largest value of p. */
  private kthLargest(p: Float32Array, k: number): number {
    const c = this.cand.subarray(0, p.length);
    c.set(p);
    c.sort();
    return c[p.length - k]!;
  }

  /**
   * The smallest probability in the nucleus: sorting descending among tokens >= `floor`, the first
   * prefix whose mass reaches `target`. Tokens below (kept - target) / V together hold less than
   * kept - target, so they cannot be in it and the sort runs over a short candidate list.
   */
  private nucleusThreshold(p: Float32Array, floor: number, kept: number, target: number): number {
    const tau = Math.max(floor, (kept - target) / p.length);
    let n = 0;
    for (let i = 0; i < p.length; i++) if (p[i]! >= tau) this.cand[n++] = p[i]!;
    const c = this.cand.subarray(0, n).sort();
    let acc = 0;
    for (let j = n - 1; j >= 0; j--) {
      acc += c[j]!;
      if (acc >= target) return c[j]!;
    }
    return c[0] ?? floor;
  }
}
