// One episode's context manager: the chat of every turn (full, limited window, or single turn), the
// token chain the model really saw, context-length truncation by whole turns, the policy-written summary of the turns
// that left the window (`summaryMemory`), and the training samples.
import type { Generation } from '../engine/index.js';
import { IMAGE_PLACEHOLDER, type ChatMessage, type Tokenizer, type VisionProcessor } from '../tokenizer/index.js';
import type { RgbImage } from '../util/index.js';
import type { AgentConfig } from './config.js';
import { prefillText, singleTurnPrompt, turnPrompt, type TurnSummary, type TurnView } from './prompt.js';
import { TokenChain, chainToSample, type TrainingSample } from './sequence.js';

/** What opens the window's first user message under `summaryMemory`, before the policy's summary. */
export const SUMMARY_HEADER = 'Summary of the earlier turns (your own notes): ';
/** The request that closes the summary prompt. */
export const SUMMARY_INSTRUCTION =
  'These turns are leaving your context. Summarise what matters from them for the rest of the task in one or two short sentences (plain text, no tags).';

/** A finished or current turn as the context holds it. */
interface TurnEntry {
  userText: string;
  ids: number[];
  logprobs: number[];
  /** The sampled ids decoded, without a final stop token (the assistant message is prefill + this). */
  decoded: string;
  closeText: string | undefined;
  summary: TurnSummary;
  /** The turn's user message with its images, for a chat API (`visualUser`); absent when it had none. */
  visual?: ChatMessage;
}

/** What `respond` reports about one sampled response. */
export interface ResponseRecord {
  /** The decoded sampled text (final stop token removed), without the prefilled tag. */
  decoded: string;
  /** What the parser reads: prefill + decoded. */
  fullText: string;
}

