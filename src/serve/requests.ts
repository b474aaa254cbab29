// Parsing and validating OpenAI request bodies (chat completions, completions) into one plain form.
// Follows OpenAI's API reference for field names and ranges, plus vLLM's extensions `top_k`,
// `return_token_ids` and `chat_template_kwargs`; unknown fields are ignored, unsupported known ones refused. The legacy
// completions' `echo` returns the prompt's log-probs too (what a distillation teacher or an evaluation harness scores).
import type { ChatMessage } from '../tokenizer/index.js';
import { ApiError, badParam } from '../util/index.js';
import { contentOfParts } from './image-parts.js';

/** What every generation request asks, after defaults. */
export interface SamplingRequest {
  model: string;
  /** Most tokens per choice; undefined = as many as the context and the server's limit allow. */
  maxTokens: number | undefined;
  /** 0 = greedy. */
  temperature: number;
  topP: number;
  /** 0 = off. */
  topK: number;
  /** Makes a sampled request reproducible: it runs in a batch of its own (see Batcher). */
  seed: number | undefined;
  /** Stop sequences (not included in the returned text; the token ids keep what was sampled). */
  stop: string[];
  /** Choices per prompt. */
  n: number;
  logprobs: boolean;
  /** Alternatives per position (0 = none). */
  topLogprobs: number;
  /** Return the prompt's and the completion's token ids (vLLM's `return_token_ids`). */
  returnTokenIds: boolean;
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the token usage. */
  includeUsage: boolean;
}

/** A chat completion request. */
export interface ChatRequest extends SamplingRequest {
  kind: 'chat';
  messages: ChatMessage[];
  /** Extra variables for the chat template (vLLM's `chat_template_kwargs`, e.g. enable_thinking). */
  templateKwargs: Record<string, unknown>;
}

/** A (legacy) completion request: one or more prompts, each text or token ids. */
export interface CompletionRequest extends SamplingRequest {
  kind: 'completion';
  prompts: (string | number[])[];
  /**
   * OpenAI's `echo`: the response's text and log-probs start with the prompt's (the first prompt token's log-prob is
   * null: nothing precedes it). With `max_tokens: 0` nothing is generated: the prompt is only scored.
   */
  echo: boolean;
}

/** Limits the parser enforces. */
export interface RequestLimits {
  /** Most choices (prompts x n) in one request. */
  maxChoices: number;
  /** Token ids must lie in [0, vocabSize). */
  vocabSize: number;
}

type Body = Record<string, unknown>;

/** Parse a chat completion body; throws ApiError (400) naming the bad field. */
export function parseChatRequest(body: unknown, limits: RequestLimits): ChatRequest {
  const b = asObject(body);
  const raw = b['messages'];
  if (!Array.isArray(raw) || raw.length === 0)
    throw badParam('messages', raw, 'Give a non-empty array of {role, content} messages.');
  const messages = raw.map((m, i) => chatMessage(m, i));
  const logprobs = optBool(b, 'logprobs') ?? false;
  const topLogprobs = optInt(b, 'top_logprobs', 0, 20) ?? 0;
  if (topLogprobs > 0 && !logprobs)
    throw badParam('top_logprobs', topLogprobs, '`top_logprobs` needs `logprobs: true`.');
  const kwargs = b['chat_template_kwargs'];
  if (kwargs !== undefined && kwargs !== null && (typeof kwargs !== 'object' || Array.isArray(kwargs)))
    throw badParam('chat_template_kwargs', kwargs, 'Give an object of template variables.');
  const maxTokens =
    optInt(b, 'max_completion_tokens', 1, Number.MAX_SAFE_INTEGER) ??
    optInt(b, 'max_tokens', 1, Number.MAX_SAFE_INTEGER);
  refuseUnsupported(b, ['tools', 'functions', 'response_format', 'audio']);
  const req: ChatRequest = {
    kind: 'chat',
    messages,
    templateKwargs: (kwargs ?? {}) as Record<string, unknown>,
    ...sampling(b, maxTokens, logprobs, topLogprobs, limits),
  };
  checkChoices(req.n, req.n, limits);
  return req;
}

