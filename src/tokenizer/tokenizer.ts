// The Tokenizer every model goes through: a Hugging Face tokenizer.json + tokenizer_config.json
// (read by @huggingface/tokenizers, fully offline) with its chat template (rendered by @huggingface/jinja).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as HfTokenizerImpl } from '@huggingface/tokenizers';
import { ConfigError } from '../util/index.js';
import { checkTokenizerJson } from './tokenizer-json.js';
import { TOOL_FORMATS, type ToolFormatName } from './tool-format.js';
import {
  ChatTemplate,
  chatTemplateSource,
  tokenString,
  type ChatMessage,
  type ChatTemplateOptions,
} from './chat-template.js';

/**
 * Text <-> token ids, plus the model's chat template. `encode` never adds BOS/EOS or other
 * special tokens of its own (chat templates write them as text, as transformers'
 * `apply_chat_template(tokenize=True)` does); special tokens written in the text are recognised.
 */
export interface Tokenizer {
  /** Where it was loaded from (a directory), for messages. */
  readonly name: string;
  /** 1 + the largest token id (an embedding table needs at least this many rows). */
  readonly vocabSize: number;
  /** The end-of-turn / end-of-sequence id generation stops at (tokenizer_config's `eos_token`). */
  readonly eosTokenId: number;
  /** The padding id (`pad_token`, else `eos_token`). */
  readonly padTokenId: number;
  /** `bos_token`'s id, if the tokenizer has one. */
  readonly bosTokenId: number | undefined;
  /** Every special added token: content -> id. */
  readonly specialTokens: ReadonlyMap<string, number>;
  encode(text: string): number[];
  /** Ids -> text. Special tokens are kept unless `skipSpecialTokens`. */
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  /** The id of a token string of the vocabulary (e.g. '<|im_end|>'), or undefined. */
  tokenToId(token: string): number | undefined;
  /** The chat template's Jinja source. */
  readonly chatTemplate: string;
  /** Render messages with the chat template (transformers' `apply_chat_template(tokenize=False)`). */
  applyChatTemplate(messages: readonly ChatMessage[], options?: ChatTemplateOptions): string;
  /**
   * How the model was taught tools and calls (tokenizer_config.json's `ragen_tool_format`; absent = `qwen`): the
   * gateway writes tools and reads calls in it.
   */
  readonly toolFormat?: ToolFormatName;
}

/** The two files of a Hugging Face tokenizer, parsed. */
export interface TokenizerFiles {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
}

