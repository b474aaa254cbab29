// The training gateway: `ragen serve`'s OpenAI server in its episode mode (`/episodes/<secret>/v1/...`, the secret
// given only to the episode's program) over the policy engine: the tool-call lowering as its request transform, and
// every call recorded token-exactly for training through its `onCall` hook.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { NonFiniteLogitsError, type Engine } from '../engine/index.js';
import type { Tokenizer, ToolFormatName } from '../tokenizer/index.js';
import { OpenAIServer, type AnsweredCall, type RoutePrefix } from '../serve/index.js';
import { ApiError, checkExposure, readJson, sendJson } from '../util/index.js';
import { EpisodeBook, type EpisodeLog, type OpenEpisode } from './episodes.js';
import { toolCallLowering } from './qwen-tools.js';

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
  private readonly server: OpenAIServer<OpenEpisode>;
  private readonly book = new EpisodeBook();
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
  /** The policy's tool format (its tokenizer's): tools and calls are written and read in it. */
  readonly toolFormat: ToolFormatName;

  constructor(private readonly options: GatewayOptions) {
    const log = (line: string) => options.log?.(line);
    const format = (this.toolFormat = options.tokenizer.toolFormat ?? 'qwen');
    this.server = new OpenAIServer<OpenEpisode>({
      ...options,
      name: 'The gateway',
      maxChoices: 1,
      completions: false,
      anyModel: true,
      prefix: this.prefix(),
      transform: (body, ep, index) => {
        if (body['n'] !== undefined && body['n'] !== null && body['n'] !== 1)
          throw new ApiError(
            400,
            `n ${JSON.stringify(body['n'])}: the gateway records one completion per call; send n 1 (or leave it out).`,
            'invalid_request_error',
            'n',
          );
        const s = options.sampling;
        const seed = this.seeds.get(ep.id);
        return {
          ...toolCallLowering(
            body,
            `call_${ep.id}_${index}`,
            (l) => log(`episode ${ep.id} call ${index}: ${l}`),
            format,
          ),
          sampling: {
            ...(s ? { temperature: s.temperature, topP: s.topP, topK: s.topK } : {}),
            ...(seed !== undefined ? { seed: callSeed(seed, index) } : {}),
          },
        };
      },
      onCall: (call, ep) => this.record(call, ep),
      onError: (err) => {
        if (err instanceof NonFiniteLogitsError) this.engineFailure ??= err;
      },
    });
    this.http = this.server.http;
    // No idle timeout: the local engine generates synchronously, and a connection's keep-alive timer that expires
    // while a generation holds the event loop fires before the call its agent sent meanwhile is read, resetting it
    // (ECONNRESET crashed the episode; which ones depended on the machine's load). Agents close their own idle
    // connections (fetch after 4 s), episode ends kill their processes, and `close` ends the rest.
    this.http.keepAliveTimeout = 0;
  }

  /** Start listening on loopback; resolves with the base URL (`http://127.0.0.1:<port>`). */
  listen(port = 0, host = '127.0.0.1'): Promise<string> {
    checkExposure({ server: 'the training gateway', host }); // never beyond loopback (it offers no --insecure): throws
    return this.server.listen(port, host).then((bound) => (this.base = `http://${host}:${bound.port}`));
  }

  close(): Promise<void> {
    return this.server.close();
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

  /** The server's route prefix: `/episodes/<secret>` of an open episode, its call limit, and its `/reward`. */
  private prefix(): RoutePrefix<OpenEpisode> {
    return {
      resolve: (path) => {
        const m = /^\/episodes\/([^/]+)(\/.*)$/.exec(path);
        if (!m) {
          this.unauthorized++;
          throw new ApiError(
            404,
            `Unknown route ${path}; the gateway answers under /episodes/<secret>/v1/ (the URL in OPENAI_BASE_URL).`,
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
        return { scope: ep, rest };
      },
      admit: (ep) => {
        if (ep.started >= ep.maxCalls) {
          ep.refusedCalls++;
          throw new ApiError(
            429,
            `Episode ${ep.id} made ${ep.started} calls, its limit (maxCalls ${ep.maxCalls}); finish the task with the calls made.`,
            'rate_limit_error',
            null,
            'episode_call_limit',
          );
        }
        return ep.started++;
      },
      label: (ep) => `episode ${ep.id}`,
      routes: { '/reward': (req, res, ep) => this.reward(req, res, ep) },
    };
  }

  /** `onCall`: the answered call into its episode's record (an episode that ended meanwhile records nothing: 404). */
  private record(call: AnsweredCall, ep: OpenEpisode): void {
    if (!this.book.get(ep.id))
      throw new ApiError(
        404,
        `Episode ${ep.id} ended while this call ran; its answer is not recorded.`,
        'invalid_request_error',
        null,
        'episode_not_found',
      );
    const { body, gen } = call;
    ep.calls.push({
      index: call.index,
      promptIds: call.promptIds,
      ...(call.images.length > 0 ? { images: call.images } : {}),
      completionIds: [...gen.tokens],
      logprobs: [...gen.logprobs],
      finishReason: gen.finishReason,
      text: call.text,
      messages: Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [],
      tools: call.tools ? (body['tools'] as unknown[]) : null,
    });
  }

  private async reward(req: IncomingMessage, res: ServerResponse, ep: EpisodeLog): Promise<void> {
    const body = (await readJson(req, 64 * 1024)) as { reward?: unknown } | null;
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
    sendJson(res, 200, { ok: true, reward: r });
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
