// Data parallel in the torch worker: two gloo ranks on the same global batch give the outputs, gradients and weights
// of one rank (each rank takes half the rows; gradients are summed across ranks), and a rank that dies is reported.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../util/index.js';
import { sequenceBatch } from './batch.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';
import type { ForwardResult, OutputGradients } from './types.js';

const python = torchPythonForTests();
const TINY = join(import.meta.dirname, '../../models/ragen-tiny');

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const maxAbs = (a: ArrayLike<number>) => maxAbsDiff(a, new Float32Array(a.length));

function grads(out: ForwardResult): OutputGradients {
  const rng = new Rng(8);
  return { logprobs: out.logprobs.map(() => rng.random() - 0.5), values: out.values!.map(() => rng.random() - 0.5) };
}

describe.skipIf(!python)('TorchEngine with two data-parallel ranks (gloo)', () => {
  const engines: TorchEngine[] = [];
  const rng = new Rng(4);
  const batch = sequenceBatch(Array.from({ length: 5 }, (_, b) => Array.from({ length: 4 + 3 * b }, () => Math.floor(rng.random() * 1000))));
  beforeAll(async () => {
    for (const ranks of [1, 2]) engines.push(await TorchEngine.fromPretrained(TINY, { python: python!, ranks, device: 'cpu', critic: 'shared', lora: { r: 4, alpha: 8 }, echoStderr: false }));
  }, 90_000);
  afterAll(() => engines.forEach((e) => e.dispose()));

  it('equals one rank: outputs, gradients (1e-4 relative), the step and the weights after it, greedy samples', async () => {
    const [one, two] = engines as [TorchEngine, TorchEngine];
    expect(two.info.ranks).toBe(2);
    const [a, b] = [await one.forward(batch, { role: 'policy', entropy: true }), await two.forward(batch, { role: 'policy', entropy: true })];
    expect(maxAbsDiff(a.logprobs, b.logprobs)).toBeLessThan(1e-5);
    expect(maxAbsDiff(a.entropy!, b.entropy!)).toBeLessThan(1e-5);
    for (const e of [one, two]) await e.backward(batch, { role: 'policy', values: true }, grads);
    for (const role of ['policy', 'critic'] as const) {
      const [g1, g2] = [await one.tensors(role, 'grad'), await two.tensors(role, 'grad')];
      expect([...g2.keys()]).toEqual([...g1.keys()]);
      for (const [n, g] of g1) expect(maxAbsDiff(g2.get(n)!, g), n).toBeLessThanOrEqual(1e-4 * maxAbs(g) + 1e-8);
      expect(Math.max(...[...g1.values()].map(maxAbs))).toBeGreaterThan(0);
    }
    const settings = { lr: 1e-3, maxGradNorm: 1 };
    const [s1, s2] = [await one.optimizerStep('policy', settings), await two.optimizerStep('policy', settings)];
    expect(Math.abs(s1.gradNorm - s2.gradNorm)).toBeLessThan(1e-4 * s1.gradNorm);
    const [w1, w2] = [await one.tensors('policy'), await two.tensors('policy')];
    for (const [n, w] of w1) expect(maxAbsDiff(w2.get(n)!, w), n).toBeLessThan(0.25 * settings.lr); // see torch.test.ts on Adam
    const prompts = [[1, 2, 3], [40, 41], [7], [9, 10, 11, 12]];
    const greedy = { maxNewTokens: 6, temperature: 0, seed: 0 };
    expect((await two.generate(prompts, greedy)).map((g) => g.tokens)).toEqual((await one.generate(prompts, greedy)).map((g) => g.tokens));
  }, 60_000);

  it('reports a rank that dies, naming it', async () => {
    const e = await TorchEngine.fromPretrained(TINY, { python: python!, ranks: 2, device: 'cpu', echoStderr: false });
    const helper = (e as unknown as { worker: { helpers: { pid: number }[] } }).worker.helpers[0]!;
    process.kill(helper.pid, 'SIGKILL');
    await expect(e.forward(batch, { role: 'policy' })).rejects.toThrow(/rank 1 \(pid \d+\) was killed by signal SIGKILL/);
    e.dispose();
  }, 60_000);
});
