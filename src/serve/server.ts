// The OpenAI-compatible server (node:http) of `ragen serve` and of the training gateway, which is this server in a
// mode: routes under a prefix per scope (an episode), a request transform (the tool-call lowering) and an `onCall`
// hook (recording each call). The limits keep a hostile or careless client from taking it down (body size, max tokens,
// concurrent requests, API key).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Engine, Generation } from '../engine/index.js';
import type { ChatMessage, Tokenizer } from '../tokenizer/index.js';
import {
  ApiError,
  clientGone,
  closeServer,
  httpServer,
  listen,
  pathOf,
  readJson,
  sendJson,
  type RgbImage,
} from '../util/index.js';
import { ClientGone, type BatcherStats } from './batcher.js';
import {
  chatBody,
  chatPromptIds,
  completionBody,
  completionPromptIds,
  handlerContext,
  requestImages,
  runChoices,
  type HandlerContext,
  type ResponseHead,
} from './handlers.js';
import { longestTokenBytes } from './prompt-bytes.js';
import { parseChatRequest, parseCompletionRequest, type SamplingRequest } from './requests.js';
import type { Answer } from './responses.js';
import { ChoiceStream, streamIncremental, type TextHold } from './stream.js';
import type { TopLogprobsSource } from './top-logprobs.js';

/** Routes under a prefix per scope (the gateway's `/episodes/<secret>` per episode) instead of at the root. */
export interface RoutePrefix<S> {
  /** The scope `path` names and the path under its prefix (`/v1/...`); throws ApiError (404) when it names none. */
  resolve(path: string): { scope: S; rest: string };
  /** Admit one generation call in `scope` (or throw, e.g. a 429 past its call limit); returns its index there. */
  admit(scope: S): number;
  /** The scope in messages: `episode s1-e0`. */
  label(scope: S): string;
  /** POST routes of the scope's own besides OpenAI's, by path under the prefix: the gateway's `/reward`. */
  routes?: Record<string, (req: IncomingMessage, res: ServerResponse, scope: S) => Promise<void>>;
}

/** A chat request as a transform leaves it: the body the OpenAI parser reads, and how its answers are shaped. */
export interface Transformed {
  /** The body the OpenAI parser reads (the gateway: tools lowered into the messages). */
  body: Record<string, unknown>;
  /** Sampling the scope fixes whatever the request says (the trainer's rollout settings, a call's seed). */
  sampling?: Partial<Pick<SamplingRequest, 'temperature' | 'topP' | 'topK' | 'seed'>>;
  /** Whether the prompt shows tools (recorded with the call). */
  tools: boolean;
  /** A choice's text as its reply (content and tool calls). @default the text as content, no calls */
  answer?: (text: string, choice: number) => Answer;
  /** A stream's hold per choice, keeping back text that may begin a tool call. @default none */
  hold?: () => TextHold;
}

/** Rewrites call `index` of `scope` before it is parsed: the gateway's tool-call lowering. Throws ApiError (400). */
export type RequestTransform<S> = (body: Record<string, unknown>, scope: S, index: number) => Transformed;

/** One answered choice, for `onCall` (the gateway records it for training). */
export interface AnsweredCall {
  /** The call's index in its scope (`RoutePrefix.admit`; in arrival order without a prefix). */
  index: number;
  /** The request body as the client sent it. */
  body: Record<string, unknown>;
  /** The prompt as the engine saw it, and what it sampled (a final stop token included). */
  promptIds: number[];
  /**
   * The images the engine got with the prompt, in the order of its vision tokens (decoded from the request's
   * `image_url` parts); empty for a text prompt.
   */
  images: readonly RgbImage[];
  gen: Generation;
  /** The reply's text before `answer` shaped it. */
  text: string;
  /** The transform's `tools`. */
  tools: boolean;
}

