// A visual env's images in the episode context: the prompt ids stay text-only, the chat messages carry each turn's
// image after its state (full history in `full` mode, the current one only in `single_turn`), and text envs' messages
// are unchanged.
import { describe, expect, it } from 'vitest';
import { IMAGE_PLACEHOLDER, loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import type { RgbImage } from '../util/index.js';
import { agentConfig } from './config.js';
import { EpisodeContext } from './episode-context.js';
import { chatMessageParam } from './openai-policy.js';

const tokenizer = loadTokenizer(tinyTokenizerDir());
const image = (v: number): RgbImage => ({ width: 2, height: 1, data: new Uint8Array(6).fill(v) });
const view = (turn: number, images?: RgbImage[]) => ({
  turn,
  state: `state ${turn}`,
  actionsLeft: 5,
  invalidWarning: false,
  ...(images ? { images } : {}),
});
const tokens = tokenizer.encode('<answer>Up</answer>');
const gen = { tokens, logprobs: tokens.map(() => -1), finishReason: 'stop' as const };

function play(mode: 'full' | 'single_turn', withImages: boolean) {
  const ctx = new EpisodeContext(tokenizer, agentConfig({ contextWindowMode: mode }), 'system');
  const prompts: number[][] = [];
  for (const t of [1, 2]) {
    prompts.push(ctx.prompt(view(t, withImages ? [image(t)] : undefined))!);
    if (t === 1) ctx.respond(gen);
  }
  return { prompts, messages: ctx.promptMessages! };
}

describe('images in the episode context', () => {
  it('leave the prompt ids as for the same text without images', () => {
    for (const mode of ['full', 'single_turn'] as const)
      expect(play(mode, true).prompts).toEqual(play(mode, false).prompts);
  });

  it('full mode: every turn shows its own image right after its state text', () => {
    const { messages } = play('full', true);
    const users = messages.filter((m) => m.role === 'user');
    expect(users.map((m) => m.images)).toEqual([[image(1)], [image(2)]]);
    expect(users[1]!.content).toContain(`state 2\n${IMAGE_PLACEHOLDER}`);
    const parts = chatMessageParam(users[1]!).content as { type: string; text?: string }[];
    expect(parts.map((p) => p.type)).toEqual(['text', 'image_url', 'text']);
    expect(parts[0]!.text).toMatch(/state 2\n$/);
  });

  it('single_turn mode: only the current image; text envs: the same messages as before', () => {
    const { messages } = play('single_turn', true);
    expect(messages.flatMap((m) => m.images ?? [])).toEqual([image(2)]);
    const text = play('full', false).messages;
    expect(text.some((m) => m.images !== undefined || m.content.includes(IMAGE_PLACEHOLDER))).toBe(false);
  });
});
