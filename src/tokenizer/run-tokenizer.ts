// The tokenizer a run (or `ragen serve`) uses: the model directory's own (else the shipped tiny one), with the chat
// template
// `model.chatTemplate` picks: the model's, ragen's append-only Qwen template, or (`auto`) ours only where the model's
// own
// would rewrite history (Qwen3's drops earlier <think> reasoning), said once on the console.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { appendOnlyViolation } from './append-only.js';
import { ragenQwenTemplate } from './qwen.js';
import { tinyTokenizerDir } from './tiny.js';
import { loadTokenizer, type Tokenizer } from './tokenizer.js';
import { ConfigError } from '../util/index.js';

/** `model.chatTemplate`'s values. */
export type ChatTemplateChoice = 'auto' | 'model' | 'ragen-qwen';

const said = new Set<string>();

/**
 * The tokenizer of model directory `dir` (its tokenizer.json, else the shipped tiny tokenizer) with the `choice`
 * template; `setting` names where the choice came from in messages (`ragen serve` passes `--chat-template`).
 */
export function runTokenizer(
  dir: string,
  choice: ChatTemplateChoice = 'model',
  setting = 'model.chatTemplate',
): Tokenizer {
  const tokDir = existsSync(join(dir, 'tokenizer.json')) ? dir : tinyTokenizerDir();
  const own = loadTokenizer(tokDir);
  if (choice === 'model') return own;
  const chatml = own.tokenToId('<|im_start|>') !== undefined && own.tokenToId('<|im_end|>') !== undefined;
  if (choice === 'ragen-qwen') {
    if (!chatml)
      throw new ConfigError(
        `${setting}=ragen-qwen needs Qwen's <|im_start|> and <|im_end|> tokens, and the tokenizer of \`${tokDir}\` has none; use ${setting}=model.`,
      );
    return loadTokenizer(tokDir, { chatTemplate: ragenQwenTemplate(qwenFamily(dir)) });
  }
  const violation = appendOnlyViolation(own);
  // Not ChatML: our template would not fit; the agent loop's refusal names the problem when it meets it.
  if (violation === null || !chatml) return own;
  if (!said.has(tokDir)) {
    said.add(tokDir);
    console.log(
      `${setting}=auto: the chat template of \`${tokDir}\` is not append-only (${violation}); using ragen's append-only Qwen template instead (history verbatim).`,
    );
  }
  return loadTokenizer(tokDir, { chatTemplate: ragenQwenTemplate(qwenFamily(dir)) });
}

/** Qwen3 (no default system prompt) when config.json says model_type qwen3, else Qwen2.5's rendering. */
function qwenFamily(dir: string): 'qwen2.5' | 'qwen3' {
  const path = join(dir, 'config.json');
  if (!existsSync(path)) return 'qwen2.5';
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { model_type?: unknown }).model_type === 'qwen3'
      ? 'qwen3'
      : 'qwen2.5';
  } catch {
    return 'qwen2.5'; // loading the model reports the broken config.json in its own words
  }
}
