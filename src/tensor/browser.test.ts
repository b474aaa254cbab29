// The browser entry instantiates the kernels from bytes with no Node API and computes correctly.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWasmBackend, getBackend, matmul, setBackend, softmax, tensor, useBackend } from './browser.js';
import { packageRoot } from './node-kernels.js';

describe('browser entry', () => {
  it('runs the single-memory WASM build created from bytes', async () => {
    const bytes = readFileSync(join(packageRoot(), 'build', 'kernels', 'ragen-single.wasm'));
    const prev = getBackend().name;
    const be = await createWasmBackend(bytes);
    useBackend(be);
    try {
      const a = tensor([1, 2, 3, 4, 5, 6], [2, 3]),
        b = tensor([1, 0, 0, 1, 1, 1], [3, 2]);
      expect(Array.from(matmul(a, b).toFloat32Array())).toEqual([4, 5, 10, 11]);
      const s = softmax(tensor([0, Math.log(3)], [1, 2])).toFloat32Array();
      expect(s[0]).toBeCloseTo(0.25, 6);
    } finally {
      setBackend(prev);
    }
  });
});