/** What `OpenAIServer` serves and its limits; `prefix`, `transform` and `onCall` make it the training gateway. */
export interface ServeOptions<S = undefined> {
  engine: Engine;
  tokenizer: Tokenizer;
  /** The id clients put in `model` (GET /v1/models lists it). */
  modelName: string;
  /** Prompt + completion tokens must fit (the model's max_position_embeddings). */
  contextLength: number;
  /** Prompt token ids must lie in [0, vocabSize). */
  vocabSize: number;
  /** Scores `top_logprobs`; without it such requests get a 400. */
  topLogprobs?: TopLogprobsSource;
  /** When set, requests need `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Largest request body. @default 1048576 (1 MiB) */
  maxBodyBytes?: number;
  /** Most tokens one choice may generate. @default 1024 */
  maxTokens?: number;
  /** Generation requests in flight at once; more get 429. @default 512 */
  maxConcurrent?: number;
  /** Most prompts per engine.generate call. @default 64 */
  maxBatchSize?: number;
  /** How long a batch waits for more requests before it starts (see Batcher). @default 5 */
  batchWindowMs?: number;
  /** Most choices (prompts x n) per request. @default 64 */
  maxChoices?: number;
  /** Seed of the batch seeds of unseeded sampled requests. @default 0 */
  seed?: number;
  /** One line per notable event (errors, refused requests); default: none. */
  log?: (line: string) => void;
  /** The server in messages. @default 'The server' */
  name?: string;
  /** Serve POST /v1/completions (the legacy API). @default true */
  completions?: boolean;
  /** Answer requests naming any model with this one (the gateway: the policy answers all). @default false */
  anyModel?: boolean;
  /** Routes under a prefix per scope; without it they sit at the root, beside GET /health and GET /stats. */
  prefix?: RoutePrefix<S>;
  /** Rewrites each chat request before it is parsed and shapes its answers. */
  transform?: RequestTransform<S>;
  /** Called with each answered choice before the answer goes out; a throw fails the call instead. */
  onCall?: (call: AnsweredCall, scope: S) => void;
  /** Sees every failed request's error first (the gateway notes the policy's own failures). */
  onError?: (err: unknown) => void;
}

/**
 * An OpenAI-compatible server: GET /v1/models, POST /v1/chat/completions, POST /v1/completions; plus GET /health and
 * GET /stats (the batcher's counters: batches, jobs, largest batch, tokens; requests in flight and waiting). POST
 * /v1/responses is a 404 that says how to point each agent framework at chat completions.
 */
export class OpenAIServer<S = undefined> {
  readonly http: Server;
  private readonly ctx: HandlerContext;
  private inFlight = 0;
  private calls = 0;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly name: string;

  constructor(private readonly options: ServeOptions<S>) {
    this.ctx = handlerContext(options.engine, options);
    this.name = options.name ?? 'The server';
    this.http = httpServer((req, res) => this.handle(req, res), {
      form: 'openai',
      name: this.name,
      log: (line) => this.log(line),
      isClientGone: (err) => err instanceof ClientGone,
      onError: options.onError,
      logRefused: options.prefix === undefined, // a scope's refusals are counted there (the gateway's episodes)
    });
  }

  /** What the batcher did so far (batches, jobs, largest batch, tokens). */
  get stats(): BatcherStats {
    return this.ctx.batcher.stats;
  }