/** A Hugging Face tokenizer (tokenizer.json + tokenizer_config.json). */
export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly eosTokenId: number;
  readonly padTokenId: number;
  readonly bosTokenId: number | undefined;
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly chatTemplate: string;
  readonly toolFormat: ToolFormatName;
  private readonly impl: HfTokenizerImpl;
  private readonly template: ChatTemplate;

  constructor(
    files: TokenizerFiles,
    readonly name = 'tokenizer',
    options: { chatTemplate?: string } = {},
  ) {
    const { tokenizerJson, tokenizerConfig } = files;
    checkTokenizerJson(tokenizerJson, name);
    this.impl = new HfTokenizerImpl(tokenizerJson, tokenizerConfig);
    const vocab = ((tokenizerJson['model'] as { vocab?: unknown } | undefined)?.vocab ?? {}) as
      Record<string, number> | [string, number][];
    let maxId = -1;
    for (const id of Array.isArray(vocab) ? vocab.map((_, i) => i) : Object.values(vocab)) maxId = Math.max(maxId, id);
    const special = new Map<string, number>();
    for (const t of (tokenizerJson['added_tokens'] ?? []) as { id: number; content: string; special?: boolean }[]) {
      maxId = Math.max(maxId, t.id);
      if (t.special) special.set(t.content, t.id);
    }
    this.vocabSize = maxId + 1;
    this.specialTokens = special;

    const idOf = (field: string): number | undefined => {
      const tok = tokenString(tokenizerConfig[field]);
      if (tok === undefined) return undefined;
      const id = this.tokenToId(tok);
      if (id === undefined)
        throw new ConfigError(
          `${name}: tokenizer_config.json's \`${field}\` = ${JSON.stringify(tok)} is not in the vocabulary.`,
        );
      return id;
    };
    const eos = idOf('eos_token');
    if (eos === undefined)
      throw new ConfigError(
        `${name}: tokenizer_config.json has no \`eos_token\`; generation needs one to stop. Add e.g. "eos_token": "<|im_end|>".`,
      );
    this.eosTokenId = eos;
    this.padTokenId = idOf('pad_token') ?? eos;
    this.bosTokenId = idOf('bos_token');

    const source = options.chatTemplate ?? chatTemplateSource(tokenizerConfig);
    if (source === undefined) {
      throw new ConfigError(
        `${name}: tokenizer_config.json has no \`chat_template\` (and no chat_template.jinja beside it); the agent loop needs one.`,
      );
    }
    this.chatTemplate = source;
    const vars: Record<string, string> = {};
    for (const field of ['bos_token', 'eos_token', 'pad_token', 'unk_token']) {
      const tok = tokenString(tokenizerConfig[field]);
      if (tok !== undefined) vars[field] = tok;
    }
    this.template = new ChatTemplate(source, vars);
    const format = tokenizerConfig['ragen_tool_format'] ?? 'qwen';
    if (!TOOL_FORMATS.includes(format as ToolFormatName))
      throw new ConfigError(
        `${name}: tokenizer_config.json's \`ragen_tool_format\` = ${JSON.stringify(format)} is not a tool format; give one of ${TOOL_FORMATS.map((f) => `"${f}"`).join(', ')} (or leave it out for Qwen's).`,
      );
    this.toolFormat = format as ToolFormatName;
  }

  encode(text: string): number[] {
    return this.impl.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return '';
    return this.impl.decode(ids as number[], {
      skip_special_tokens: options.skipSpecialTokens ?? false,
      clean_up_tokenization_spaces: false,
    });
  }

  tokenToId(token: string): number | undefined {
    return this.impl.token_to_id(token);
  }

  applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    return this.template.render(messages, options);
  }
}

/** Read tokenizer.json + tokenizer_config.json (+ chat_template.jinja if present) from `dir`. */
export function readTokenizerFiles(dir: string): TokenizerFiles & { chatTemplate?: string } {
  const jsonPath = join(dir, 'tokenizer.json');
  const configPath = join(dir, 'tokenizer_config.json');
  if (!existsSync(jsonPath)) {
    throw new ConfigError(
      `No tokenizer.json in \`${dir}\`. A model directory needs tokenizer.json and tokenizer_config.json (Hugging Face layout); see models/tokenizer-tiny/ for an example.`,
    );
  }
  const parse = (path: string): Record<string, unknown> => {
    try {
      return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new ConfigError(`\`${path}\` is not valid JSON: ${(err as Error).message}`);
    }
  };
  const files: TokenizerFiles & { chatTemplate?: string } = {
    tokenizerJson: parse(jsonPath),
    tokenizerConfig: existsSync(configPath) ? parse(configPath) : {},
  };
  const jinjaPath = join(dir, 'chat_template.jinja');
  if (existsSync(jinjaPath)) files.chatTemplate = readFileSync(jinjaPath, 'utf8');
  return files;
}

const cache = new Map<string, Tokenizer>();

/**
 * Load the tokenizer of a model directory (Hugging Face layout). Tokenizers are immutable, so
 * repeated loads of one directory share an instance. `options.chatTemplate` overrides the template.
 */
export function loadTokenizer(dir: string, options: { chatTemplate?: string } = {}): Tokenizer {
  const key = options.chatTemplate === undefined ? dir : `${dir}\u0000${options.chatTemplate}`;
  let tok = cache.get(key);
  if (!tok) {
    const files = readTokenizerFiles(dir);
    const chatTemplate = options.chatTemplate ?? files.chatTemplate;
    tok = new HfTokenizer(files, dir, chatTemplate === undefined ? {} : { chatTemplate });
    cache.set(key, tok);
  }
  return tok;
}
