// What the gateway records per episode: every chat call with the exact prompt ids the template rendered and the
// ids and log-probs the policy sampled, plus the reward the agent program reported.
import type { RgbImage } from '../util/index.js';

/** One answered chat call, in the order the calls arrived. */
export interface CallRecord {
  /** Arrival order within the episode (0, 1, ...). */
  index: number;
  /** The prompt as the engine saw it: the chat template's rendering of the request, tokenized. */
  promptIds: number[];
  /**
   * The images the prompt's `<|image_pad|>` runs stand for, in order, as the engine got them (decoded from the
   * request's `image_url` parts); absent for a text prompt. Training samples take them (see samples.ts).
   */
  images?: readonly RgbImage[];
  /** The ids the policy sampled (a final stop token included), and log p of each under the sampling policy. */
  completionIds: number[];
  logprobs: number[];
  finishReason: 'stop' | 'length';
  /** The reply's text (what the agent received, before tool-call parsing). */
  text: string;
  /**
   * The request's `messages` and `tools` as the agent sent them (a task verifier reads them): an image part keeps its
   * data: URL as sent, base64 and all (a PNG, the only kind the gateway reads; the body limit bounds it).
   */
  messages: unknown[];
  tools: unknown[] | null;
}

/** One episode's record: its calls, its reward (undefined until reported) and what was refused. */
export interface EpisodeLog {
  id: string;
  calls: CallRecord[];
  reward: number | undefined;
  /** Calls refused for going over the per-episode limit (a flooding program). */
  refusedCalls: number;
  /** Reward reports refused (409) because the episode already had one. */
  duplicateRewards: number;
}

/** An episode taking calls: its record so far, calls started (answered or not) and its call limit. */
export interface OpenEpisode extends EpisodeLog {
  started: number;
  maxCalls: number;
}

/** The episodes a gateway serves: open ones take calls and a reward; closed ones are gone (404). */
export class EpisodeBook {
  private readonly open = new Map<string, OpenEpisode>();

  /** Start taking calls for `id` (at most `maxCalls`); ids are unique among open episodes. */
  start(id: string, maxCalls: number): void {
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(id))
      throw new Error(
        `Episode id ${JSON.stringify(id)} is not URL-safe; use letters, digits, '_', '.', '-' (at most 128).`,
      );
    if (this.open.has(id)) throw new Error(`Episode ${id} is already open; close it before reusing its id.`);
    this.open.set(id, { id, calls: [], reward: undefined, refusedCalls: 0, duplicateRewards: 0, started: 0, maxCalls });
  }

  get(id: string): OpenEpisode | undefined {
    return this.open.get(id);
  }

  /** Stop taking calls for `id` and return its record, calls in arrival order. Calls still in flight are not in it. */
  finish(id: string): EpisodeLog {
    const ep = this.open.get(id);
    if (!ep) throw new Error(`Episode ${id} is not open.`);
    this.open.delete(id);
    return {
      id,
      calls: [...ep.calls].sort((a, b) => a.index - b.index),
      reward: ep.reward,
      refusedCalls: ep.refusedCalls,
      duplicateRewards: ep.duplicateRewards,
    };
  }
}
