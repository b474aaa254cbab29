// A visual env's images in the episode context: the prompt ids of a text-only model stay text-only, the chat messages
// carry each turn's image after its state (all turns in `full` mode, the current one in `single_turn`), text envs'
// messages are unchanged; with a vision processor (a VLM) the images are vision tokens: prompt, never trained, counted.
import { describe, expect, it } from 'vitest';
import {
  IMAGE_PAD,
  IMAGE_PLACEHOLDER,
  imageGrid,
  loadQwenTokenizer,
  loadTokenizer,
  QWEN25_VL_PROCESSOR,
  tinyTokenizerDir,
} from '../tokenizer/index.js';
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

describe('images as vision tokens (a vision-language model: EpisodeContext with a vision processor)', () => {
  const qwen = loadQwenTokenizer();
  const PAD = qwen.tokenToId(IMAGE_PAD)!;
  const big = (v: number): RgbImage => ({ width: 280, height: 280, data: new Uint8Array(280 * 280 * 3).fill(v) });
  const perImage = imageGrid(280, 280).tokens; // 10 x 10 after the 2x2 merge
  const reply = qwen.encode('<answer>Up</answer><|im_end|>');
  const qgen = { tokens: reply, logprobs: reply.map(() => -1), finishReason: 'stop' as const };
  const cfg = (maxContextTokens: number) =>
    agentConfig({ contextWindowMode: 'full', maxContextTokens, maxNewTokens: 20 });

  it('puts each image pad run in the prompt, never in the trained tokens, and turn 2 repeats turn 1 exactly', () => {
    const ctx = new EpisodeContext(qwen, cfg(4096), 'system', [qwen.eosTokenId], QWEN25_VL_PROCESSOR);
    const p1 = ctx.prompt(view(1, [big(1)]))!;
    ctx.respond(qgen);
    ctx.endTurn(['Up'], 0);
    const p2 = ctx.prompt(view(2, [big(2)]))!;
    expect(p1.filter((id) => id === PAD)).toHaveLength(perImage);
    expect(p2.filter((id) => id === PAD)).toHaveLength(2 * perImage);
    expect(p2.slice(0, p1.length)).toEqual(p1); // append-only: what was sampled is what is trained
    ctx.respond(qgen);
    const [sample] = ctx.samples({ episode: 0, group: 0, tag: 't' }, { episodeScore: 1 });
    const padAt = sample!.ids.flatMap((id, i) => (id === PAD ? [i] : []));
    expect(padAt).toHaveLength(2 * perImage);
    for (const i of padAt) expect(sample!.lossMask[i]).toBe(0);
    expect(sample!.lossMask.filter((m) => m === 1)).toHaveLength(2 * reply.length);
  });

  it('counts image tokens against maxContextTokens: a prompt that fits as text ends the episode with its image', () => {
    const text = new EpisodeContext(qwen, cfg(4096), 'system').prompt(view(1, [big(1)]))!;
    const limit = text.length + 20 + perImage - 1; // room for the text and the reply, one token short for the image
    expect(new EpisodeContext(qwen, cfg(limit), 'system').prompt(view(1, [big(1)]))).toBeDefined();
    const vlm = new EpisodeContext(qwen, cfg(limit), 'system', [qwen.eosTokenId], QWEN25_VL_PROCESSOR);
    expect(vlm.prompt(view(1, [big(1)]))).toBeUndefined();
    expect(vlm.truncations).toBe(1);
  });
});