  /** Start listening; resolves with the bound port and base URL (…/v1). */
  async listen(port = 8000, host = '127.0.0.1'): Promise<{ port: number; url: string }> {
    longestTokenBytes(this.options.tokenizer); // the prompt byte bound's one pass over the vocabulary, before any request waits on it
    const bound = await listen(this.http, port, host);
    return { port: bound, url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/v1` };
  }

  /** Stop accepting connections and close open ones. */
  close(): Promise<void> {
    return closeServer(this.http);
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req);
    const { prefix } = this.options;
    if (!prefix && path === '/health') return sendJson(res, 200, { status: 'ok' });
    if (!prefix && path === '/stats')
      return sendJson(res, 200, { ...this.stats, inFlight: this.inFlight, waiting: this.ctx.batcher.waiting });
    const { scope, rest } = prefix ? prefix.resolve(path) : { scope: undefined as S, rest: path };
    const where = prefix ? ` of ${prefix.label(scope)}` : '';
    const shown = prefix ? `…${rest}` : rest;
    if (this.options.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.options.apiKey}`) {
      throw new ApiError(
        401,
        'Incorrect or missing API key: send `Authorization: Bearer <key>` with the key the server was started with.',
        'authentication_error',
        null,
        'invalid_api_key',
      );
    }
    if (rest === '/v1/models') {
      if (req.method !== 'GET') throw methodNotAllowed(req, shown, 'GET');
      return sendJson(res, 200, { object: 'list', data: [this.modelCard()] });
    }
    if (rest === `/v1/models/${this.options.modelName}`) return sendJson(res, 200, this.modelCard());
    const own = prefix?.routes?.[rest];
    const completions = this.options.completions ?? true;
    const generates = rest === '/v1/chat/completions' || (completions && rest === '/v1/completions');
    if (!own && !generates) throw this.unknownRoute(req, shown, where);
    if (req.method !== 'POST') throw methodNotAllowed(req, shown, 'POST');
    if (own) return own(req, res, scope);
    const maxConcurrent = this.options.maxConcurrent ?? 512;
    if (this.inFlight >= maxConcurrent) {
      res.setHeader('Retry-After', '1');
      throw new ApiError(
        429,
        `${this.name} is answering ${this.inFlight} requests, its limit (max concurrent ${maxConcurrent}); retry shortly.`,
        'rate_limit_error',
        null,
        'rate_limit_exceeded',
      );
    }
    const index = prefix ? prefix.admit(scope) : this.calls++;
    this.inFlight++;
    try {
      await this.generate(req, res, rest === '/v1/chat/completions', scope, index, where);
    } finally {
      this.inFlight--;
    }
  }

  private unknownRoute(req: IncomingMessage, shown: string, where: string): ApiError {
    const p = this.options.prefix ? '…' : '';
    if (shown.endsWith('/v1/responses'))
      return new ApiError(
        404,
        `${this.name} serves chat completions, not the Responses API (POST ${shown}${where}); point your client at chat completions: the OpenAI Agents SDK with setOpenAIAPI('chat_completions'), the AI SDK with openai.chat(...), LangChain's ChatOpenAI with useResponsesApi: false.`,
        'invalid_request_error',
        null,
        'unknown_route',
      );
    const routes = [
      `GET ${p}/v1/models`,
      `POST ${p}/v1/chat/completions`,
      ...((this.options.completions ?? true) ? [`POST ${p}/v1/completions`] : []),
      ...Object.keys(this.options.prefix?.routes ?? {}).map((r) => `POST ${p}${r}`),
    ];
    return new ApiError(
      404,
      `Unknown route ${req.method} ${shown}${where}; ${this.name.toLowerCase()} has ${routes.join(', ')}.`,
      'invalid_request_error',
      null,
      'unknown_route',
    );
  }

