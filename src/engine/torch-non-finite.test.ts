// Item 8 of issue 34 on the torch worker: a checkpoint with 3e38 in a layernorm gives non-finite logits, and the
// worker's generation refuses with the local engine's NonFiniteLogitsError (model and step named), never tokens
// (and never multinomial's raw "probability tensor contains either inf, nan or element < 0").
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NonFiniteLogitsError, readSafetensorsFile, writeSafetensors } from '../model/index.js';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';

const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-torch-huge-'));
const dir = join(root, 'huge');
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(!python)('item 8: the torch worker refuses non-finite logits, naming the model and the step', () => {
  let torch: TorchEngine;
  beforeAll(async () => {
    cpSync(join(import.meta.dirname, '../../models/ragen-tiny'), dir, { recursive: true });
    const { weights, metadata } = await readSafetensorsFile(join(dir, 'model.safetensors'));
    weights.get('model.layers.0.input_layernorm.weight')!.data[0] = 3e38;
    await writeSafetensors(join(dir, 'model.safetensors'), weights, metadata);
    torch = await TorchEngine.fromPretrained(dir, { python: python!, echoStderr: false });
  }, 60_000);
  afterAll(() => torch?.dispose());

  for (const temperature of [0, 1]) {
    it(`at temperature ${temperature}`, async () => {
      const err = await torch
        .generate(
          [
            [1, 2, 3],
            [4, 5],
          ],
          { maxNewTokens: 8, temperature, seed: 0 },
        )
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NonFiniteLogitsError);
      expect((err as Error).message).toMatch(
        new RegExp(
          `^Model \`${dir}\` computed non-finite logits \\(log-prob (NaN|-?Infinity)\\) at decode step \\d+ \\(position \\d+ of prompt [01]\\)`,
        ),
      );
      expect((err as Error).message.split('\n')).toHaveLength(1);
    }, 60_000);
  }
});
