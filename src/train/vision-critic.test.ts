// `ragen train` with a vision-language policy and a separate critic (model.critic.mode: separate): the critic is a
// Qwen2.5-VL of its own, saved under critic/; the value loss reaches its language model, and its tower moves with
// model.vision.train and stays as loaded without it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initModelDir } from '../cli/commands/model-init.js';
import '../envs/index.js';
import { readSafetensors } from '../model/index.js';
import { microConfig } from './testing.js';
import { train } from './trainer.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-vl-critic-'));
const model = join(root, 'vl');
beforeAll(() => initModelDir(model, 'qwen2.5-vl-tiny', { dtype: 'f32', seed: 1 }), 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The largest absolute change of the tensors whose names pass `pick`, from `a` to `b`. */
async function moved(a: string, b: string, pick: (name: string) => boolean): Promise<number> {
  const [x, y] = [await readSafetensors(a), await readSafetensors(b)];
  let worst = 0;
  for (const [name, t] of x) {
    if (!pick(name)) continue;
    const u = y.get(name)!.data;
    t.data.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - u[i]!))));
  }
  return worst;
}

describe('ragen train with a VLM and a separate critic', () => {
  for (const visionTrain of [true, false])
    it(`trains the critic's own model${visionTrain ? ' and tower' : ', its tower frozen'} (model.vision.train: ${visionTrain})`, async () => {
      const config = microConfig(model, join(root, `run-${visionTrain}`), [
        'env.train=[{tag: VisualFrozenLake, groups: 2, groupSize: 4}]',
        'env.config={VisualFrozenLake: {observation: image, tileSize: 14, successRate: 1}}',
        'algo.advEstimator=gae',
        'model.critic.mode=separate',
        `model.vision.train=${visionTrain}`,
        'trainer.steps=1',
      ]);
      const r = await train({ config });
      const ckpt = join(r.runDir, 'checkpoints', 'step-1');
      const critic = join(ckpt, 'critic');
      expect(JSON.parse(readFileSync(join(critic, 'config.json'), 'utf8')).model_type).toBe('qwen2_5_vl');
      const weights = (d: string) => join(d, 'model.safetensors');
      const tower = (n: string) => n.startsWith('visual.');
      const lm = (n: string) => n.startsWith('model.layers.');
      expect(await moved(weights(model), weights(critic), lm)).toBeGreaterThan(0);
      expect((await moved(weights(model), weights(critic), tower)) > 0).toBe(visionTrain);
      expect((await moved(weights(model), weights(ckpt), tower)) > 0).toBe(visionTrain);
    }, 300_000);
});
