// Issue 42: Qwen's tool tags added to ragen-tiny as one token each, the model grown to match (tool-tokens.ts).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../../src/index.js';
import { toolCallText as callText } from '../../../src/tokenizer/index.js';
import { loadModel } from '../../../src/model/index.js';
import { QWEN_TOOL_TAGS, withAddedTokens } from './tool-tokens.js';

const BASE = join(import.meta.dirname, '../../../models/ragen-tiny');
const dir = mkdtempSync(join(tmpdir(), 'tool-tokens-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Qwen tool tags as added tokens of ragen-tiny (issue 42)', () => {
  it('issue 42: each tag is one id past the old vocab, its embedding the mean of its old pieces, the rest unchanged', async () => {
    const base = loadTokenizer(BASE);
    const { model: before } = await loadModel(BASE);
    const { model, tokenizer, added } = await withAddedTokens(BASE, dir);
    const V = before.config.vocabSize;
    const C = before.config.hiddenSize;
    expect(model.config.vocabSize).toBe(V + QWEN_TOOL_TAGS.length);
    expect(tokenizer.vocabSize).toBe(V + QWEN_TOOL_TAGS.length);
    const old = before.exportWeights().get('model.embed_tokens.weight')!.data;
    const grown = model.exportWeights().get('model.embed_tokens.weight')!.data;
    expect(grown.subarray(0, V * C)).toEqual(old);
    QWEN_TOOL_TAGS.forEach((tag, i) => {
      expect(tokenizer.encode(tag)).toEqual([V + i]);
      expect(tokenizer.decode([V + i], { skipSpecialTokens: true })).toBe(tag); // not special, as in Qwen's tokenizer
      const pieces = base.encode(tag);
      expect(added.get(tag)!.pieces).toEqual(pieces);
      for (let c = 0; c < C; c++) {
        const mean = pieces.reduce((s, p) => s + old[p * C + c]!, 0) / pieces.length;
        expect(grown[(V + i) * C + c]).toBeCloseTo(mean, 6);
      }
    });
    before.dispose();
    model.dispose();
  });

  it('issue 42: a guess call is the old text with each tag one token; text without tags encodes as before', () => {
    const base = loadTokenizer(BASE);
    const tokenizer = loadTokenizer(dir);
    const call = callText({ name: 'guess', arguments: { n: 8 } });
    const ids = tokenizer.encode(call);
    expect(tokenizer.decode(ids)).toBe(call);
    const tagPieces = base.encode('<tool_call>').length + base.encode('</tool_call>').length;
    expect(ids.length).toBe(base.encode(call).length - tagPieces + 2);
    const plain = 'Guess the number between 1 and 100. {"n": 42} is lower.';
    expect(tokenizer.encode(plain)).toEqual(base.encode(plain));
    const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as {
      added_tokens_decoder: Record<string, { content: string; special: boolean }>;
    };
    expect(QWEN_TOOL_TAGS.map((_, i) => config.added_tokens_decoder[String(base.vocabSize + i)])).toEqual(
      QWEN_TOOL_TAGS.map((content) => expect.objectContaining({ content, special: false })),
    );
  });

  it('issue 42: a base whose tokenizer already has a tag as one token is refused, naming the tag', async () => {
    await expect(withAddedTokens(BASE, join(dir, 'again'), ['<think>'])).rejects.toThrow(
      /already encodes "<think>" as one token/,
    );
  });
});
