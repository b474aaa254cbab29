// Every op's gradient against central finite differences (float64 reference backend), and every
// available backend's values and gradients against that reference.
import { describe, expect, it } from 'vitest';
import { testBackend } from './testing.js';
import { compareWithReference, finiteDifferenceCheck } from './grad-check.js';
import { OP_CASES } from './op-cases.js';

describe('gradients match finite differences (js64)', () => {
  for (const c of OP_CASES) {
    it(c.name, () => {
      const r = finiteDifferenceCheck(c.fn, c.inputs);
      expect(r.worst, r.detail).toBeLessThanOrEqual(1);
    });
  }
});

for (const backend of ['wasm', 'native'] as const) {
  describe.runIf(testBackend(backend))(`gradients match float32 finite differences (${backend})`, () => {
    for (const c of OP_CASES) {
      it(c.name, () => {
        const r = finiteDifferenceCheck(c.fn, c.inputs, { backend, eps: 1e-2, atol: 3e-3, rtol: 3e-2, maxPerInput: 6 });
        expect(r.worst, r.detail).toBeLessThanOrEqual(1);
      });
    }
  });
}

for (const backend of ['js', 'wasm', 'native'] as const) {
  describe.runIf(testBackend(backend))(`${backend} backend matches the float64 reference`, () => {
    for (const c of OP_CASES) {
      it(c.name, () => {
        const r = compareWithReference(backend, c.fn, c.inputs);
        expect(r.outErr).toBeLessThan(2e-5);
        expect(r.gradErr).toBeLessThan(2e-5);
      });
    }
  });
}