/** Builds the prompts and samples of one episode. Call `prompt`, `respond`, `endTurn` once per turn. */
export class EpisodeContext {
  private readonly turns: TurnEntry[] = [];
  private chain: TokenChain | undefined;
  private readonly sealed: TokenChain[] = [];
  private minStart = 0;
  private current:
    | { view: TurnView; userText: string; messages: ChatMessage[]; windowStart: number; visual?: ChatMessage }
    | undefined;
  /** Whole turns dropped from the context to fit `maxContextTokens`, counting a turn whose prompt alone did not fit. */
  truncations = 0;
  private readonly prefill: string;
  private readonly stopIds: Set<number>;
  /** `summaryMemory`: the policy's summary of turns [0, summaryUpTo), shown before the window's first turn. */
  private summary: { text: string; upTo: number } | undefined;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly cfg: AgentConfig,
    /** The system message. */
    readonly system: string,
    stopTokenIds: readonly number[] = [tokenizer.eosTokenId],
    /**
     * A vision-language model's image processor: its prompts then show each turn's images as vision tokens (prompt
     * tokens: never trained, and counted against maxContextTokens). Without it the prompt ids are text-only and the
     * images reach only chat-API policies (`promptMessages`).
     */
    private readonly vision?: VisionProcessor,
  ) {
    this.prefill = prefillText(cfg);
    this.stopIds = new Set(stopTokenIds);
  }

  /** The 0-based index of the turn being prompted next. */
  get turnIndex(): number {
    return this.turns.length;
  }

  /** The user message of a turn as `full`/`limited_multi_turn` show it (independent of the window). */
  userText(view: TurnView): string {
    return turnPrompt(view, this.cfg);
  }

  /** The user message the model's prompt shows for a turn: with its images for a vision-language model. */
  private userMessage(text: string, visual: ChatMessage | undefined): ChatMessage {
    return this.vision && visual ? visual : { role: 'user', content: text };
  }

  private messages(w: number, upto: number, current: ChatMessage): ChatMessage[] {
    const msgs: ChatMessage[] = [{ role: 'system', content: this.system }];
    // the summary opens the window's first user message when it covers exactly the turns before the window
    const memo = this.summary && this.summary.upTo === w && w > 0 ? `${SUMMARY_HEADER}${this.summary.text}\n\n` : '';
    for (let t = w; t < upto; t++) {
      const e = this.turns[t]!;
      const user = this.userMessage(e.userText, e.visual);
      msgs.push(t === w ? withMemo(user, memo) : user, { role: 'assistant', content: this.prefill + e.decoded });
    }
    msgs.push(upto === w ? withMemo(current, memo) : current);
    return msgs;
  }

  /** The window start of the next turn's prompt by `maxContextWindow` alone (before any context-length drop). */
  private windowStart(): number {
    const n = this.turns.length;
    const k = this.cfg.maxContextWindow ?? Infinity;
    return Math.max(this.minStart, this.cfg.contextWindowMode === 'full' ? 0 : n - k + 1);
  }

  /**
   * `summaryMemory`: the chat asking the policy to summarise the turns that the next prompt's window leaves out (and
   * the summary before them), or undefined when nothing new left the window. Answer it with `setSummary`.
   */
  summaryRequest(): { ids: number[]; messages: ChatMessage[]; upTo: number } | undefined {
    if (!this.cfg.summaryMemory) return undefined;
    const w = this.windowStart();
    if (w <= 0 || (this.summary && this.summary.upTo >= w)) return undefined;
    const from = this.summary ? this.summary.upTo : 0;
    let history = this.summary ? `${SUMMARY_HEADER}${this.summary.text}\n\n` : '';
    for (let t = from; t < w; t++) {
      const e = this.turns[t]!;
      history += `${e.userText}\nYour answer: ${this.prefill}${e.decoded}\n\n`;
    }
    const messages: ChatMessage[] = [
      { role: 'system', content: this.system },
      { role: 'user', content: `${history}${SUMMARY_INSTRUCTION}` },
    ];
    const ids = this.tokenizer.encode(this.tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true }));
    return { ids, messages, upTo: w };
  }

  /** Record the policy's summary of turns [0, upTo) (its sampled ids; a final stop token is dropped). */
  setSummary(upTo: number, gen: Generation): void {
    const ids = gen.tokens;
    const last = ids[ids.length - 1];
    const content = last !== undefined && this.stopIds.has(last) ? ids.slice(0, -1) : ids;
    this.summary = { text: this.tokenizer.decode(content).trim(), upTo };
  }

  /** The current summary's text (`summaryMemory`), undefined before the first. */
  get summaryText(): string | undefined {
    return this.summary?.text;
  }

  private render(msgs: ChatMessage[]): string {
    const vision = this.vision ? { vision: this.vision } : {};
    return this.tokenizer.applyChatTemplate(msgs, { addGenerationPrompt: true, ...vision }) + this.prefill;
  }

  /** The images `render(msgs)`'s vision tokens stand for, in order (none without a vision processor). */
  private imagesOf(msgs: ChatMessage[]): RgbImage[] {
    return this.vision ? msgs.flatMap((m) => m.images ?? []) : [];
  }

  /** Extend `chain` by the rendering of `msgs`, with their images. */
  private extend(chain: TokenChain, msgs: ChatMessage[]): void {
    chain.extendPrompt(this.render(msgs), this.tokenizer, this.imagesOf(msgs));
  }

  /** A new chain holding turns [w, n) as context (mask 0) and the prompt of turn n. */
  private replay(w: number, n: number, current: ChatMessage): TokenChain {
    const chain = new TokenChain(w);
    for (let t = w; t < n; t++) {
      const e = this.turns[t]!;
      this.extend(chain, this.messages(w, t, this.userMessage(e.userText, e.visual)));
      chain.appendSampled(t, e.ids, e.logprobs, e.decoded, e.closeText, false);
    }
    this.extend(chain, this.messages(w, n, current));
    return chain;
  }

  /**
   * The prompt ids of the next turn, or undefined when even the current turn alone leaves fewer
   * than `maxNewTokens` tokens of `maxContextTokens` (the episode must end).
   */
  prompt(view: TurnView): number[] | undefined {
    const n = this.turns.length;
    const mode = this.cfg.contextWindowMode;
    let w = this.windowStart();
    for (;;) {
      let candidate: TokenChain;
      let messages: ChatMessage[];
      const summaries = this.turns.slice(w, n).map((e) => e.summary);
      const textOf = (v: TurnView) =>
        mode === 'single_turn' ? singleTurnPrompt(summaries, n, v, this.cfg) : this.userText(v);
      const userText = textOf(view);
      const visual = this.visualUser(view, textOf);
      const current = this.userMessage(userText, visual);
      if (mode === 'single_turn') {
        candidate = new TokenChain(n);
        messages = [{ role: 'system', content: this.system }, current];
        this.extend(candidate, messages);
      } else {
        messages = this.messages(w, n, current);
        if (this.chain && this.chain.windowStart === w) {
          candidate = this.chain.clone();
          this.extend(candidate, messages);
        } else {
          candidate = this.replay(w, n, current);
        }
      }
      if (candidate.ids.length + this.cfg.maxNewTokens <= this.cfg.maxContextTokens) {
        if (
          this.chain &&
          this.chain !== candidate &&
          candidate.windowStart !== this.chain.windowStart &&
          this.chain.trainable
        )
          this.sealed.push(this.chain);
        this.chain = candidate;
        this.current = { view, userText, messages, windowStart: w, ...(visual ? { visual } : {}) };
        return candidate.ids.slice();
      }
      if (w >= n) {
        // The current turn's prompt alone does not fit: it is dropped too, so a `context_full` end
        // always counts (an episode whose first prompt is too long would otherwise report 0).
        this.truncations++;
        return undefined;
      }
      w++;
      this.minStart = w;
      this.truncations++;
    }
  }

  /** The images the last `prompt`'s vision tokens stand for, in order (none without a vision processor). */
  get promptImages(): readonly RgbImage[] {
    return this.chain?.images ?? [];
  }

  /**
   * The chat messages the last `prompt` rendered (before the prefilled tag), for policies that take messages
   * instead of token ids (a chat API). Undefined between `respond` and the next `prompt`.
   */
  get promptMessages(): readonly ChatMessage[] | undefined {
    const cur = this.current;
    if (!cur) return undefined;
    const single = this.cfg.contextWindowMode === 'single_turn';
    const earlier = single ? [] : this.turns.slice(cur.windowStart);
    if (!cur.visual && !earlier.some((e) => e.visual)) return cur.messages;
    // The same messages with each turn's images after its state (the prompt ids, text-only, leave them out).
    const msgs: ChatMessage[] = [{ role: 'system', content: this.system }];
    for (const e of earlier)
      msgs.push(e.visual ?? { role: 'user', content: e.userText }, {
        role: 'assistant',
        content: this.prefill + e.decoded,
      });
    msgs.push(cur.visual ?? { role: 'user', content: cur.userText });
    return msgs;
  }

  /** The user message of `view` with its images, each at a placeholder after the state text; undefined without any. */
  private visualUser(view: TurnView, text: (v: TurnView) => string): ChatMessage | undefined {
    const images = view.images;
    if (!images || images.length === 0) return undefined;
    const state = `${view.state}\n${IMAGE_PLACEHOLDER.repeat(images.length)}`;
    return { role: 'user', content: text({ ...view, state }), images };
  }

  /** Record the policy's generation for the prompted turn; returns its text. */
  respond(gen: Generation): ResponseRecord {
    const chain = this.chain;
    if (!chain || !this.current) throw new Error('EpisodeContext.respond called before prompt');
    const ids = gen.tokens;
    const last = ids[ids.length - 1];
    const stopped = last !== undefined && this.stopIds.has(last);
    const contentIds = stopped ? ids.slice(0, -1) : ids;
    const closeText = stopped ? this.tokenizer.decode([last]) : undefined;
    const decoded = this.tokenizer.decode(contentIds);
    const n = this.turns.length;
    chain.appendSampled(n, ids, gen.logprobs, decoded, closeText, true);
    this.turns.push({
      userText: this.current.userText,
      ids: ids.slice(),
      logprobs: gen.logprobs.slice(),
      decoded,
      closeText,
      summary: { turn: this.current.view.turn, state: this.current.view.state, actions: [], reward: 0 },
      ...(this.current.visual ? { visual: this.current.visual } : {}),
    });
    if (this.cfg.contextWindowMode !== 'full') {
      // One sample per turn: seal a copy, keep the live chain as context for the next turn.
      this.sealed.push(chain.clone());
      chain.freezeTurn(n);
    }
    this.current = undefined;
    return { decoded, fullText: this.prefill + decoded };
  }

  /** Record what the turn did (shown in `single_turn` summaries). */
  endTurn(actions: readonly string[], reward: number): void {
    const e = this.turns[this.turns.length - 1];
    if (e) e.summary = { ...e.summary, actions: actions.slice(), reward };
  }

  /**
   * The training samples of the episode, rewards placed: with `turnRewards` (use_turn_scores), each
   * turn's reward on its last sampled token; else `episodeScore` on each sample's last sampled token.
   */
  samples(
    meta: { episode: number; group: number; tag: string },
    reward: { episodeScore: number } | { turnRewards: readonly number[] },
  ): TrainingSample[] {
    const chains = [...this.sealed];
    if (this.chain && this.chain.trainable && !chains.includes(this.chain)) chains.push(this.chain);
    const out: TrainingSample[] = [];
    for (const c of chains) {
      const s = chainToSample(c, meta, reward);
      if (s) out.push(s);
    }
    return out;
  }
}

/** A user message with the summary memory's text before its own (`summaryMemory`); unchanged without one. */
const withMemo = (m: ChatMessage, memo: string): ChatMessage => (memo ? { ...m, content: memo + m.content } : m);
