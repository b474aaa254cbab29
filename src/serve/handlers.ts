// The two generation endpoints: a parsed request -> prompt ids -> batched jobs -> an OpenAI response body (streamed
// responses are stream.ts).
import type { Tokenizer, VisionProcessor } from '../tokenizer/index.js';
import { sequenceBatch, type Engine, type Generation } from '../engine/index.js';
import { Batcher, type BatchJob } from './batcher.js';
import { ApiError, type RgbImage } from '../util/index.js';
import { checkPromptBytes } from './prompt-bytes.js';
import type { ChatRequest, CompletionRequest } from './requests.js';
import {
  chatLogprobs,
  completionLogprobs,
  echoLogprobs,
  completionText,
  usage,
  type Answer,
  type ChoiceResult,
} from './responses.js';
import type { TopLogprobsSource } from './top-logprobs.js';

/** What the handlers need from the server. */
export interface HandlerContext {
  tokenizer: Tokenizer;
  batcher: Batcher;
  modelName: string;
  /** Prompt + completion tokens must fit in this. */
  contextLength: number;
  /** Most tokens one choice may generate. */
  maxTokens: number;
  /** Ids that end a generation (the tokenizer's EOS). */
  stopTokenIds: number[];
  topLogprobs: TopLogprobsSource | undefined;
  /** Scores prompts for `echo` (a teacher-forced pass of the served policy). */
  engine: Pick<Engine, 'forward'>;
  /** A vision-language model's image processor: chat images become its vision tokens and reach the engine. */
  vision: VisionProcessor | undefined;
}

/**
 * The handlers' context over `engine`: one batcher, the tokenizer's EOS as the stop id, up to `maxTokens` (1024) a
 * choice.
 */
export function handlerContext(
  engine: Engine,
  o: {
    tokenizer: Tokenizer;
    modelName: string;
    contextLength: number;
    maxTokens?: number;
    maxBatchSize?: number;
    batchWindowMs?: number;
    seed?: number;
    topLogprobs?: TopLogprobsSource;
  },
): HandlerContext {
  const batcher = new Batcher(engine, {
    maxBatchSize: o.maxBatchSize,
    seed: o.seed ?? 0,
    batchWindowMs: o.batchWindowMs,
  });
  return {
    tokenizer: o.tokenizer,
    batcher,
    modelName: o.modelName,
    contextLength: o.contextLength,
    maxTokens: o.maxTokens ?? 1024,
    stopTokenIds: [o.tokenizer.eosTokenId],
    topLogprobs: o.topLogprobs,
    engine,
    vision: engine.vision,
  };
}

/**
 * Chat prompt ids: the checkpoint's chat template over the messages, with the assistant header appended (each image
 * as its vision tokens in full, for a vision-language model).
 */
export function chatPromptIds(ctx: HandlerContext, req: ChatRequest): number[] {
  let text: string;
  try {
    text = ctx.tokenizer.applyChatTemplate(req.messages, {
      addGenerationPrompt: true,
      extra: req.templateKwargs,
      ...(ctx.vision ? { vision: ctx.vision } : {}),
    });
  } catch (err) {
    throw new ApiError(
      400,
      `The chat template failed on these messages: ${(err as Error).message}`,
      'invalid_request_error',
      'messages',
    );
  }
  checkPromptBytes(text, ctx.tokenizer, ctx.contextLength, 'messages'); // before the tokenizer's work, not after it
  return ctx.tokenizer.encode(text);
}

/** Completion prompt ids: token ids as given, texts tokenized after their length is bounded (see prompt-bytes.ts). */
export function completionPromptIds(ctx: HandlerContext, req: CompletionRequest): number[][] {
  for (const p of req.prompts)
    if (typeof p === 'string') checkPromptBytes(p, ctx.tokenizer, ctx.contextLength, 'prompt');
  return req.prompts.map((p) => (typeof p === 'string' ? ctx.tokenizer.encode(p) : p));
}

/**
 * The batcher jobs of a request's choices (prompts x n, choice k of prompt i at i*n + k), after its limits are checked;
 * a chat request's images (every message's, in order) go with each of its jobs.
 */
