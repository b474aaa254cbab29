import { beforeAll, describe, expect, it } from 'vitest';
import {
  LoraAdapters,
  modelConfig,
  packedGradient,
  packTokens,
  tokenAligned,
  Transformer,
  ValueHead,
  type ModelConfig,
} from '../model/index.js';
import { setBackend } from '../tensor/index.js';
import { sequenceBatch } from './batch.js';
import { LocalEngine } from './local.js';
import type { ForwardResult, OutputGradients } from './types.js';

const shape = { vocabSize: 40, hiddenSize: 32, intermediateSize: 48, numLayers: 2, numHeads: 4, numKvHeads: 2 };
const prefix = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];
// One sequence is the bare prefix (no suffix row tokens), one differs right after it, lengths vary.
const seqs = sequenceBatch([
  [...prefix],
  [...prefix, 7, 8, 9, 10, 11, 12],
  [...prefix, 7, 2],
  [...prefix, 20, 21, 22, 23],
]);

function engines(cfg: ModelConfig, lora: boolean): [LocalEngine, LocalEngine] {
  const make = (sharedPrefixMin: number) => {
    const policy = Transformer.init(cfg, 5, 0.2);
    if (lora) LoraAdapters.attach(policy, { r: 4, alpha: 8, dropout: 0, targetModules: 'all-linear' }, 6);
    return new LocalEngine({
      policy,
      critic: { mode: 'shared', valueHead: ValueHead.init(cfg.hiddenSize, 7, 0.3) },
      sharedPrefixMin,
    });
  };
  return [make(0), make(4)];
}

/** A loss touching every output: per-token weights that differ by sequence and position (prefix ones included). */
function lossGrad(out: ForwardResult): OutputGradients {
  const w = (x: Float32Array) => x.map((_, i) => Math.sin(1 + Math.floor(i / seqs.T) * 7 + (i % seqs.T)) / 10);
  return { logprobs: w(out.logprobs), entropy: w(out.entropy!), values: w(out.values!) };
}

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number) => {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThan(tol * (1 + Math.abs(b[i]!)));
};

describe('shared-prefix batches', () => {
  beforeAll(() => setBackend('js'));

  it('split off the common prefix minus one token (its targets are shared), or nothing when it is short', () => {
    const b = packTokens(seqs, 4);
    expect(Array.from(b.prefix.ids)).toEqual(prefix.slice(0, 9));
    expect(Array.from(b.prefix.targets)).toEqual(prefix.slice(1, 10));
    expect(b.T).toBe(6);
    expect(Array.from(b.ids.subarray(6, 12))).toEqual([3, 7, 8, 9, 10, 11]);
    expect(packTokens(seqs, 10).prefix.ids.length).toBe(0);
    expect(packTokens(sequenceBatch([[...prefix, 7, 2]]), 4).prefix.ids.length).toBe(0);
  });

  it('token-aligned outputs: entry (b, t) comes from input position t − 1; the gradient layout is its exact adjoint', () => {
    for (const min of [0, 4]) {
      const p = packTokens(seqs, min);
      const P = p.prefix.ids.length;
      expect(P).toBe(min === 0 ? 0 : 9);
      // Outputs that name their input position: row b, position j -> 100 b + j (prefix positions: 1000 + j).
      const rows = Float32Array.from({ length: p.B * p.T }, (_, i) => 100 * Math.floor(i / p.T) + (i % p.T) + P);
      const pre = Float32Array.from({ length: P }, (_, j) => 1000 + j);
      const out = tokenAligned(p, rows, pre, new Float32Array(seqs.B * seqs.T), seqs.T);
      for (let b = 0; b < seqs.B; b++) {
        for (let t = 0; t < seqs.T; t++) {
          const want = t === 0 || t >= seqs.lengths[b]! ? 0 : t - 1 < P ? 1000 + t - 1 : 100 * b + t - 1;
          expect(out[b * seqs.T + t], `(${b}, ${t})`).toBe(want);
        }
      }
      // <tokenAligned(x), g> = <x, packedGradient(g)> for any x and g: backward is the transpose of forward.
      const g = Float32Array.from({ length: seqs.B * seqs.T }, (_, i) => Math.cos(i));
      const pg = packedGradient(p, g, seqs.T);
      const lhs = out.reduce((a, x, i) => a + x * g[i]!, 0);
      const rhs = rows.reduce((a, x, i) => a + x * pg.rows[i]!, 0) + pre.reduce((a, x, j) => a + x * pg.prefix[j]!, 0);
      expect(rhs).toBeCloseTo(lhs, 2);
    }
  });

  for (const [name, cfg, lora] of [
    ['qwen2 GQA', modelConfig(shape), false],
    ['qwen3 q/k norm + LoRA', modelConfig({ ...shape, modelType: 'qwen3', headDim: 16 }), true],
    ['llama with biases', modelConfig({ ...shape, modelType: 'llama', qkvBias: true, oBias: true }), false],
  ] as const) {
    it(`${name}: forward outputs and backward gradients equal the padded batch's`, async () => {
      const [plain, shared] = engines(cfg, lora);
      for (const role of ['policy', 'critic'] as const) {
        const a = await plain.forward(seqs, { role, entropy: role === 'policy' });
        const b = await shared.forward(seqs, { role, entropy: role === 'policy' });
        close(b.logprobs, a.logprobs, 1e-5);
        if (a.entropy) close(b.entropy!, a.entropy, 1e-5);
        if (a.values) close(b.values!, a.values, 1e-5);
      }
      expect(shared.tokenStats.forwardPadded).toBeLessThan(plain.tokenStats.forwardPadded);
      await plain.backward(seqs, { role: 'policy', entropy: true, values: true }, lossGrad);
      await shared.backward(seqs, { role: 'policy', entropy: true, values: true }, lossGrad);
      expect(plain.parameters('policy').some(([, t]) => t.grad!.toFloat32Array().some((x) => x !== 0))).toBe(true);
      const pa = [...plain.parameters('policy'), ...plain.parameters('critic')];
      const pb = [...shared.parameters('policy'), ...shared.parameters('critic')];
      pa.forEach(([n, t], i) => {
        expect(pb[i]![0]).toBe(n);
        const ga = t.grad!.toFloat32Array();
        const scale = Math.max(...ga.map(Math.abs)) || 1; // LoRA A starts with a zero gradient (B = 0)
        close(
          pb[i]![1].grad!.toFloat32Array().map((x) => x / scale),
          ga.map((x) => x / scale),
          1e-4,
        );
      });
      plain.dispose();
      shared.dispose();
    });
  }
});
