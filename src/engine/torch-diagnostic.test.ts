// The torch engine's diagnostic passes (gradient analysis): a backward with `diagnostic: true` runs without LoRA
// dropout, so it draws nothing from the worker's RNG and the training passes after it see the same dropout masks.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sequenceBatch } from './batch.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';
import type { ForwardResult, OutputGradients } from './types.js';

const TINY = join(import.meta.dirname, '../../models/ragen-tiny');
const python = torchPythonForTests();
const batch = sequenceBatch([
  [3, 17, 42, 99, 7, 8],
  [5, 6, 7, 300, 12],
]);
const grads = (o: ForwardResult): OutputGradients => ({ logprobs: o.logprobs.map((_, i) => ((i % 5) - 2) / 10) });
const lora = { r: 4, alpha: 8, dropout: 0.5, targetModules: 'all-linear' as const };

const engines: TorchEngine[] = [];
afterAll(() => engines.forEach((e) => e.dispose()));
async function open(): Promise<TorchEngine> {
  const e = await TorchEngine.fromPretrained(TINY, { python: python!, lora, seed: 3, echoStderr: false });
  engines.push(e);
  return e;
}

describe.skipIf(!python)('torch engine diagnostic backward passes', () => {
  it('use no dropout, and leave the training passes after them as they would have been', async () => {
    const [a, b] = [await open(), await open()];
    // Fresh adapters have B = 0 (dropout then changes nothing): one identical AdamW step on both makes them non-zero.
    for (const e of [a, b]) {
      await e.backward(batch, { role: 'policy' }, grads);
      await e.optimizerStep('policy', { lr: 1e-2 });
    }
    // Dropout is live in training passes (two of them differ), absent in diagnostic ones (two of them agree).
    const t1 = await a.backward(batch, { role: 'policy' }, grads);
    const t2 = await a.backward(batch, { role: 'policy' }, grads);
    expect(Array.from(t1.logprobs)).not.toEqual(Array.from(t2.logprobs));
    const d1 = await b.backward(batch, { role: 'policy', diagnostic: true }, grads);
    const d2 = await b.backward(batch, { role: 'policy', diagnostic: true }, grads);
    expect(Array.from(d1.logprobs)).toEqual(Array.from(d2.logprobs));
    b.zeroGrad('policy');
    // After its diagnostic passes, b's first training pass draws a's first masks.
    const bTrain = await b.backward(batch, { role: 'policy' }, grads);
    expect(Array.from(bTrain.logprobs)).toEqual(Array.from(t1.logprobs));
  });
});
