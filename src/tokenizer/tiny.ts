// Our tokenizer for tiny models: byte-level BPE trained on the transcripts of our environments, with
// one-symbol pre-tokens for grid cells, digits and punctuation, saved in Hugging Face's tokenizer.json
// layout so tiny and real models load through the same `loadTokenizer`.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../util/index.js';
import { trainBpe } from './bpe-train.js';
import { CHATML_TEMPLATE } from './templates.js';
import { HfTokenizer, type Tokenizer, type TokenizerFiles } from './tokenizer.js';

/**
 * The pre-tokenizer: a word is an optional space plus a lowercase run with at most one capital in
 * front ("Left", " actions", " Turn"); every other character stands alone (a capital in an
 * all-caps run, a digit, a grid symbol, a punctuation mark with an optional leading space,
 * one whitespace character). So a grid row "#_OP#" is five pre-tokens and numbers are digit by digit,
 * which keeps what a tiny model must learn local. Written so JavaScript and Oniguruma read it alike.
 */
export const TINY_PRETOKENIZE_PATTERN = ' ?[A-Z]?[a-z]+|[A-Z]|[0-9]| ?[^\\sA-Za-z0-9]|\\s';

/** Special tokens (never split, kept out of merges): padding, ChatML's turn markers. */
export const TINY_SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;

/** Added, non-special tokens: the tags of RAGEN's answer format, one token each. */
export const TINY_TAG_TOKENS = ['<think>', '</think>', '<answer>', '</answer>'] as const;

const ADDED = [...TINY_SPECIAL_TOKENS, ...TINY_TAG_TOKENS];
const addedSplit = new RegExp(`(${ADDED.map((t) => t.replace(/[|/<>]/g, (c) => `\\${c}`)).join('|')})`);
const preTokenRegex = new RegExp(TINY_PRETOKENIZE_PATTERN, 'gu');

/** Split text into the pre-tokens BPE trains on (added tokens removed), as the loaded tokenizer splits it. */
export function tinyPreTokens(text: string): string[] {
  const out: string[] = [];
  for (const part of text.split(addedSplit)) {
    if (part === '' || ADDED.includes(part as (typeof ADDED)[number])) continue;
    for (const m of part.matchAll(preTokenRegex)) out.push(m[0]);
  }
  return out;
}

/** Options of `trainTinyTokenizer`. */
export interface TinyTokenizerOptions {
  /** Total vocabulary: 256 bytes + merges + 7 added tokens. @default 1024 */
  vocabSize?: number;
  /** Context length written as `model_max_length`. @default 4096 */
  modelMaxLength?: number;
}

/**
 * Train the tiny tokenizer on `texts` (each counted once; pass a transcript several times to weight
 * it) and return the two Hugging Face files. Every text round-trips through it exactly (byte-level).
 */
export function trainTinyTokenizer(texts: Iterable<string>, options: TinyTokenizerOptions = {}): TokenizerFiles {
  const vocabSize = options.vocabSize ?? 1024;
  if (!Number.isInteger(vocabSize) || vocabSize < 256 + ADDED.length) {
    throw new ConfigError(
      `vocabSize = ${vocabSize} is too small: the tiny tokenizer needs at least ${256 + ADDED.length} ids (256 bytes + ${ADDED.length} added tokens).`,
    );
  }
  const counts = new Map<string, number>();
  for (const text of texts) for (const p of tinyPreTokens(text)) counts.set(p, (counts.get(p) ?? 0) + 1);
  const bpe = trainBpe(counts, vocabSize - ADDED.length);
  const vocab: Record<string, number> = {};
  for (const [sym, id] of bpe.vocab) vocab[sym] = id;
  let next = bpe.vocab.size;
  const addedTokens = ADDED.map((content) => ({
    id: next++,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: (TINY_SPECIAL_TOKENS as readonly string[]).includes(content),
  }));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: TINY_PRETOKENIZE_PATTERN }, behavior: 'Isolated', invert: false },
        byteLevel,
      ],
    },
    post_processor: null,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: bpe.merges.map(([a, b]) => `${a} ${b}`),
    },
  };
  const tokenizerConfig = {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: null,
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    unk_token: null,
    model_max_length: options.modelMaxLength ?? 4096,
    clean_up_tokenization_spaces: false,
    chat_template: CHATML_TEMPLATE,
    added_tokens_decoder: Object.fromEntries(addedTokens.map(({ id, ...rest }) => [String(id), rest])),
  };
  return { tokenizerJson, tokenizerConfig };
}

/** The untrained tiny tokenizer (bytes + added tokens only): every text encodes, one id per byte. */
export function byteTokenizer(): Tokenizer {
  return new HfTokenizer(trainTinyTokenizer([], { vocabSize: 256 + ADDED.length }), 'byte-tokenizer');
}

/** Write tokenizer.json and tokenizer_config.json into `dir` (created if missing). */
export function saveTokenizerFiles(dir: string, files: TokenizerFiles): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(files.tokenizerJson, null, 1) + '\n');
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(files.tokenizerConfig, null, 2) + '\n');
}

/**
 * The shipped tiny tokenizer (`models/tokenizer-tiny` of this package), found from this module's
 * location so it works from src/ (tsx, vitest) and from dist/ (the `ragen` bin) alike.
 */
export function tinyTokenizerDir(): string {
  return shippedTokenizerDir('tokenizer-tiny', 'npx tsx scripts/train-tokenizer.ts');
}

/** The shipped tiny tokenizer with the vision tokens (`models/tokenizer-tiny-vl`), found as `tinyTokenizerDir`. */
export function tinyVLTokenizerDir(): string {
  return shippedTokenizerDir('tokenizer-tiny-vl', 'npx tsx scripts/tiny-vl-tokenizer.ts');
}

function shippedTokenizerDir(name: string, rebuild: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'models', name);
    if (existsSync(join(candidate, 'tokenizer.json'))) return candidate;
    dir = dirname(dir);
  }
  throw new ConfigError(`The shipped tokenizer models/${name} is missing; rebuild it with \`${rebuild}\`.`);
}
