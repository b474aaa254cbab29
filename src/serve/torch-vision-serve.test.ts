// `ragen serve --engine torch` over a Qwen2.5-VL checkpoint (`ragen model init --shape qwen2.5-vl-tiny`): through the
// official `openai` client, a chat request with a data: URL image gets the local engine's greedy reply on the same
// checkpoint (ids equal, log-probs within 1e-4), and another image changes it, so the worker reads the pixels.
// Skipped without PyTorch >= 2 unless RAGEN_REQUIRE_BACKENDS=1.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initModelDir } from '../cli/commands/model-init.js';
import '../envs/index.js';
import { makeEnv } from '../env/index.js';
import { torchPythonForTests } from '../engine/torch-testing.js';
import { IMAGE_PAD } from '../tokenizer/index.js';
import { encodePng, type RgbImage } from '../util/index.js';
import { localServeTarget, torchServeTarget, type ServeTarget } from './load.js';
import { OpenAIServer } from './server.js';

const python = torchPythonForTests();
const dataUrl = (img: RgbImage) => `data:image/png;base64,${Buffer.from(encodePng(img)).toString('base64')}`;

/** A chat completion with the fields `return_token_ids` adds. */
type Reply = OpenAI.ChatCompletion & {
  prompt_token_ids: number[];
  choices: (OpenAI.ChatCompletion.Choice & { token_ids: number[] })[];
};

describe.skipIf(!python)('ragen serve --engine torch over a vision-language model', () => {
  const root = mkdtempSync(join(tmpdir(), 'ragen-serve-torch-vl-'));
  const targets: ServeTarget[] = [];
  const servers: OpenAIServer[] = [];
  const clients: Record<'torch' | 'local', OpenAI> = {} as never;
  let lakes: RgbImage[];
  beforeAll(async () => {
    const dir = join(root, 'vl');
    await initModelDir(dir, 'qwen2.5-vl-tiny', { dtype: 'f32', seed: 1 });
    const torch = await torchServeTarget(dir, (d) => d, {
      name: 'vl',
      torch: { python: python!, device: 'cpu', precision: 'float32' },
    });
    targets.push(torch, await localServeTarget(dir, (d) => d, { name: 'vl' }));
    for (const [k, t] of [
      ['torch', targets[0]!],
      ['local', targets[1]!],
    ] as const) {
      const server = new OpenAIServer(t);
      servers.push(server);
      clients[k] = new OpenAI({ baseURL: (await server.listen(0)).url, apiKey: 'unused', maxRetries: 0 });
    }
    const env = makeEnv('VisualFrozenLake');
    lakes = [(await env.reset({ seed: 3 })).images![0]!, (await env.reset({ seed: 4 })).images![0]!];
  }, 180_000);
  afterAll(async () => {
    for (const s of servers) await s.close();
    for (const t of targets) t.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  const ask = async (engine: 'torch' | 'local', image: RgbImage): Promise<Reply> =>
    (await clients[engine].chat.completions.create({
      model: 'vl',
      messages: [
        { role: 'system', content: 'You walk on a frozen lake.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'The lake:' },
            { type: 'image_url', image_url: { url: dataUrl(image) } },
            { type: 'text', text: 'Your move?' },
          ],
        },
      ],
      max_tokens: 8,
      temperature: 0,
      logprobs: true,
      return_token_ids: true,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming)) as Reply;
  const logprobs = (r: Reply) => r.choices[0]!.logprobs!.content!.map((t) => t.logprob);

  it("answers an image message with the local engine's greedy reply, and reads the pixels", async () => {
    expect(targets[0]!.engine.kind).toBe('torch');
    const [torch, local] = [await ask('torch', lakes[0]!), await ask('local', lakes[0]!)];
    const pad = targets[1]!.tokenizer.encode(IMAGE_PAD)[0]!;
    expect(torch.prompt_token_ids.filter((id) => id === pad)).toHaveLength(4);
    expect(torch.prompt_token_ids).toEqual(local.prompt_token_ids);
    expect(torch.choices[0]!.token_ids).toEqual(local.choices[0]!.token_ids);
    expect(torch.choices[0]!.message.content).toBe(local.choices[0]!.message.content);
    const [a, b] = [logprobs(torch), logprobs(local)];
    expect(a).toHaveLength(b.length);
    a.forEach((x, i) => expect(Math.abs(x - b[i]!), `token ${i}`).toBeLessThan(1e-4));
    // another lake, the same text: the worker's log-probs move
    const other = logprobs(await ask('torch', lakes[1]!));
    const n = Math.min(other.length, a.length);
    expect(Math.max(...other.slice(0, n).map((x, i) => Math.abs(x - a[i]!)))).toBeGreaterThan(1e-3);
  }, 120_000);
});
