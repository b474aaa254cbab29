// The torch worker's out-of-memory replies: a request too large for the device fails with a structured error naming
// the sizes it ran with and the setting to lower, and the worker keeps serving smaller requests.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { TorchEngine } from './torch.js';
import { TorchRequestError } from './torch-worker.js';
import { torchPythonForTests } from './torch-testing.js';

const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-oom-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** ragen-tiny with a position table of 2^50 (the worker has no table of its own), so the engine lets a huge
 *  generation through to the worker's allocator instead of refusing it for the model's positions. */
function longContextTiny(): string {
  const dir = join(root, 'tiny');
  cpSync(join(import.meta.dirname, '../../models/ragen-tiny'), dir, { recursive: true });
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: 2 ** 50 }));
  return dir;
}

describe.runIf(python)('torch worker: out of memory', () => {
  test('a KV cache no host can hold is an out-of-memory error naming what to lower; the worker serves on', async () => {
    const engine = await TorchEngine.fromPretrained(longContextTiny(), {
      python: python!,
      device: 'cpu',
      tokenBudget: 256,
      echoStderr: false,
    });
    try {
      // 1e12 new tokens: the preallocated cache alone is petabytes, so the allocator refuses at once.
      const err = await engine
        .generate(
          [
            [1, 2, 3],
            [4, 5],
          ],
          { maxNewTokens: 1e12, temperature: 0, seed: 0 },
        )
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TorchRequestError);
      expect((err as Error).message).toMatch(
        /generate failed: .*\(out of memory: generate sampled 2 prompts at once \(longest 3 tokens \+ 1000000000000 new, .*16 x model\.torch\.tokenBudget = 4096 tokens.*lower the rollouts per step .*model\.torch\.tokenBudget \(now 256\)\)/,
      );
      const [g] = await engine.generate([[1, 2, 3]], { maxNewTokens: 4, temperature: 0, seed: 0 });
      expect(g!.tokens).toHaveLength(4);
    } finally {
      engine.dispose();
    }
  }, 60_000);
});
