// Suppressed tokens (a VLM's vision tokens) in the teacher-forced statistics: tokenStats' log-probs and entropy are
// the softmax over the other ids (worked out by hand here), a suppressed target scores 0, and the gradients equal
// central finite differences on the float64 reference, in one chunk and in several.
import { afterEach, describe, expect, it } from 'vitest';
import { add, finiteDifferenceCheck, getBackend, mul, setBackend, sum, tensor } from '../tensor/index.js';
import { Rng } from '../util/index.js';
import { tokenStats } from './token-stats.js';

const [N, C, V] = [6, 4, 9];
const off = Int32Array.from([2, 5]);
const targets = Int32Array.from([0, 2, 3, 5, 7, 8]); // two of them suppressed
const rng = new Rng(11);
const h = Float32Array.from({ length: N * C }, () => rng.normal());
const w = Float32Array.from({ length: V * C }, () => rng.normal());
const oneChunk = 1 << 20;
const twoRows = (3 * 4 * V * 2 * 5) / 3; // scratch for two rows of V logits with the suppressed copy

describe('tokenStats with suppressed ids', () => {
  const prev = getBackend().name;
  afterEach(() => setBackend(prev));

  it('scores the softmax over the other ids, and a suppressed target 0', () => {
    setBackend('js64');
    for (const chunkBytes of [oneChunk, twoRows]) {
      const r = tokenStats(
        tensor(h, [N, C]),
        tensor(w, [V, C]),
        targets,
        { logprobs: true, entropy: true },
        chunkBytes,
        off,
      );
      const lp = r.logprobs!.toFloat32Array();
      const ent = r.entropy!.toFloat32Array();
      for (let n = 0; n < N; n++) {
        const z: number[] = [];
        for (let v = 0; v < V; v++) {
          let d = 0;
          for (let c = 0; c < C; c++) d += h[n * C + c]! * w[v * C + c]!;
          z.push(d);
        }
        const kept = z.filter((_, v) => !off.includes(v));
        const m = Math.max(...kept);
        const lse = m + Math.log(kept.reduce((s, x) => s + Math.exp(x - m), 0));
        const t = targets[n]!;
        expect(lp[n]!).toBeCloseTo(off.includes(t) ? 0 : z[t]! - lse, 5);
        expect(ent[n]!).toBeCloseTo(-kept.reduce((s, x) => s + Math.exp(x - lse) * (x - lse), 0), 5);
      }
    }
  });

  it('has the gradient of its values (central finite differences)', () => {
    const gl = Float32Array.from({ length: N }, (_, i) => Math.sin(i + 1));
    const ge = Float32Array.from({ length: N }, (_, i) => Math.cos(i + 1));
    for (const chunkBytes of [oneChunk, twoRows]) {
      const r = finiteDifferenceCheck(
        ([hh, ww]) => {
          const s = tokenStats(hh!, ww!, targets, { logprobs: true, entropy: true }, chunkBytes, off);
          return add(sum(mul(s.logprobs!, tensor(gl))), sum(mul(s.entropy!, tensor(ge))));
        },
        [
          { shape: [N, C], data: h },
          { shape: [V, C], data: w },
        ],
      );
      expect(r.worst, r.detail).toBeLessThanOrEqual(1);
    }
  });
});