  private async generate(
    req: IncomingMessage,
    res: ServerResponse,
    chat: boolean,
    scope: S,
    index: number,
    where: string,
  ): Promise<void> {
    const setting = this.options.prefix ? '' : ' (--max-body-bytes)';
    const raw = await readJson(req, this.options.maxBodyBytes ?? 1 << 20, setting);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new ApiError(
        400,
        `The request body must be a JSON object, got ${Array.isArray(raw) ? 'an array' : raw === null ? 'null' : typeof raw}.`,
      );
    const body = raw as Record<string, unknown>;
    const call: Transformed =
      chat && this.options.transform ? this.options.transform(body, scope, index) : { body, tools: false };
    const { modelName, anyModel } = this.options;
    const parseBody = anyModel ? { ...call.body, model: modelName } : call.body;
    const limits = { maxChoices: this.options.maxChoices ?? 64, vocabSize: this.options.vocabSize };
    const parsed = chat ? parseChatRequest(parseBody, limits) : parseCompletionRequest(parseBody, limits);
    if (parsed.model !== modelName) {
      throw new ApiError(
        404,
        `The model \`${parsed.model}\` does not exist; this server serves \`${modelName}\`.`,
        'invalid_request_error',
        'model',
        'model_not_found',
      );
    }
    if (parsed.kind === 'chat' && !this.ctx.vision) refuseImages(parsed.messages, modelName);
    const request = { ...parsed, ...call.sampling };
    const prompts =
      request.kind === 'chat' ? [chatPromptIds(this.ctx, request)] : completionPromptIds(this.ctx, request);
    // A client that hangs up takes its jobs out of the queue (and, streamed, stops their decoding).
    const signal = clientGone(res);
    const head: ResponseHead = {
      id: `${chat ? 'chatcmpl' : 'cmpl'}-${randomUUID()}`,
      created: Math.floor(Date.now() / 1000),
      model: typeof body['model'] === 'string' ? body['model'] : modelName,
    };
    let stream: ChoiceStream | undefined;
    let choices;
    if (request.stream) {
      stream = new ChoiceStream(res, this.ctx, request, head, call.hold);
      // Token by token, except with top_logprobs: the alternatives come from a teacher-forced pass after generation.
      if (request.topLogprobs === 0) choices = await streamIncremental(this.ctx, stream, request, prompts, signal);
      else {
        choices = await runChoices(this.ctx, request, prompts, signal);
        stream.replay(choices);
      }
    } else {
      choices = await runChoices(this.ctx, request, prompts, signal);
    }
    // An answer its client did not wait for is not recorded: the client never saw it (for training: no turn).
    if (signal.aborted)
      throw new ClientGone(
        `the client disconnected before call ${index}${where} was answered; the call is not recorded`,
      );
    const answers = choices.map((c) => call.answer?.(c.text, c.index) ?? { content: c.text, toolCalls: [] });
    const images = requestImages(request);
    for (const c of choices)
      this.options.onCall?.(
        { index, body, promptIds: c.prompt, images, gen: c.gen, text: c.text, tools: call.tools },
        scope,
      );
    if (stream) return stream.finish(prompts, choices, answers);
    const tok = this.ctx.tokenizer;
    sendJson(
      res,
      200,
      request.kind === 'chat'
        ? chatBody(head, request, tok, prompts[0]!, choices, answers)
        : completionBody(head, request, tok, prompts, choices),
    );
  }

  private modelCard(): Record<string, unknown> {
    return {
      id: this.options.modelName,
      object: 'model',
      created: this.created,
      owned_by: 'ragen',
      max_model_len: this.options.contextLength,
    };
  }
}

function methodNotAllowed(req: IncomingMessage, shown: string, allowed: string): ApiError {
  return new ApiError(
    405,
    `${req.method} is not allowed on ${shown}; use ${allowed}.`,
    'invalid_request_error',
    null,
    'method_not_allowed',
  );
}

/**
 * 400 for a request with images to a text-only model: it must not be handed image tokens it was never trained to read.
 */
function refuseImages(messages: readonly ChatMessage[], modelName: string): void {
  const i = messages.findIndex((m) => (m.images?.length ?? 0) > 0);
  if (i < 0) return;
  throw new ApiError(
    400,
    `The model \`${modelName}\` is text-only and cannot read the image in messages[${i}]. Send the messages without image_url parts (an env's text observation instead of its image), or serve a vision-language model (a Qwen2.5-VL checkpoint, on the local or the torch engine).`,
    'invalid_request_error',
    `messages[${i}].content`,
    'model_not_multimodal',
  );
}
