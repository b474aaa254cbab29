// Training samples from an episode's recorded calls. The rule: a call whose prompt ids begin with an earlier
// call's prompt + completion ids, token for token, continues that call's sequence (one multi-turn sample, loss
// on the sampled tokens only); a call that extends no sequence (the agent rewrote, trimmed or re-rendered its
// history) starts a new one. With images (a vision-language policy), the call's images must also begin with the
// sequence's, pixel for pixel: equal ids with other pixels at the same `<|image_pad|>` runs are another prompt. Every
// sample of an episode carries the episode's reward on its last sampled token, and the images of its last call.
import type { TrainingSample } from '../agent/index.js';
import type { RgbImage } from '../util/index.js';
import type { CallRecord } from './episodes.js';

/** One sequence built from calls: ids with per-token loss mask, log-probs and the call each sampled token came from. */
export interface CallChain {
  ids: number[];
  lossMask: number[];
  logprobs: number[];
  /** Index of the call that sampled token t; -1 on prompt, tool-result and template tokens. */
  callIds: number[];
  /** The calls (by `index`) merged into this chain, in order. */
  calls: number[];
  /** The images its `<|image_pad|>` runs stand for, in order (its last call's); empty for text. */
  images: readonly RgbImage[];
}

/** True when `prompt` starts with all of `prefix`. */
export function extendsIds(prompt: readonly number[], prefix: readonly number[]): boolean {
  if (prompt.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prompt[i] !== prefix[i]) return false;
  return true;
}

/** True when `images` start with all of `prefix`, pixel for pixel. */
export function extendsImages(images: readonly RgbImage[], prefix: readonly RgbImage[]): boolean {
  if (images.length < prefix.length) return false;
  return prefix.every((p, i) => {
    const im = images[i]!;
    return im === p || (im.width === p.width && im.height === p.height && bytes(im.data).equals(p.data));
  });
}

const bytes = (a: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength); // a view, not a copy

/**
 * Merge an episode's calls (in arrival order) into chains. Each call continues the most recently extended chain
 * whose ids its prompt extends and whose images its images begin with (so two interleaved conversations of one agent
 * stay two chains), else opens one.
 * A call with an empty completion adds nothing to train on and is skipped.
 */
export function chainCalls(calls: readonly CallRecord[]): CallChain[] {
  const chains: CallChain[] = [];
  let order: CallChain[] = []; // most recently extended first
  for (const call of [...calls].sort((a, b) => a.index - b.index)) {
    if (call.completionIds.length === 0) continue;
    if (call.logprobs.length !== call.completionIds.length)
      throw new Error(
        `Call ${call.index} has ${call.completionIds.length} completion ids but ${call.logprobs.length} log-probs; a call record keeps one log-prob per sampled id.`,
      );
    const images = call.images ?? [];
    let chain = order.find((c) => extendsIds(call.promptIds, c.ids) && extendsImages(images, c.images));
    if (!chain) {
      chain = { ids: [], lossMask: [], logprobs: [], callIds: [], calls: [], images: [] };
      chains.push(chain);
    }
    chain.images = images;
    const added = call.promptIds.length - chain.ids.length; // the tool results and template text since the last call
    chain.ids.push(...call.promptIds.slice(chain.ids.length), ...call.completionIds);
    chain.lossMask.push(...new Array<number>(added).fill(0), ...call.completionIds.map(() => 1));
    chain.logprobs.push(...new Array<number>(added).fill(0), ...call.logprobs);
    chain.callIds.push(...new Array<number>(added).fill(-1), ...call.completionIds.map(() => call.index));
    chain.calls.push(call.index);
    order = [chain, ...order.filter((c) => c !== chain)];
  }
  return chains;
}

/**
 * The training samples of one episode: one per chain, the episode's `reward` on each chain's last sampled token
 * (outcome reward, as the built-in loop's `episodeScore`). Turns are the episode's, as in the built-in loop: the call
 * at position k of `calls` (arrival order) is turn k, in whichever chain it landed, so a split episode's records and
 * per-turn advantages line up with its calls. A chain's sample holds its images (its last call's, which begin with
 * every earlier call's), for the engine's teacher-forced pass over its `<|image_pad|>` runs.
 */
export function samplesFromCalls(
  calls: readonly CallRecord[],
  reward: number,
  meta: { episode: number; group: number; tag: string },
): TrainingSample[] {
  const turnOf = new Map([...calls].sort((a, b) => a.index - b.index).map((c, k) => [c.index, k]));
  return chainCalls(calls).map((chain) => {
    const rewards = new Array<number>(chain.ids.length).fill(0);
    rewards[chain.lossMask.lastIndexOf(1)] = reward;
    return {
      ids: chain.ids,
      lossMask: chain.lossMask,
      logprobs: chain.logprobs,
      rewards,
      turnIds: chain.callIds.map((c) => (c < 0 ? -1 : turnOf.get(c)!)),
      score: reward,
      ...meta,
      turns: chain.calls.map((c) => turnOf.get(c)!),
      length: chain.ids.length,
      ...(chain.images.length > 0 ? { images: chain.images } : {}),
    };
  });
}
