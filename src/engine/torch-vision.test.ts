// The torch engine on a Qwen2.5-VL checkpoint (`ragen model init --shape qwen2.5-vl-tiny`): the worker loads it, text
// rows run through it, and `visionTrain` (`model.vision.train`) decides whether the vision tower's weights train.
// The image seam itself (pixel values per row) is held in python/tests/test_vision_worker.py.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initModelDir } from '../cli/commands/model-init.js';
import { sequenceBatch } from './batch.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';

const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-torch-vision-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(!python)('the torch engine on qwen2.5-vl-tiny', () => {
  const dir = join(root, 'vl');
  beforeAll(async () => {
    await initModelDir(dir, 'qwen2.5-vl-tiny', { dtype: 'f32', seed: 1 });
  }, 120_000);

  for (const visionTrain of [false, true]) {
    it(`loads it, scores text rows, and ${visionTrain ? 'trains' : 'freezes'} the vision tower (visionTrain ${visionTrain})`, async () => {
      const engine = await TorchEngine.fromPretrained(dir, {
        python: python!,
        device: 'cpu',
        precision: 'float32',
        visionTrain,
        echoStderr: false,
      });
      try {
        const names = [...(await engine.tensors('policy')).keys()];
        expect(names).toContain('model.layers.0.self_attn.q_proj.weight');
        expect(names.includes('visual.merger.mlp.0.weight')).toBe(visionTrain);
        expect(names.includes('visual.blocks.1.attn.qkv.weight')).toBe(visionTrain);
        const out = await engine.forward(sequenceBatch([[151644, 872, 198, 9707, 151645]]), { role: 'policy' });
        const lp = [...out.logprobs!.slice(1, 5)];
        expect(lp.every((x) => Number.isFinite(x) && x < 0)).toBe(true);
      } finally {
        engine.dispose();
      }
    }, 120_000);
  }
});