/** Parse a completion body; throws ApiError (400) naming the bad field. */
export function parseCompletionRequest(body: unknown, limits: RequestLimits): CompletionRequest {
  const b = asObject(body);
  const prompts = promptList(b['prompt'], limits.vocabSize);
  const echo = optBool(b, 'echo') ?? false;
  if (echo && b['stream'] === true)
    throw new ApiError(
      400,
      '`echo` is not supported with `stream`; send the scoring request without `stream`.',
      'invalid_request_error',
      'echo',
      'unsupported_parameter',
    );
  if (b['suffix'] !== undefined && b['suffix'] !== null)
    throw new ApiError(
      400,
      '`suffix` is not supported by this server.',
      'invalid_request_error',
      'suffix',
      'unsupported_parameter',
    );
  const top = optInt(b, 'logprobs', 0, 5); // the legacy API: an integer count of alternatives, null = off
  const maxTokens = optInt(b, 'max_tokens', 0, Number.MAX_SAFE_INTEGER) ?? 16; // OpenAI's documented default
  if (maxTokens === 0 && !echo)
    throw badParam(
      'max_tokens',
      0,
      '`max_tokens: 0` only scores the prompt: it needs `echo: true`; else give 1 or more.',
    );
  const req: CompletionRequest = {
    kind: 'completion',
    prompts,
    echo,
    ...sampling(b, maxTokens, top !== undefined, top ?? 0, limits),
  };
  checkChoices(prompts.length * req.n, req.n, limits);
  return req;
}

