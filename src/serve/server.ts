// `ragen serve`'s HTTP server (node:http): OpenAI's routes over any Engine, with the limits that keep a
// hostile or careless client from taking it down (body size, max tokens, concurrent requests, API key).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Engine } from '../engine/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { Batcher, ClientGone, type BatcherStats } from './batcher.js';
import { longestTokenBytes } from './prompt-bytes.js';
import { readJsonBody } from './body.js';
import { ApiError } from './errors.js';
import {
  chatBody,
  chatPromptIds,
  completionPromptIds,
  completionBody,
  runChoices,
  streamChoices,
  handlerContext,
  type HandlerContext,
} from './handlers.js';
import { parseChatRequest, parseCompletionRequest } from './requests.js';
import { streamIncremental } from './stream.js';
import type { TopLogprobsSource } from './top-logprobs.js';

/** What `OpenAIServer` serves and its limits. */
export interface ServeOptions {
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
}

/**
 * An OpenAI-compatible server: GET /v1/models, POST /v1/chat/completions, POST /v1/completions; plus GET /health and
 * GET /stats (the batcher's counters: batches, jobs, largest batch, tokens; requests in flight and waiting).
 */
export class OpenAIServer {
  readonly http: Server;
  private readonly batcher: Batcher;
  private readonly ctx: HandlerContext;
  private inFlight = 0;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(private readonly options: ServeOptions) {
    this.ctx = handlerContext(options.engine, options);
    this.batcher = this.ctx.batcher;
    this.http = createServer((req, res) => {
      res.on('error', (err) => this.log(`response error (client gone?): ${err.message}`));
      req.on('error', (err) => this.log(`request error: ${err.message}`));
      this.handle(req, res).catch((err: unknown) => this.fail(res, err));
    });
  }

  /** What the batcher did so far (batches, jobs, largest batch, tokens). */
  get stats(): BatcherStats {
    return this.batcher.stats;
  }

  /** Start listening; resolves with the bound port and base URL (…/v1). */
  listen(port = 8000, host = '127.0.0.1'): Promise<{ port: number; url: string }> {
    longestTokenBytes(this.options.tokenizer); // the prompt byte bound's one pass over the vocabulary, before any request waits on it
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, host, () => {
        this.http.off('error', reject);
        const p = (this.http.address() as AddressInfo).port;
        resolve({ port: p, url: `http://${host.includes(':') ? `[${host}]` : host}:${p}/v1` });
      });
    });
  }

  /** Stop accepting connections and close idle ones. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
    if (path === '/health') return this.json(res, 200, { status: 'ok' });
    if (path === '/stats')
      return this.json(res, 200, { ...this.batcher.stats, inFlight: this.inFlight, waiting: this.batcher.waiting });
    if (this.options.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.options.apiKey}`) {
      throw new ApiError(
        401,
        'Incorrect or missing API key: send `Authorization: Bearer <key>` with the key the server was started with.',
        'authentication_error',
        null,
        'invalid_api_key',
      );
    }
    if (path === '/v1/models') {
      if (req.method !== 'GET') throw methodNotAllowed(req, 'GET');
      return this.json(res, 200, { object: 'list', data: [this.modelCard()] });
    }
    if (path === `/v1/models/${this.options.modelName}`) return this.json(res, 200, this.modelCard());
    if (path !== '/v1/chat/completions' && path !== '/v1/completions')
      throw new ApiError(
        404,
        `Unknown route ${req.method} ${path}; this server has GET /v1/models, POST /v1/chat/completions, POST /v1/completions.`,
        'invalid_request_error',
        null,
        'unknown_route',
      );
    if (req.method !== 'POST') throw methodNotAllowed(req, 'POST');
    const maxConcurrent = this.options.maxConcurrent ?? 512;
    if (this.inFlight >= maxConcurrent) {
      res.setHeader('Retry-After', '1');
      throw new ApiError(
        429,
        `The server is answering ${this.inFlight} requests, its limit (--max-concurrent ${maxConcurrent}); retry shortly.`,
        'rate_limit_error',
        null,
        'rate_limit_exceeded',
      );
    }
    this.inFlight++;
    try {
      await this.generate(req, res, path === '/v1/chat/completions');
    } finally {
      this.inFlight--;
    }
  }

  private async generate(req: IncomingMessage, res: ServerResponse, chat: boolean): Promise<void> {
    const body = await this.readJson(req);
    const limits = { maxChoices: this.options.maxChoices ?? 64, vocabSize: this.options.vocabSize };
    const parsed = chat ? parseChatRequest(body, limits) : parseCompletionRequest(body, limits);
    if (parsed.model !== this.options.modelName) {
      throw new ApiError(
        404,
        `The model \`${parsed.model}\` does not exist; this server serves \`${this.options.modelName}\`.`,
        'invalid_request_error',
        'model',
        'model_not_found',
      );
    }
    const prompts = parsed.kind === 'chat' ? [chatPromptIds(this.ctx, parsed)] : completionPromptIds(this.ctx, parsed);
    // A client that hangs up before its batch starts takes its jobs out of the queue.
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    // Token by token, except with top_logprobs: the alternatives come from a teacher-forced pass after generation.
    if (parsed.stream && parsed.topLogprobs === 0)
      return streamIncremental(this.ctx, res, parsed, prompts, abort.signal);
    const choices = await runChoices(this.ctx, parsed, prompts, abort.signal);
    if (res.destroyed) return;
    if (parsed.stream) {
      res.writeHead(200, {
        'Content-Type': 'text/event-stream',
        'Cache-Control': 'no-cache',
        Connection: 'keep-alive',
      });
      streamChoices(this.ctx, res, parsed, prompts, choices);
    } else {
      this.json(
        res,
        200,
        parsed.kind === 'chat'
          ? chatBody(this.ctx, parsed, prompts[0]!, choices)
          : completionBody(this.ctx, parsed, prompts, choices),
      );
    }
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

  private readJson(req: IncomingMessage): Promise<unknown> {
    return readJsonBody(req, this.options.maxBodyBytes ?? 1 << 20);
  }

  private json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (res.destroyed || res.headersSent) return;
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  }

  /** Answer a failure: an ApiError as itself, anything else as a 500 whose message says what broke. */
  private fail(res: ServerResponse, err: unknown): void {
    if (err instanceof ClientGone || res.destroyed) {
      this.log(`client gone: ${(err as Error)?.message ?? String(err)}`);
      return;
    }
    const e =
      err instanceof ApiError
        ? err
        : new ApiError(
            500,
            `The server failed on this request: ${(err as Error)?.message ?? String(err)}`,
            'server_error',
            null,
            'internal_error',
          );
    if (e.status >= 500) this.log(`500: ${(err as Error)?.stack ?? String(err)}`);
    else if (e.status === 413 || e.status === 429) this.log(`${e.status}: ${e.message}`);
    if (res.headersSent) {
      // Mid-stream: the status is gone; say it in the stream and end it.
      if (!res.destroyed) res.end(`data: ${JSON.stringify(e.body())}\n\n`);
      return;
    }
    // After a 413 the rest of the body is not read: close the connection rather than drain it.
    this.json(res, e.status, e.body(), e.status === 413 ? { Connection: 'close' } : {});
  }
}

function methodNotAllowed(req: IncomingMessage, allowed: string): ApiError {
  return new ApiError(
    405,
    `${req.method} is not allowed here; use ${allowed}.`,
    'invalid_request_error',
    null,
    'method_not_allowed',
  );
}
