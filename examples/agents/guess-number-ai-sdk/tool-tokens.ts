// Qwen's tool tags as added tokens of a tiny model: `<tool_call>`, `</tool_call>`, `<tool_response>`,
// `</tool_response>` become one id each, as in Qwen2.5's tokenizer (ids 151657-151658, 151665-151666, not special),
// instead of 7-8 BPE pieces of the tiny tokenizer. The embedding (and lm_head, when untied) grows by one row per tag,
// initialised from the mean of the rows of the pieces the tag encoded to before (transformers' resize_token_embeddings
// with mean init, as in Hewitt 2021, "Initializing new word embeddings for pretrained language models").
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTokenizer, type Tokenizer } from '../../../src/index.js';
import type { ToolFormatName } from '../../../src/tokenizer/index.js';
import { loadModel, Transformer, type WeightMap } from '../../../src/model/index.js';

/** Qwen2.5's tool tags, in the order Qwen's tokenizer numbers them. */
export const QWEN_TOOL_TAGS = ['<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>'] as const;

/**
 * The model in `base` with `tags` added to its tokenizer (ids from its vocab size up, not special) and its embedding
 * rows, written as tokenizer.json + tokenizer_config.json into `tokenizerDir`; the returned model's
 * `config.vocabSize` counts the new rows. A tag the base tokenizer already holds as one token is an error. A
 * `toolFormat` other than Qwen's is named in tokenizer_config.json (`ragen_tool_format`), so the gateway uses it.
 */
export async function withAddedTokens(
  base: string,
  tokenizerDir: string,
  tags: readonly string[] = QWEN_TOOL_TAGS,
  toolFormat: ToolFormatName = 'qwen',
): Promise<{ model: Transformer; tokenizer: Tokenizer; added: Map<string, { id: number; pieces: number[] }> }> {
  const baseTokenizer = loadTokenizer(base);
  const { model } = await loadModel(base, { adapters: false });
  const V = model.config.vocabSize;
  const C = model.config.hiddenSize;
  const added = new Map<string, { id: number; pieces: number[] }>();
  tags.forEach((tag, i) => {
    const pieces = baseTokenizer.encode(tag);
    if (pieces.length < 2)
      throw new Error(
        `${base}'s tokenizer already encodes ${JSON.stringify(tag)} as one token (${pieces.join(', ')}); add only tags it splits.`,
      );
    added.set(tag, { id: V + i, pieces });
  });
  const weights: WeightMap = model.exportWeights();
  for (const name of model.config.tieWordEmbeddings
    ? ['model.embed_tokens.weight']
    : ['model.embed_tokens.weight', 'lm_head.weight']) {
    const w = weights.get(name)!;
    const data = new Float32Array((V + tags.length) * C);
    data.set(w.data);
    for (const { id, pieces } of added.values()) {
      for (const p of pieces) for (let c = 0; c < C; c++) data[id * C + c]! += w.data[p * C + c]! / pieces.length;
    }
    weights.set(name, { shape: [V + tags.length, C], data });
  }
  const grown = Transformer.fromWeights(
    { ...model.config, vocabSize: V + tags.length },
    weights,
    `${base} + ${tags.length} added tokens`,
  );

  const tokenizerJson = JSON.parse(readFileSync(join(base, 'tokenizer.json'), 'utf8')) as {
    added_tokens: Record<string, unknown>[];
  };
  const tokenizerConfig = JSON.parse(readFileSync(join(base, 'tokenizer_config.json'), 'utf8')) as {
    added_tokens_decoder: Record<string, unknown>;
    ragen_tool_format?: ToolFormatName;
  };
  if (toolFormat !== 'qwen') tokenizerConfig.ragen_tool_format = toolFormat;
  for (const [content, { id }] of added) {
    const entry = { content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false };
    tokenizerJson.added_tokens.push({ id, ...entry });
    tokenizerConfig.added_tokens_decoder[String(id)] = entry;
  }
  mkdirSync(tokenizerDir, { recursive: true });
  writeFileSync(join(tokenizerDir, 'tokenizer.json'), JSON.stringify(tokenizerJson, null, 1) + '\n');
  writeFileSync(join(tokenizerDir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig, null, 2) + '\n');
  return { model: grown, tokenizer: loadTokenizer(tokenizerDir), added };
}