function sampling(
  b: Body,
  maxTokens: number | undefined,
  logprobs: boolean,
  topLogprobs: number,
  limits: RequestLimits,
): SamplingRequest {
  const model = b['model'];
  if (typeof model !== 'string' || model === '')
    throw badParam('model', model, 'Give the model name (GET /v1/models lists it).');
  const temperature = optNumber(b, 'temperature', 0, 2) ?? 1;
  const topP = optNumber(b, 'top_p', 0, 1) ?? 1;
  if (topP === 0) throw badParam('top_p', 0, 'Give a number in (0, 1].');
  const topK = optInt(b, 'top_k', -1, 1 << 30) ?? 0;
  const seed = optInt(b, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  for (const key of ['presence_penalty', 'frequency_penalty', 'repetition_penalty'] as const) {
    const v = optNumber(b, key, -2, 2);
    if (v !== undefined && v !== 0 && !(key === 'repetition_penalty' && v === 1)) {
      throw new ApiError(
        400,
        `\`${key}\` is not supported by this server (got ${v}); leave it out or at its neutral value.`,
        'invalid_request_error',
        key,
        'unsupported_parameter',
      );
    }
  }
  const bias = b['logit_bias'];
  if (bias !== undefined && bias !== null && (typeof bias !== 'object' || Object.keys(bias).length > 0)) {
    throw new ApiError(
      400,
      '`logit_bias` is not supported by this server; leave it out.',
      'invalid_request_error',
      'logit_bias',
      'unsupported_parameter',
    );
  }
  const streamOptions = b['stream_options'];
  if (
    streamOptions !== undefined &&
    streamOptions !== null &&
    (typeof streamOptions !== 'object' || Array.isArray(streamOptions))
  )
    throw badParam('stream_options', streamOptions, 'Give an object like {"include_usage": true}.');
  return {
    model,
    maxTokens,
    temperature,
    topP,
    topK: topK < 0 ? 0 : topK,
    seed: seed === undefined ? undefined : seed >>> 0,
    stop: stopList(b['stop']),
    n: optInt(b, 'n', 1, limits.maxChoices) ?? 1, // the bound the error names is the one the server keeps
    logprobs,
    topLogprobs,
    returnTokenIds: optBool(b, 'return_token_ids') ?? false,
    stream: optBool(b, 'stream') ?? false,
    includeUsage: (streamOptions as { include_usage?: unknown } | undefined)?.include_usage === true,
  };
}

function checkChoices(choices: number, n: number, limits: RequestLimits): void {
  if (choices > limits.maxChoices)
    throw badParam(
      'n',
      n,
      `This request asks for ${choices} choices; this server answers at most ${limits.maxChoices} per request.`,
    );
}

function asObject(body: unknown): Body {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ApiError(
      400,
      `The request body must be a JSON object, got ${Array.isArray(body) ? 'an array' : body === null ? 'null' : typeof body}.`,
    );
  return body as Body;
}

function chatMessage(m: unknown, i: number): ChatMessage {
  const param = `messages[${i}]`;
  if (typeof m !== 'object' || m === null) throw badParam(param, m, 'Each message is an object {role, content}.');
  const { role, content } = m as { role?: unknown; content?: unknown };
  if (typeof role !== 'string' || !['system', 'developer', 'user', 'assistant', 'tool'].includes(role)) {
    throw badParam(`${param}.role`, role, 'Give one of system, developer, user, assistant, tool.');
  }
  if (typeof content === 'string') return { role, content };
  if ((content === null || content === undefined) && role === 'assistant') return { role, content: '' };
  if (Array.isArray(content)) {
    const { content: text, images } = contentOfParts(content, `${param}.content`);
    return images.length > 0 ? { role, content: text, images } : { role, content: text };
  }
  throw badParam(`${param}.content`, content, 'Give a string or an array of text and image_url parts.');
}

function promptList(p: unknown, vocabSize: number): (string | number[])[] {
  const isIds = (x: unknown): x is number[] =>
    Array.isArray(x) && x.length > 0 && x.every((t) => typeof t === 'number');
  let list: unknown[];
  if (typeof p === 'string' || isIds(p)) list = [p];
  else if (Array.isArray(p) && p.length > 0) list = p;
  else throw badParam('prompt', p, 'Give a string, an array of token ids, or a non-empty array of either.');
  return list.map((x, i) => {
    if (typeof x === 'string') {
      if (x === '') throw badParam(`prompt[${i}]`, x, 'A prompt needs at least one token.');
      return x;
    }
    if (!isIds(x)) throw badParam(`prompt[${i}]`, x, 'Give a string or a non-empty array of token ids.');
    for (const id of x)
      if (!Number.isInteger(id) || id < 0 || id >= vocabSize)
        throw badParam(`prompt[${i}]`, id, `Token ids are integers in [0, ${vocabSize}).`);
    return x;
  });
}

function stopList(s: unknown): string[] {
  if (s === undefined || s === null) return [];
  const list = typeof s === 'string' ? [s] : s;
  if (!Array.isArray(list) || list.length > 4 || list.some((x) => typeof x !== 'string' || x === ''))
    throw badParam('stop', s, 'Give a non-empty string or up to 4 of them.');
  return list as string[];
}

function optNumber(b: Body, key: string, lo: number, hi: number): number | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi)
    throw badParam(key, v, `Give a number in [${lo}, ${hi}].`);
  return v;
}

function optInt(b: Body, key: string, lo: number, hi: number): number | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi)
    throw badParam(key, v, `Give an integer in [${lo}, ${hi === Number.MAX_SAFE_INTEGER ? 'inf' : hi}].`);
  return v;
}

function optBool(b: Body, key: string): boolean | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw badParam(key, v, 'Give true or false.');
  return v;
}

function refuseUnsupported(b: Body, keys: string[]): void {
  for (const key of keys) {
    const v = b[key];
    if (v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0)) {
      throw new ApiError(
        400,
        `\`${key}\` is not supported by this server; leave it out.`,
        'invalid_request_error',
        key,
        'unsupported_parameter',
      );
    }
  }
}
