// `model.chatTemplate`: `model` keeps a directory's own template, `ragen-qwen` takes ours (Qwen tokenizers only),
// `auto` keeps an append-only one and replaces Qwen3's (which drops earlier reasoning), saying so once.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { qwenTokenizerDir, RAGEN_QWEN25_TEMPLATE, RAGEN_QWEN3_TEMPLATE, tinyTokenizerDir } from './index.js';
import { ConfigError } from '../util/index.js';
import { runTokenizer } from './run-tokenizer.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-run-tokenizer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A model directory holding Qwen3's packaged tokenizer files (its own, non-append-only template) and `model_type`. */
function qwenDir(name: string, modelType: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(qwenTokenizerDir(), f), join(dir, f));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: modelType }));
  return dir;
}

describe('runTokenizer', () => {
  it("`model` keeps Qwen3's own template; `auto` replaces it with ours (Qwen3's rendering) and says so once", () => {
    const dir = qwenDir('q3', 'qwen3');
    const own = runTokenizer(dir, 'model');
    expect(own.chatTemplate).toContain('reasoning_content'); // Qwen3's template, which splits out <think> text
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(runTokenizer(dir, 'auto').chatTemplate).toBe(RAGEN_QWEN3_TEMPLATE);
      expect(runTokenizer(dir, 'auto').chatTemplate).toBe(RAGEN_QWEN3_TEMPLATE);
      expect(log).toHaveBeenCalledTimes(1);
      expect(String(log.mock.calls[0]![0])).toMatch(
        /^model\.chatTemplate=auto: the chat template of `.*q3` is not append-only \(rendering turn 2 changes earlier text/,
      );
    } finally {
      log.mockRestore();
    }
  });

  it('`ragen-qwen` picks the family by config.json: Qwen2.5 rendering for qwen2, Qwen3 rendering for qwen3', () => {
    expect(runTokenizer(qwenDir('q2', 'qwen2'), 'ragen-qwen').chatTemplate).toBe(RAGEN_QWEN25_TEMPLATE);
    expect(runTokenizer(qwenDir('q3b', 'qwen3'), 'ragen-qwen').chatTemplate).toBe(RAGEN_QWEN3_TEMPLATE);
  });

  it("`auto` keeps an append-only template, and `ragen-qwen` refuses a tokenizer without Qwen's tokens", () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const tiny = runTokenizer(tinyTokenizerDir(), 'auto');
      expect(tiny.chatTemplate).toBe(runTokenizer(tinyTokenizerDir(), 'model').chatTemplate);
      expect(log).not.toHaveBeenCalled();
    } finally {
      log.mockRestore();
    }
    // A word-level tokenizer with neither ChatML token.
    const plain = join(root, 'plain');
    mkdirSync(plain);
    const special = {
      id: 1,
      content: '</s>',
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    };
    const model = { type: 'WordLevel', vocab: { a: 0, '</s>': 1, '[UNK]': 2 }, unk_token: '[UNK]' };
    writeFileSync(
      join(plain, 'tokenizer.json'),
      JSON.stringify({
        version: '1.0',
        truncation: null,
        padding: null,
        added_tokens: [special],
        normalizer: null,
        pre_tokenizer: { type: 'Whitespace' },
        post_processor: null,
        decoder: null,
        model,
      }),
    );
    writeFileSync(
      join(plain, 'tokenizer_config.json'),
      JSON.stringify({
        eos_token: '</s>',
        chat_template: '{{ messages | length }}{% for m in messages %}{{ m.content }} {% endfor %}',
      }),
    );
    expect(() => runTokenizer(plain, 'ragen-qwen')).toThrow(ConfigError);
    expect(() => runTokenizer(plain, 'ragen-qwen')).toThrow(
      /needs Qwen's <\|im_start\|> and <\|im_end\|> tokens.*use model\.chatTemplate=model\./,
    );
    // Not append-only (it opens with the message count) but not ChatML either: kept, for the agent loop's refusal.
    expect(runTokenizer(plain, 'auto').chatTemplate).toContain('messages | length');
  });
});
