// The training gateway: an OpenAI-compatible server scoped by episode (`/episodes/<secret>/v1/...`, the secret given
// only to the episode's program) over the policy engine, built from `ragen serve`'s parser, handlers and batcher; it
// records every call token-exactly for training.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { NonFiniteLogitsError, type Engine } from '../engine/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import type { Generation } from '../engine/index.js';
import {
  ApiError,
  ClientGone,
  badParam,
  chatPromptIds,
  choiceJobs,
  completionText,
  parseChatRequest,
  readJsonBody,
  runChoices,
  handlerContext,
  type HandlerContext,
} from '../serve/index.js';
import { EpisodeBook, type EpisodeLog } from './episodes.js';
import { lowerToolMessages, parseToolCalls, toolChoiceOf } from './qwen-tools.js';
import { ChatStream } from './stream.js';
import { checkExposure } from '../util/index.js';

/** What a `Gateway` serves and its limits. */
export interface GatewayOptions {
  engine: Engine;
  tokenizer: Tokenizer;
  /** The model id `GET .../v1/models` lists; requests may name any model, the policy answers all. */
  modelName: string;
  /** Prompt + completion tokens must fit (the model's max_position_embeddings). */
  contextLength: number;
  vocabSize: number;
  /** Fixed sampling for every call (the trainer's rollout settings); when unset, the request's own parameters. */
  sampling?: { temperature: number; topP: number; topK: number };
  /** Largest request body. @default 1048576 (1 MiB) */
  maxBodyBytes?: number;
  /** Most tokens one call may generate. @default 1024 */
  maxTokens?: number;
  /**
   * Calls one episode may make unless `open` says otherwise; later ones get 429 and are counted as refused. @default
   * 256
   */
  maxCallsPerEpisode?: number;
  /** Generation requests in flight at once over all episodes; more get 429. @default 512 */
  maxConcurrent?: number;
  /** Most prompts per engine.generate call. @default 64 */
  maxBatchSize?: number;
  /** How long a batch waits for more requests. @default 5 */
  batchWindowMs?: number;
  /** Seed of the batch seeds of unseeded requests. @default 0 */
  seed?: number;
  log?: (line: string) => void;
}

/**
 * Episode-scoped OpenAI routes: GET /episodes/<secret>/v1/models, POST /episodes/<secret>/v1/chat/completions (with
 * `tools`; `stream` token by token where the engine reports decode steps), POST /episodes/<secret>/reward
 * `{"reward": number}`. `<secret>` is 192 random bits made by `open` and valid until `finish`: any other path gets 404
 * and is counted (`takeUnauthorized`), so a process that knows the port and the episode ids cannot write into an
 * episode.
 */
export class Gateway {
  readonly http: Server;
  private readonly ctx: HandlerContext;
  private readonly book = new EpisodeBook();
  private inFlight = 0;
  private base = '';
  /** Sampling seeds of open episodes that were given one (see `open`). */
  private readonly seeds = new Map<string, number>();
  /** Open episodes by the digest of their secret, and each id's digest (the secret itself is not kept). */
  private readonly routes = new Map<string, string>();
  private readonly digests = new Map<string, string>();
  /** See `takeEngineFailure`. */
  private engineFailure: Error | undefined;
  /** Requests that named no open episode since the last `takeUnauthorized`. */
  private unauthorized = 0;

  constructor(private readonly options: GatewayOptions) {
    this.ctx = handlerContext(options.engine, options);
    this.http = createServer((req, res) => {
      res.on('error', (err) => this.log(`response error (client gone?): ${err.message}`));
      req.on('error', (err) => this.log(`request error: ${err.message}`));
      this.handle(req, res).catch((err: unknown) => this.fail(res, err));
    });
    // No idle timeout: the local engine generates synchronously, and a connection's keep-alive timer that expires
    // while a generation holds the event loop fires before the call its agent sent meanwhile is read, resetting it
    // (ECONNRESET crashed the episode; which ones depended on the machine's load). Agents close their own idle
    // connections (fetch after 4 s), episode ends kill their processes, and `close` ends the rest.
    this.http.keepAliveTimeout = 0;
  }

