// Checkpoints written by Hugging Face transformers' save_pretrained load here and give transformers' logits.
// The fixtures were made by `src/bench/tools/hf_check.py fixtures src/model/fixtures` (transformers 5.18, torch 2.13).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { noGrad, setBackend } from '../tensor/index.js';
import { loadModel } from './checkpoint.js';

const FIXTURES = join(import.meta.dirname, 'fixtures');

describe('checkpoints saved by transformers', () => {
  beforeAll(() => setBackend('js'));

  for (const name of ['hf-qwen2', 'hf-qwen3-bf16-sharded']) {
    it(`${name} loads and reproduces transformers' logits`, async () => {
      const { model } = await loadModel(join(FIXTURES, name));
      const expected = JSON.parse(readFileSync(join(FIXTURES, name, 'expected_logits.json'), 'utf8')) as {
        ids: number[][];
        shape: number[];
        logits: number[];
      };
      const [B, T, V] = expected.shape as [number, number, number];
      expect(V).toBe(model.config.vocabSize);
      const got = noGrad(() => model.logits(model.hidden(Int32Array.from(expected.ids.flat()), B, T)).toFloat32Array());
      let err = 0;
      let scale = 0;
      for (let i = 0; i < got.length; i++) {
        err = Math.max(err, Math.abs(got[i]! - expected.logits[i]!));
        scale = Math.max(scale, Math.abs(expected.logits[i]!));
      }
      expect(err / scale).toBeLessThan(1e-4);
      model.dispose();
    });
  }
});
