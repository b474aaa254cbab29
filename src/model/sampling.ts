// Token sampling from one row of logits: greedy, temperature, top-k, top-p (nucleus), seeded.
// Follows Hugging Face's logits warpers (temperature, then top-k, then top-p over the remaining mass).
import type { Rng } from '../util/index.js';

/** How to pick the next token from a row of logits. */
export interface SamplerSettings {
  /** 0 = greedy (argmax). */
  temperature: number;
  /** Nucleus mass in (0, 1]; 1 = off. */
  topP: number;
  /** Keep the k largest logits; 0 = off. */
  topK: number;
}

/** Scratch buffers reused across rows (no allocation per token). */
export class Sampler {
  private probs: Float32Array;
  private cand: Float32Array;

  constructor(readonly vocabSize: number) {
    this.probs = new Float32Array(vocabSize);
    this.cand = new Float32Array(vocabSize);
  }

  /**
   * Pick a token from `logits[off, off + V)` and return it with its log-prob under the untempered
   * distribution (log-softmax at temperature 1), which is what a teacher-forced forward pass computes.
   */
  sample(logits: Float32Array, off: number, s: SamplerSettings, rng: Rng): { token: number; logprob: number } {
    const V = this.vocabSize;
    let max = -Infinity;
    let arg = 0;
    for (let i = 0; i < V; i++) {
      const z = logits[off + i]!;
      if (z > max) {
        max = z;
        arg = i;
      }
    }
    let sum1 = 0;
    for (let i = 0; i < V; i++) sum1 += Math.exp(logits[off + i]! - max);
    const lse = max + Math.log(sum1);
    if (s.temperature === 0) return { token: arg, logprob: logits[off + arg]! - lse };

    const p = this.probs;
    const invT = 1 / s.temperature;
    for (let i = 0; i < V; i++) p[i] = Math.exp((logits[off + i]! - max) * invT);
    // Threshold below which tokens are excluded (0 = keep all).
    let threshold = 0;
    if (s.topK > 0 && s.topK < V) threshold = this.kthLargest(p, s.topK);
    if (s.topP < 1) {
      let kept = 0;
      for (let i = 0; i < V; i++) if (p[i]! >= threshold) kept += p[i]!;
      threshold = Math.max(threshold, this.nucleusThreshold(p, threshold, kept, s.topP * kept));
    }
    let mass = 0;
    for (let i = 0; i < V; i++) if (p[i]! >= threshold) mass += p[i]!;
    let u = rng.random() * mass;
    let token = arg;
    for (let i = 0; i < V; i++) {
      if (p[i]! < threshold) continue;
      u -= p[i]!;
      if (u < 0) {
        token = i;
        break;
      }
    }
    return { token, logprob: logits[off + token]! - lse };
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
   * prefix whose mass reaches `target`. Only tokens above (kept - target) / V can be in it, so the sort is
   * over a short candidate list.
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
