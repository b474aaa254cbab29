// Item 8 of issue 34 in training: a model whose logits are not finite (3e38 in a layernorm) stops the run at the
// rollout of the step, with an error naming the step and the model, before anything of that step is trained or saved.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import '../envs/index.js';
import { NonFiniteLogitsError, readSafetensorsFile, writeSafetensors } from '../model/index.js';
import { microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-huge-train-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A micro model whose first layernorm holds 3e38: every forward overflows to non-finite logits. */
async function hugeModel(name: string): Promise<string> {
  const model = await writeMicroModel(join(root, name));
  const path = join(model, 'model.safetensors');
  const { weights, metadata } = await readSafetensorsFile(path);
  weights.get('model.layers.0.input_layernorm.weight')!.data.fill(3e38);
  await writeSafetensors(path, weights, metadata);
  return model;
}

it('item 8: training refuses non-finite logits, naming the step and the model, and saves nothing of that step', async () => {
  const model = await hugeModel('model');
  const run = join(root, 'run');
  const err = await train({ config: microConfig(model, run, ['trainer.steps=2']) }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(NonFiniteLogitsError);
  expect((err as Error).message).toMatch(
    new RegExp(
      `^step 1 failed: Model \`${model}\` computed non-finite logits .* at decode step \\d+ .*Nothing of step 1 was saved`,
    ),
  );
  expect((err as Error).message.split('\n')).toHaveLength(1);
  expect(existsSync(join(run, 'checkpoints', 'step-1'))).toBe(false);
  if (existsSync(join(run, 'metrics.jsonl')))
    expect(readFileSync(join(run, 'metrics.jsonl'), 'utf8')).not.toMatch(/"step":\s*1\b/);
});

it('item 8: through the gateway too, non-finite logits stop the step (the program only saw a 500; it is no crashed episode)', async () => {
  const model = await hugeModel('model-gateway');
  const program = join(root, 'agent.mjs');
  writeFileSync(
    program,
    `const r = await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }) });
await fetch(process.env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: r.ok ? 1 : 0 }) });
`,
  );
  const run = join(root, 'run-gateway');
  const overrides = [
    'trainer.steps=1',
    `env.train=[{agent: {command: "node ${program}", timeoutS: 60}, groups: 2, groupSize: 2}]`,
    'env.val=[]',
    'algo.advEstimator=grpo',
  ];
  const err = await train({ config: microConfig(model, run, overrides) }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(NonFiniteLogitsError);
  expect((err as Error).message).toMatch(/^step 1 failed: Model `.*` computed non-finite logits/);
  expect(existsSync(join(run, 'checkpoints', 'step-1'))).toBe(false);
});
