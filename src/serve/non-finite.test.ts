// Item 8 of issue 34: a checkpoint with a finite but huge weight (3e38 in a layernorm) served by `ragen serve`: the
// completion is a 500 whose message names the model and the step, not an HTTP 200 with "\u0000" tokens and null
// log-probs.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSafetensorsFile, writeSafetensors } from '../model/index.js';
import { localServeTarget } from './load.js';
import { OpenAIServer } from './server.js';
import { TINY_MODEL_DIR } from './testing.js';

const dir = join(mkdtempSync(join(tmpdir(), 'ragen-huge-')), 'huge');
let server: OpenAIServer;
let url = '';

beforeAll(async () => {
  cpSync(TINY_MODEL_DIR, dir, { recursive: true });
  const { weights, metadata } = await readSafetensorsFile(join(dir, 'model.safetensors'));
  weights.get('model.layers.0.input_layernorm.weight')!.data[0] = 3e38;
  await writeSafetensors(join(dir, 'model.safetensors'), weights, metadata);
  server = new OpenAIServer(await localServeTarget(dir, (d) => d, { name: 'huge' }));
  ({ url } = await server.listen(0));
});
afterAll(async () => {
  await server?.close();
  rmSync(join(dir, '..'), { recursive: true, force: true });
});

async function complete(body: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'huge', prompt: 'Hello', max_tokens: 2, logprobs: 1, ...body }),
  });
  return { status: res.status, text: await res.text() };
}

describe('item 8: ragen serve answers non-finite logits with a 500 naming the model and the step', () => {
  for (const temperature of [0, 1]) {
    it(`a completion at temperature ${temperature} is a 500, never tokens`, async () => {
      const { status, text } = await complete({ temperature, max_tokens: 8 });
      expect(status).toBe(500);
      const message = (JSON.parse(text) as { error: { message: string } }).error.message;
      expect(message).toContain(`Model \`${dir}\` computed non-finite logits`);
      expect(message).toMatch(/at decode step \d+ \(position \d+ of prompt 0\)/);
      expect(text).not.toContain('token_logprobs');
    });
  }

  it('a stream whose second step fails is a 500 as well (its first token is held until the status is known)', async () => {
    const { status, text } = await complete({ stream: true, temperature: 0, max_tokens: 8 });
    expect(status).toBe(500);
    expect((JSON.parse(text) as { error: { message: string } }).error.message).toMatch(
      new RegExp(`Model \`${dir}\` computed non-finite logits .* at decode step 1 `),
    );
    expect(text).not.toContain('data:');
  });
});