  /** Start listening on loopback; resolves with the base URL (`http://127.0.0.1:<port>`). */
  listen(port = 0, host = '127.0.0.1'): Promise<string> {
    checkExposure({ server: 'the training gateway', host }); // never beyond loopback: it offers no --insecure
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, host, () => {
        this.http.off('error', reject);
        this.base = `http://${host}:${(this.http.address() as AddressInfo).port}`;
        resolve(this.base);
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }

  /**
   * Open episode `id` (its call limit `maxCalls`, default the gateway's); returns its OpenAI base URL
   * (`…/episodes/<secret>/v1`), reward URL and secret: a fresh 192-bit random token, the only way into the episode,
   * for its program alone (`id` names it in records, never in URLs). With `seed`, call k samples with seed
   * `callSeed(seed, k)` whatever the request says, so an episode's
   * tokens depend on its seed and prompts only, not on which calls of other episodes shared its batch (the trainer's
   * same seed -> same metrics; such calls run in batches of their own).
   */
  open(
    id: string,
    options: { maxCalls?: number; seed?: number } = {},
  ): { baseUrl: string; rewardUrl: string; secret: string } {
    if (this.base === '') throw new Error('Call listen() before opening episodes.');
    this.book.start(id, options.maxCalls ?? this.options.maxCallsPerEpisode ?? 256);
    if (options.seed !== undefined) this.seeds.set(id, options.seed);
    const secret = randomBytes(24).toString('base64url');
    const digest = digestOf(secret);
    this.routes.set(digest, id);
    this.digests.set(id, digest);
    return {
      baseUrl: `${this.base}/episodes/${secret}/v1`,
      rewardUrl: `${this.base}/episodes/${secret}/reward`,
      secret,
    };
  }

  /** Close episode `id` (its secret stops working: later calls get 404) and return what it recorded. */
  finish(id: string): EpisodeLog {
    this.seeds.delete(id);
    const digest = this.digests.get(id);
    if (digest !== undefined) this.routes.delete(digest);
    this.digests.delete(id);
    return this.book.finish(id);
  }

  /**
   * The first error of the policy itself (non-finite logits) since the last call, which the trainer must stop on as
   * the built-in loop does: the program only saw a 500, and its episode would otherwise pass as a crashed one.
   */
  takeEngineFailure(): Error | undefined {
    const e = this.engineFailure;
    this.engineFailure = undefined;
    return e;
  }

  /**
   * Requests that reached no open episode (no `/episodes/<secret>/` path, a wrong secret, or an episode that had
   * ended) since the last call; resets the count. The trainer reads it once per step.
   */
  takeUnauthorized(): number {
    const n = this.unauthorized;
    this.unauthorized = 0;
    return n;
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    const m = /^\/episodes\/([^/]+)(\/.*)$/.exec(path);
    if (!m) {
      this.unauthorized++;
      throw new ApiError(
        404,
        `Unknown route ${req.method} ${path}; the gateway answers under /episodes/<secret>/v1/ (the URL in OPENAI_BASE_URL).`,
        'invalid_request_error',
        null,
        'unknown_route',
      );
    }
    const [, secret, rest] = m as unknown as [string, string, string];
    const id = this.routes.get(digestOf(secret));
    const ep = id === undefined ? undefined : this.book.get(id);
    if (!ep) {
      this.unauthorized++;
      throw new ApiError(
        404,
        'No open episode has this URL (its episode ended, or the secret in it is wrong); use the OPENAI_BASE_URL your program was given.',
        'invalid_request_error',
        null,
        'episode_not_found',
      );
    }
    if (rest === '/v1/models')
      return this.json(res, 200, {
        object: 'list',
        data: [{ id: this.options.modelName, object: 'model', created: 0, owned_by: 'ragen' }],
      });
    if (req.method !== 'POST')
      throw new ApiError(
        405,
        `${req.method} is not allowed on ${rest}; use POST.`,
        'invalid_request_error',
        null,
        'method_not_allowed',
      );
    if (rest === '/reward') return this.reward(req, res, ep);
    if (rest === '/v1/responses')
      throw new ApiError(
        404,
        `The gateway serves chat completions, not the Responses API (POST …/v1/responses of episode ${ep.id}); point your client at chat completions: the OpenAI Agents SDK with setOpenAIAPI('chat_completions'), the AI SDK with openai.chat(...), LangChain's ChatOpenAI with useResponsesApi: false.`,
        'invalid_request_error',
        null,
        'unknown_route',
      );
    if (rest !== '/v1/chat/completions')
      throw new ApiError(
        404,
        `Unknown route POST …${rest} of episode ${ep.id}; the gateway has POST …/v1/chat/completions and POST …/reward.`,
        'invalid_request_error',
        null,
        'unknown_route',
      );
    const maxCalls = ep.maxCalls;
    if (ep.started >= maxCalls) {
      ep.refusedCalls++;
      throw new ApiError(
        429,
        `Episode ${id} made ${ep.started} calls, its limit (maxCalls ${maxCalls}); finish the task with the calls made.`,
        'rate_limit_error',
        null,
        'episode_call_limit',
      );
    }
    const maxConcurrent = this.options.maxConcurrent ?? 512;
    if (this.inFlight >= maxConcurrent)
      throw new ApiError(
        429,
        `The gateway is answering ${this.inFlight} calls, its limit (${maxConcurrent}); retry shortly.`,
        'rate_limit_error',
        null,
        'rate_limit_exceeded',
      );
    this.inFlight++;
    try {
      await this.chat(req, res, ep, ep.started++);
    } finally {
      this.inFlight--;
    }
  }

  private async chat(req: IncomingMessage, res: ServerResponse, ep: EpisodeLog, index: number): Promise<void> {
    const body = await readJsonBody(req, this.options.maxBodyBytes ?? 1 << 20);
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new ApiError(400, 'The request body must be a JSON object.');
    const b = body as Record<string, unknown>;
    const toolChoice = toolChoiceOf(b['tool_choice']);
    const parallel = b['parallel_tool_calls'];
    if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean')
      throw badParam('parallel_tool_calls', parallel, 'Give true or false.');
    if (b['n'] !== undefined && b['n'] !== null && b['n'] !== 1)
      throw new ApiError(
        400,
        `n ${JSON.stringify(b['n'])}: the gateway records one completion per call; send n 1 (or leave it out).`,
        'invalid_request_error',
        'n',
      );
    const lowered = {
      ...b,
      model: this.options.modelName,
      messages: lowerToolMessages(b['messages'], b['tools'], toolChoice),
      tools: undefined,
      tool_choice: undefined,
      parallel_tool_calls: undefined,
    };
    const parsed = parseChatRequest(lowered, { maxChoices: 1, vocabSize: this.options.vocabSize });
    const s = this.options.sampling;
    const seed = this.seeds.get(ep.id);
    const request = {
      ...parsed,
      ...(s ? { temperature: s.temperature, topP: s.topP, topK: s.topK } : {}),
      ...(seed !== undefined ? { seed: callSeed(seed, index) } : {}),
    };
    const prompt = chatPromptIds(this.ctx, request);
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const withTools = Array.isArray(b['tools']) && b['tools'].length > 0 && toolChoice !== 'none';
    const head = {
      id: `chatcmpl-${randomUUID()}`,
      created: Math.floor(Date.now() / 1000),
      model: typeof b['model'] === 'string' ? b['model'] : this.options.modelName,
    };
    let gen: Generation;
    let stream: ChatStream | undefined;
    if (parsed.stream) {
      // Token by token: the limits are checked (a bad request still gets its status) before the headers go out.
      const [job] = choiceJobs(this.ctx, { ...request, topLogprobs: 0 }, [prompt]);
      stream = new ChatStream(res, head, this.ctx, request.stop, withTools);
      stream.start();
      gen = await this.ctx.batcher.submit({ ...job!, onToken: (id) => stream!.token(id) }, abort.signal);
    } else {
      gen = (await runChoices(this.ctx, request, [prompt], abort.signal))[0]!.gen;
    }
    // An answer its agent did not wait for is not recorded: the agent never saw it, so it is no turn to train on.
    if (abort.signal.aborted)
      throw new ClientGone(
        `episode ${ep.id}: the agent disconnected before call ${index} was answered; the call is not recorded`,
      );
    const text = completionText(this.ctx.tokenizer, gen, this.ctx.stopTokenIds, request.stop);
    if (!this.book.get(ep.id))
      throw new ApiError(
        404,
        `Episode ${ep.id} ended while this call ran; its answer is not recorded.`,
        'invalid_request_error',
        null,
        'episode_not_found',
      );
    const messages = Array.isArray(b['messages']) ? (b['messages'] as unknown[]) : [];
    ep.calls.push({
      index,
      promptIds: prompt,
      completionIds: [...gen.tokens],
      logprobs: [...gen.logprobs],
      finishReason: gen.finishReason,
      text,
      messages,
      tools: withTools ? (b['tools'] as unknown[]) : null,
    });
    const { content, calls } = withTools
      ? parseToolCalls(text, `call_${ep.id}_${index}`)
      : { content: text, calls: [] };
    // Qwen's format has no switch for one call per reply; the program gets every call the policy wrote (and trained
    // on).
    if (parallel === false && calls.length > 1)
      this.log(
        `episode ${ep.id} call ${index}: parallel_tool_calls is false but the policy wrote ${calls.length} calls; all are returned`,
      );
    const finish = calls.length > 0 ? 'tool_calls' : gen.finishReason;
    const usage = {
      prompt_tokens: prompt.length,
      completion_tokens: gen.tokens.length,
      total_tokens: prompt.length + gen.tokens.length,
    };
    if (stream) return stream.finish(content, calls, finish, parsed.includeUsage ? usage : undefined);
    this.json(res, 200, {
      ...head,
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
          logprobs: null,
          finish_reason: finish,
          ...(parsed.returnTokenIds ? { token_ids: gen.tokens } : {}),
        },
      ],
      usage,
      ...(parsed.returnTokenIds ? { prompt_token_ids: prompt } : {}),
    });
  }

  private async reward(req: IncomingMessage, res: ServerResponse, ep: EpisodeLog): Promise<void> {
    const body = (await readJsonBody(req, 64 * 1024)) as { reward?: unknown } | null;
    const r = body?.reward;
    if (typeof r !== 'number' || !Number.isFinite(r))
      throw new ApiError(
        400,
        `Invalid reward ${JSON.stringify(r ?? null)}; send {"reward": <finite number>}.`,
        'invalid_request_error',
        'reward',
      );
    if (ep.reward !== undefined) {
      ep.duplicateRewards++;
      throw new ApiError(
        409,
        `Episode ${ep.id} already reported reward ${ep.reward}; an episode reports one reward.`,
        'invalid_request_error',
        'reward',
        'reward_already_set',
      );
    }
    ep.reward = r;
    this.json(res, 200, { ok: true, reward: r });
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    if (res.destroyed || res.headersSent) return;
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      ...(status === 413 ? { Connection: 'close' } : {}),
    });
    res.end(text);
  }

  private fail(res: ServerResponse, err: unknown): void {
    if (err instanceof NonFiniteLogitsError) this.engineFailure ??= err;
    if (err instanceof ClientGone || res.destroyed)
      return this.log(`client gone: ${(err as Error)?.message ?? String(err)}`);
    const e =
      err instanceof ApiError
        ? err
        : new ApiError(
            500,
            `The gateway failed on this request: ${(err as Error)?.message ?? String(err)}`,
            'server_error',
            null,
            'internal_error',
          );
    if (e.status >= 500) this.log(`500: ${(err as Error)?.stack ?? String(err)}`);
    // Mid-stream the status is gone: the error goes in the stream, which ends.
    if (res.headersSent) return void (res.destroyed ? undefined : res.end(`data: ${JSON.stringify(e.body())}\n\n`));
    this.json(res, e.status, e.body());
  }
}

/**
 * Open episodes are found by a digest of their secret: the map's key comparison then leaks nothing about how much of a
 * guessed secret was right.
 */
function digestOf(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

/** The sampling seed of call `index` of an episode opened with seed `seed` (a 32-bit mix, distinct per call). */
export function callSeed(seed: number, index: number): number {
  return (Math.imul((seed ^ 0x68e31da4) >>> 0, 0x5bd1e995) + Math.imul(index + 1, 0x9e3779b1)) >>> 0;
}
