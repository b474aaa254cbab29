// `ragen serve` renders prompts with the chat template the run trained with: a run directory's `model.chatTemplate`
// by default, `--chat-template` to choose; Qwen3's own template (which drops earlier reasoning) is not what an
// `auto` run trained on, so serving it with the model's own template would feed the policy prompts it never saw.
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, saveConfig } from '../../config/index.js';
import { OpenAIServer, localServeTarget } from '../../serve/index.js';
import { qwenTokenizerDir, RAGEN_QWEN3_TEMPLATE } from '../../tokenizer/index.js';
import { writeCheckpoint } from '../../train/index.js';
import { runCli } from '../testing.js';
import { resolveModelDir } from '../../eval/index.js';
import { initModelDir } from './model-init.js';
import { runChatTemplate } from './serve.js';

let root: string;
let model: string;
let runDir: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-serve-template-'));
  model = join(root, 'qwen3-tiny');
  await initModelDir(model, 'qwen3-tiny', { seed: 5 });
  copyFileSync(join(qwenTokenizerDir(), 'tokenizer_config.json'), join(model, 'tokenizer_config.json')); // Qwen3's as published
  runDir = join(root, 'run');
  saveConfig(
    loadConfig({ config: 'sokoban-ppo-qwen', overrides: [`model.path=${model}`, 'model.engine=local'] }),
    runDir,
  );
  await writeCheckpoint(
    join(runDir, 'checkpoints'),
    { step: 1, data: {} },
    {
      writeModel: (ckpt) => {
        for (const f of readdirSync(model))
          if (/\.(json|safetensors)$/.test(f)) copyFileSync(join(model, f), join(ckpt, f));
      },
    },
  );
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Two assistant turns with reasoning: Qwen3's template drops the first turn's <think> block, ours keeps it verbatim.
const messages = [
  { role: 'user' as const, content: 'Turn 1' },
  { role: 'assistant' as const, content: '<think>push up</think><answer>Up</answer>' },
  { role: 'user' as const, content: 'Turn 2' },
];

async function promptIds(target: Awaited<ReturnType<typeof localServeTarget>>): Promise<number[]> {
  const server = new OpenAIServer({ ...target, contextLength: 4096 });
  const { url } = await server.listen(0);
  try {
    const res = await fetch(`${url}/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        model: target.modelName,
        messages,
        max_tokens: 1,
        temperature: 0,
        return_token_ids: true,
      }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { prompt_token_ids: number[] }).prompt_token_ids;
  } finally {
    await server.close();
    target.dispose();
  }
}

describe('ragen serve --chat-template', () => {
  it(
    "serves a run with the template it trained with (the preset's `auto`: ours over Qwen3's own)",
    { timeout: 120_000 },
    async () => {
      expect(runChatTemplate(runDir)).toBe('auto');
      expect(runChatTemplate(model)).toBeUndefined(); // a model directory keeps its own template
      const served = await localServeTarget(runDir, resolveModelDir, { chatTemplate: 'auto' });
      expect(served.tokenizer.chatTemplate).toBe(RAGEN_QWEN3_TEMPLATE);
      const ours = await promptIds(served);
      const own = await promptIds(await localServeTarget(runDir, resolveModelDir, {}));
      const text = served.tokenizer.decode(ours);
      expect(text).toContain('<think>push up</think>'); // history verbatim, as the run's rollouts rendered it
      expect(own).not.toEqual(ours);
    },
  );

  it('refuses a bad choice, and --chat-template with --tokenizer, naming the fix', async () => {
    const bad = await runCli('serve', model, '--chat-template', 'qwen');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/Bad --chat-template `qwen`: give model, ragen-qwen or auto/);
    await expect(
      localServeTarget(model, resolveModelDir, { chatTemplate: 'ragen-qwen', tokenizerDir: qwenTokenizerDir() }),
    ).rejects.toThrow(
      /--chat-template ragen-qwen applies to the checkpoint's own tokenizer; drop --tokenizer or --chat-template/,
    );
  });
});
