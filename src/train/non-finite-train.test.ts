// Item 8 of issue 34 in training: a model whose logits are not finite (3e38 in a layernorm) stops the run at the
// rollout of the step, with an error naming the step and the model, before anything of that step is trained or saved.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import '../env/builtins.js';
import { NonFiniteLogitsError, readSafetensorsFile, writeSafetensors } from '../model/index.js';
import { microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-huge-train-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

it('item 8: training refuses non-finite logits, naming the step and the model, and saves nothing of that step', async () => {
  const model = await writeMicroModel(join(root, 'model'));
  const path = join(model, 'model.safetensors');
  const { weights, metadata } = await readSafetensorsFile(path);
  weights.get('model.layers.0.input_layernorm.weight')!.data.fill(3e38);
  await writeSafetensors(path, weights, metadata);
  const run = join(root, 'run');
  const err = await train({ config: microConfig(model, run, ['trainer.steps=2']) }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(NonFiniteLogitsError);
  expect((err as Error).message).toMatch(new RegExp(`^step 1 failed: Model \`${model}\` computed non-finite logits .* at decode step \\d+ .*Nothing of step 1 was saved`));
  expect((err as Error).message.split('\n')).toHaveLength(1);
  expect(existsSync(join(run, 'checkpoints', 'step-1'))).toBe(false);
  if (existsSync(join(run, 'metrics.jsonl'))) expect(readFileSync(join(run, 'metrics.jsonl'), 'utf8')).not.toMatch(/"step":\s*1\b/);
});
