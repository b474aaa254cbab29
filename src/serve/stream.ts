// Streamed responses (server-sent events) of chat and legacy completions, for `ragen serve` and the training gateway
// alike. Each choice's tokens go out as the engine samples them (or, with top_logprobs, replayed once generation and
// the alternatives are done): a chunk per token that carries text, log-probs or ids, the text from StreamText (a
// character's bytes never split) and, with tools, held back where a call may begin; then each choice's rest, its tool
// calls and its finish; the usage if asked; [DONE]. The deltas sum to the non-streamed response's content.
import type { ServerResponse } from 'node:http';
import type { Generation } from '../engine/index.js';
import { EventStream } from '../util/index.js';
import { choiceJobs, type HandlerContext, type ResponseHead } from './handlers.js';
import type { ChatRequest, CompletionRequest } from './requests.js';
import { chatLogprobs, completionText, usage, type Answer, type ChoiceResult } from './responses.js';
import { StreamText } from './stream-text.js';
import type { TopLogprob } from './top-logprobs.js';

/** A filter on a choice's streamed text: `push` a stable piece, get what may go out now (all of it, by default). */
export interface TextHold {
  push(piece: string): string;
  /** The text let out so far. */
  readonly sentText: string;
}

/** The hold of a reply that holds nothing back. */
class NoHold implements TextHold {
  sentText = '';
  push(piece: string): string {
    this.sentText += piece;
    return piece;
  }
}

/**
 * Run a streaming request's choices through the batcher and stream their tokens as they are sampled. The request's
 * limits are checked before the headers go out (a bad request still gets its status); returns the finished choices
 * for `ChoiceStream.finish`.
 */
export async function streamIncremental(
  ctx: HandlerContext,
  stream: ChoiceStream,
  req: ChatRequest | CompletionRequest,
  prompts: number[][],
  signal: AbortSignal,
): Promise<ChoiceResult[]> {
  const jobs = choiceJobs(ctx, req, prompts);
  stream.open(jobs.map((j) => j.prompt));
  const gens = ctx.batcher.submitAll(
    jobs.map((job, index) => ({ ...job, onToken: (id: number, logprob: number) => stream.token(index, id, logprob) })),
    signal,
  ); // one abort listener for all choices
  return Promise.all(
    gens.map(async (pending, index): Promise<ChoiceResult> => {
      const gen = await pending;
      const text = completionText(ctx.tokenizer, gen, ctx.stopTokenIds, req.stop);
      return { index, prompt: jobs[index]!.prompt, gen, text, top: undefined };
    }),
  );
}

/** The events of one streamed response: `open`, then `token` per sampled id of a choice, then `finish`. */
export class ChoiceStream {
  private readonly events: EventStream;
  private readonly chat: boolean;
  private readonly head: Record<string, unknown>;
  private readonly choices: { text: StreamText; hold: TextHold; tokens: number; offset: number; prompt: number[] }[] =
    [];

  constructor(
    res: ServerResponse,
    private readonly ctx: HandlerContext,
    private readonly req: ChatRequest | CompletionRequest,
    head: ResponseHead,
    /** A hold per choice (the gateway's, where a tool call may begin); none by default. */
    private readonly hold: () => TextHold = () => new NoHold(),
  ) {
    this.events = new EventStream(res);
    this.chat = req.kind === 'chat';
    this.head = { ...head, object: this.chat ? 'chat.completion.chunk' : 'text_completion' };
  }

  /** Send the headers and, for chat, each choice's role (the prompt of choice k is `prompts[k]`). */
  open(prompts: number[][]): void {
    this.events.open();
    prompts.forEach((prompt, index) => {
      this.choices.push({
        text: new StreamText(this.ctx.tokenizer, this.ctx.stopTokenIds, this.req.stop),
        hold: this.hold(),
        tokens: 0,
        offset: 0, // legacy logprobs' text_offset: the decoded tokens before this one, as the whole response counts them
        prompt,
      });
      if (this.chat)
        this.send(
          { index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
          this.req.returnTokenIds ? { prompt_token_ids: prompt } : {},
        );
    });
  }

  /** A sampled id of choice `index`: a chunk with the text it makes certain, when it carries anything. */
  token(index: number, id: number, logprob: number, top?: TopLogprob[]): void {
    const c = this.choices[index]!;
    const piece = c.hold.push(c.text.push(id));
    const { req, ctx } = this;
    const ids = req.returnTokenIds ? { token_ids: [id] } : {};
    const first = c.tokens++ === 0;
    if (!piece && !req.logprobs && !req.returnTokenIds) return;
    if (this.chat) {
      const one: Generation = { tokens: [id], logprobs: [logprob], finishReason: 'length' };
      const lp = req.logprobs
        ? chatLogprobs(ctx.tokenizer, { index, prompt: c.prompt, gen: one, text: '', top: top && [top] })
        : null;
      return this.send({ index, delta: piece ? { content: piece } : {}, logprobs: lp, finish_reason: null, ...ids });
    }
    const token = ctx.tokenizer.decode([id]);
    const alternatives = top && [Object.fromEntries(top.map((a) => [ctx.tokenizer.decode([a.id]), a.logprob]))];
    const lp = req.logprobs
      ? { tokens: [token], token_logprobs: [logprob], top_logprobs: alternatives ?? null, text_offset: [c.offset] }
      : null;
    c.offset += token.length;
    this.send({
      index,
      text: piece,
      logprobs: lp,
      finish_reason: null,
      ...ids,
      ...(first && req.returnTokenIds ? { prompt_token_ids: c.prompt } : {}),
    });
  }

  /** Stream finished choices' tokens now (their alternatives included): generation ran before the headers. */
  replay(choices: readonly ChoiceResult[]): void {
    this.open(choices.map((c) => c.prompt));
    for (const c of choices) c.gen.tokens.forEach((id, i) => this.token(c.index, id, c.gen.logprobs[i]!, c.top?.[i]));
  }

  /**
   * The end: per choice the content not yet sent (`answers[k].content` is what the non-streamed response says), each
   * tool call in one delta and the finish reason; the usage if asked; then [DONE].
   */
  finish(prompts: number[][], choices: readonly ChoiceResult[], answers: readonly Answer[]): void {
    choices.forEach((c, index) => {
      const { content, toolCalls } = answers[index]!;
      const sent = this.choices[index]!.hold.sentText;
      const whole = content ?? '';
      if (!whole.startsWith(sent))
        throw new Error(`streamed text ${JSON.stringify(sent)} is not a prefix of the answer ${JSON.stringify(whole)}`);
      const rest = whole.slice(sent.length);
      const finish = toolCalls.length > 0 ? 'tool_calls' : c.gen.finishReason;
      if (!this.chat) return this.send({ index, text: rest, logprobs: null, finish_reason: finish });
      if (rest) this.send(delta(index, { content: rest }));
      toolCalls.forEach((call, k) => this.send(delta(index, { tool_calls: [{ index: k, ...call }] })));
      this.send(delta(index, {}, finish));
    });
    if (this.req.includeUsage) this.events.send({ ...this.head, choices: [], usage: usage(prompts, choices) });
    this.events.end('[DONE]');
  }

  private send(choice: Record<string, unknown>, extra: Record<string, unknown> = {}): void {
    this.events.send({ ...this.head, choices: [choice], ...extra });
  }
}

function delta(index: number, d: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return { index, delta: d, logprobs: null, finish_reason: finishReason };
}
