// enginePolicy hands an engine the images of the prompts that show them as vision tokens, and none otherwise.
import { describe, expect, it } from 'vitest';
import type { Engine, SamplingParams } from '../engine/index.js';
import type { EnvSlot } from './env-groups.js';
import { loadQwenTokenizer } from '../tokenizer/index.js';
import type { RgbImage } from '../util/index.js';
import { agentConfig } from './config.js';
import { enginePolicy } from './policies.js';

const image: RgbImage = { width: 56, height: 56, data: new Uint8Array(56 * 56 * 3) };

function recording(): { engine: Engine; calls: SamplingParams[] } {
  const calls: SamplingParams[] = [];
  const engine: Engine = {
    kind: 'fake',
    async generate(prompts, params) {
      calls.push(params);
      return prompts.map(() => ({ tokens: [1], logprobs: [0], finishReason: 'stop' as const }));
    },
    async forward() {
      throw new Error('not used');
    },
  };
  return { engine, calls };
}

describe('enginePolicy and images', () => {
  it("passes each prompt with <|image_pad|> tokens its messages' images, in order; text prompts none", async () => {
    const tok = loadQwenTokenizer();
    const pad = tok.tokenToId('<|image_pad|>')!;
    const { engine, calls } = recording();
    const policy = enginePolicy(engine, tok, agentConfig(), { seed: 1 });
    const slot = {} as EnvSlot;
    const second = { ...image, width: 28, height: 28, data: new Uint8Array(28 * 28 * 3) };
    const messages = [
      { role: 'user', content: 'a', images: [image] },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c', images: [second] },
    ];
    await policy.generate(
      [
        { prompt: [1, pad, pad, 2], slot, turn: 1, actionsLeft: 3, messages },
        { prompt: [1, 2, 3], slot, turn: 1, actionsLeft: 3, messages },
      ],
      0,
    );
    expect(calls[0]!.images).toEqual([[image, second], undefined]);
    // messages carry images for chat APIs even when the ids are text-only: no images reach the engine then
    await policy.generate([{ prompt: [1, 2, 3], slot, turn: 0, actionsLeft: 3, messages }], 1);
    expect(calls[1]!.images).toBeUndefined();
  });
});