export function choiceJobs(ctx: HandlerContext, req: ChatRequest | CompletionRequest, prompts: number[][]): BatchJob[] {
  if (req.topLogprobs > 0 && !ctx.topLogprobs)
    throw new ApiError(
      400,
      'This engine does not provide top_logprobs; ask for logprobs without alternatives (top_logprobs 0).',
      'invalid_request_error',
      'top_logprobs',
      'unsupported_parameter',
    );
  const images = requestImages(req);
  if (images.length > 0 && req.topLogprobs > 0)
    throw new ApiError(
      400,
      `top_logprobs are scored by a text-only pass, which would read this request's ${images.length} image(s) as text; ask for logprobs without alternatives (top_logprobs 0) with images.`,
      'invalid_request_error',
      'top_logprobs',
      'unsupported_parameter',
    );
  const maxes = prompts.map((p, i) => {
    if (p.length === 0)
      throw new ApiError(
        400,
        `Prompt ${i} encodes to no tokens; give a prompt with text.`,
        'invalid_request_error',
        'prompt',
      );
    const room = ctx.contextLength - p.length;
    const want = req.maxTokens ?? Math.min(ctx.maxTokens, room);
    if (want > ctx.maxTokens)
      throw new ApiError(
        400,
        `max_tokens ${want} is above this server's limit of ${ctx.maxTokens} tokens per choice; ask for fewer (or restart the server with a higher --max-tokens).`,
        'invalid_request_error',
        'max_tokens',
      );
    if (want > room || room < (want > 0 ? 1 : 0)) {
      throw new ApiError(
        400,
        `This model's context is ${ctx.contextLength} tokens; the prompt has ${p.length} and ${req.maxTokens === undefined ? 'no room is left' : `max_tokens asks for ${want}`}. Shorten the prompt or lower max_tokens.`,
        'invalid_request_error',
        'messages',
        'context_length_exceeded',
      );
    }
    return want;
  });
  return prompts.flatMap((prompt, i) =>
    Array.from({ length: req.n }, (_, k) => ({
      prompt,
      maxTokens: maxes[i]!,
      temperature: req.temperature,
      topP: req.topP,
      topK: req.topK,
      stopTokenIds: ctx.stopTokenIds,
      stopStrings: req.stop,
      ...(images.length > 0 ? { images } : {}),
      // n > 1 with a seed: choice k gets seed + k, so the choices differ and each stays reproducible. Greedy
      // choices need no seed and batch with anything.
      ...(req.seed !== undefined && req.temperature > 0 ? { seed: (req.seed + k) >>> 0 } : {}),
    })),
  );
}

/** The images a request's prompt shows, in the order of their vision tokens: every chat message's, in order. */
export function requestImages(req: ChatRequest | CompletionRequest): RgbImage[] {
  return req.kind === 'chat' ? req.messages.flatMap((m) => m.images ?? []) : [];
}

/** Run every choice of a request (prompts x n) through the batcher. */
export async function runChoices(
  ctx: HandlerContext,
  req: ChatRequest | CompletionRequest,
  prompts: number[][],
  signal: AbortSignal,
): Promise<ChoiceResult[]> {
  const jobs = choiceJobs(ctx, req, prompts);
  const echo = req.kind === 'completion' && req.echo;
  // `max_tokens: 0` (echo only): nothing to generate, the prompt is only scored
  const gens =
    req.maxTokens === 0
      ? jobs.map((): Generation => ({ tokens: [], logprobs: [], finishReason: 'length' }))
      : await Promise.all(ctx.batcher.submitAll(jobs, signal));
  const scored = echo ? await promptLogprobs(ctx.engine, prompts) : undefined;
  return Promise.all(
    gens.map(async (gen, index) => {
      const prompt = jobs[index]!.prompt;
      const top =
        req.topLogprobs > 0 && gen.tokens.length > 0
          ? await ctx.topLogprobs!(prompt, gen.tokens, req.topLogprobs)
          : req.topLogprobs > 0
            ? []
            : undefined;
      const text = completionText(ctx.tokenizer, gen, ctx.stopTokenIds, req.stop);
      return {
        index,
        prompt,
        gen,
        text,
        top,
        ...(scored ? { promptLogprobs: scored[Math.floor(index / req.n)]! } : {}),
      };
    }),
  );
}

/** log p(token t | tokens < t) of each prompt at temperature 1 (null for its first token), one teacher-forced pass. */
export async function promptLogprobs(
  engine: Pick<Engine, 'forward'>,
  prompts: readonly number[][],
): Promise<(number | null)[][]> {
  const batch = sequenceBatch(prompts);
  const { logprobs } = await engine.forward(batch, { role: 'policy' });
  return prompts.map((p, b) => p.map((_, t) => (t === 0 ? null : logprobs[b * batch.T + t]!)));
}

/** What every response of one request starts with: its id, creation time and the model it names. */
export interface ResponseHead {
  id: string;
  created: number;
  model: string;
}

/** The body of a non-streamed chat completion; a choice with tool calls finishes with `tool_calls`. */
export function chatBody(
  head: ResponseHead,
  req: ChatRequest,
  tok: Tokenizer,
  prompt: number[],
  choices: ChoiceResult[],
  answers: Answer[],
): Record<string, unknown> {
  return {
    ...head,
    object: 'chat.completion',
    choices: choices.map((c, i) => {
      const { content, toolCalls } = answers[i]!;
      return {
        index: c.index,
        message: { role: 'assistant', content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
        logprobs: req.logprobs ? chatLogprobs(tok, c) : null,
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : c.gen.finishReason,
        ...(req.returnTokenIds ? { token_ids: c.gen.tokens } : {}),
      };
    }),
    usage: usage([prompt], choices),
    ...(req.returnTokenIds ? { prompt_token_ids: prompt } : {}),
  };
}

/** The body of a non-streamed completion. */
export function completionBody(
  head: ResponseHead,
  req: CompletionRequest,
  tok: Tokenizer,
  prompts: number[][],
  choices: ChoiceResult[],
): Record<string, unknown> {
  return {
    ...head,
    object: 'text_completion',
    choices: choices.map((c) => ({
      index: c.index,
      text: req.echo ? tok.decode(c.prompt) + c.text : c.text,
      logprobs: req.logprobs ? (req.echo ? echoLogprobs(tok, c) : completionLogprobs(tok, c)) : null,
      finish_reason: c.gen.finishReason,
      ...(req.returnTokenIds ? { prompt_token_ids: c.prompt, token_ids: c.gen.tokens } : {}),
    })),
    usage: usage(prompts, choices),
  };
}
