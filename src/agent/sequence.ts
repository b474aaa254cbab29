// Exact token bookkeeping: a token chain grows by the chat template's new text (encoded, not trained
// on) and by the ids the model sampled (kept verbatim, trained on), so it always equals what the model saw.
import { ConfigError, type RgbImage } from '../util/index.js';
import type { Tokenizer } from '../tokenizer/index.js';

/**
 * One training sequence, token-aligned: entry t of every per-token array describes token `ids[t]`.
 * `lossMask[t] = 1` exactly where `ids[t]` was sampled by the policy in this very context;
 * `logprobs[t]` is its log-probability at sampling (0 elsewhere); `rewards[t]` is non-zero only on
 * loss tokens (the reward positions); `turnIds[t]` is the 0-based turn of a sampled token, -1 for
 * template/observation tokens. (Engines score position t -> token t+1; shift by one when comparing.)
 */
export interface TrainingSample {
  ids: number[];
  lossMask: number[];
  logprobs: number[];
  rewards: number[];
  turnIds: number[];
  /** The sequence-level score (sum of `rewards`), what outcome estimators (GRPO, RLOO) use. */
  score: number;
  /** Index of the episode in the rollout batch. */
  episode: number;
  /** Group index in the batch (same seed = same group); outcome advantages normalise within it. */
  group: number;
  tag: string;
  /** Turns (0-based) trained on in this sample. */
  turns: number[];
  /** Prompt tokens + sampled tokens in the sample. */
  length: number;
  /**
   * The images its `<|image_pad|>` runs stand for, every turn's in order (a vision-language model's context); absent
   * when it holds none. Their tokens are prompt tokens: loss mask 0.
   */
  images?: readonly RgbImage[];
}

/** A chain under construction. */
export class TokenChain {
  ids: number[] = [];
  logprobs: number[] = [];
  lossMask: number[] = [];
  turnIds: number[] = [];
  /** The images of the rendered conversation, in order (a vision-language prompt's vision tokens stand for them). */
  images: readonly RgbImage[] = [];
  /** The text the chat template sees for `ids` (assistant turns as their decoded content). */
  text = '';
  /** Turn -> position of its last sampled token, for turns trainable in this chain. */
  readonly lastPos = new Map<number, number>();
  /** The template text a sampled stop token already stands for (e.g. '<|im_end|>'). */
  private pendingClose: string | undefined;

  /** @param windowStart the first turn whose messages this chain's context holds */
  constructor(readonly windowStart: number) {}

  clone(): TokenChain {
    const c = new TokenChain(this.windowStart);
    c.ids = this.ids.slice();
    c.logprobs = this.logprobs.slice();
    c.lossMask = this.lossMask.slice();
    c.turnIds = this.turnIds.slice();
    c.images = this.images;
    c.text = this.text;
    for (const [k, v] of this.lastPos) c.lastPos.set(k, v);
    c.pendingClose = this.pendingClose;
    return c;
  }

  /**
   * Append the tokens of `rendered` (the chat template over the whole conversation, generation
   * prompt and prefill included) beyond what the chain holds. `images`: the images of that conversation in order,
   * when its vision tokens stand for some (they extend the chain's, as the text does). Throws when the template is not
   * append-only (its rendering of this turn does not extend its rendering of the last).
   */
  extendPrompt(rendered: string, tokenizer: Tokenizer, images: readonly RgbImage[] = []): void {
    if (!rendered.startsWith(this.text)) {
      let i = 0;
      while (i < this.text.length && rendered[i] === this.text[i]) i++;
      throw new ConfigError(
        `The chat template of \`${tokenizer.name}\` is not append-only: rendering the next turn changes earlier text ` +
          `at character ${i} (${JSON.stringify(this.text.slice(i, i + 40))} became ${JSON.stringify(rendered.slice(i, i + 40))}). ` +
          "Exact multi-turn token bookkeeping needs a template that renders history verbatim (e.g. Qwen2.5's; Qwen3's drops earlier reasoning): pass another `chatTemplate`.",
      );
    }
    if (images.length < this.images.length || this.images.some((im, i) => images[i] !== im))
      throw new ConfigError(
        `The chain holds ${this.images.length} image(s) and the next rendering's ${images.length} do not start with them: the conversation's images must only grow, in order, as its text does (a bug in the prompt builder).`,
      );
    this.images = images.slice();
    let delta = rendered.slice(this.text.length);
    if (this.pendingClose !== undefined && delta.startsWith(this.pendingClose))
      delta = delta.slice(this.pendingClose.length);
    this.pendingClose = undefined;
    this.text = rendered;
    if (delta.length === 0) return;
    for (const id of tokenizer.encode(delta)) {
      this.ids.push(id);
      this.logprobs.push(0);
      this.lossMask.push(0);
      this.turnIds.push(-1);
    }
  }

  /**
   * Append the sampled ids of `turn`. `content` is their text as the template will show it (the
   * decoded ids without a final stop token); `closeText` is the decoded stop token when one was
   * sampled, which stands in for the template's own closing text. `trainable=false` keeps the ids
   * as context only (mask 0), for turns sampled under another context.
   */
  appendSampled(
    turn: number,
    ids: readonly number[],
    logprobs: readonly number[],
    content: string,
    closeText: string | undefined,
    trainable: boolean,
  ): void {
    for (let i = 0; i < ids.length; i++) {
      this.ids.push(ids[i]!);
      this.logprobs.push(trainable ? (logprobs[i] ?? 0) : 0);
      this.lossMask.push(trainable ? 1 : 0);
      this.turnIds.push(turn);
    }
    if (trainable && ids.length > 0) this.lastPos.set(turn, this.ids.length - 1);
    this.text += content;
    this.pendingClose = closeText;
  }

  /** Turn `turn`'s sampled ids into context (mask 0): its sample was already taken. */
  freezeTurn(turn: number): void {
    if (!this.lastPos.has(turn)) return;
    for (let t = 0; t < this.ids.length; t++) {
      if (this.turnIds[t] === turn) {
        this.lossMask[t] = 0;
        this.logprobs[t] = 0;
      }
    }
    this.lastPos.delete(turn);
  }

  /** Whether any token is trainable. */
  get trainable(): boolean {
    return this.lastPos.size > 0;
  }
}

/**
 * Place rewards on a chain and return it as a training sample: with `turnRewards`, each trainable
 * turn's reward goes on its last sampled token; otherwise `episodeScore` goes on the last trainable
 * token. Returns undefined when nothing in the chain is trainable.
 */
export function chainToSample(
  chain: TokenChain,
  meta: { episode: number; group: number; tag: string },
  reward: { episodeScore: number } | { turnRewards: readonly number[] },
): TrainingSample | undefined {
  if (!chain.trainable) return undefined;
  const rewards = new Array<number>(chain.ids.length).fill(0);
  const turns = [...chain.lastPos.keys()].sort((a, b) => a - b);
  if ('turnRewards' in reward) {
    for (const t of turns) {
      const p = chain.lastPos.get(t)!;
      rewards[p] = rewards[p]! + (reward.turnRewards[t] ?? 0);
    }
  } else {
    rewards[Math.max(...chain.lastPos.values())] = reward.episodeScore;
  }
  return {
    ids: chain.ids.slice(),
    lossMask: chain.lossMask.slice(),
    logprobs: chain.logprobs.slice(),
    rewards,
    turnIds: chain.turnIds.slice(),
    score: rewards.reduce((a, b) => a + b, 0),
    ...meta,
    turns,
    length: chain.ids.length,
    ...(chain.images.length > 0 ? { images: chain.images.slice() } : {}),
  };
}
