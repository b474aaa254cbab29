// The env server behind `ragen env serve`: registered envs over WebSocket sessions (`/ws`) in OpenEnv's
// shape, plus GET /health, /metadata, /schema; with session, size, idle and step-time limits.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { z } from 'zod';
import {
  ApiError,
  checkExposure,
  closeServer,
  httpServer,
  pathOf,
  RagenError,
  sendJson,
  type Exposure,
} from '../../util/index.js';
import { envSpec, resolveEnvConfig, resolveEnvId } from '../registry.js';
import {
  CLOSING_CODES,
  envIdOfPath,
  parseClientMessage,
  PROTOCOL_VERSION,
  type ErrorCode,
  type ServerMessage,
} from './protocol.js';
import { EnvSession, type Handled } from './session.js';
import { escapeControl, tokenMatches, TOKEN_ENV } from './auth.js';

/** Settings of an `EnvServer` (the flags of `ragen env serve`). */
export interface EnvServerOptions {
  /** Registered env ids to serve. */
  envIds: readonly string[];
  /** @default '127.0.0.1' (loopback only; use 0.0.0.0 to serve other machines) */
  host?: string;
  /** 0 picks a free port. @default 8765 */
  port?: number;
  /** Concurrent sessions; a connection past it gets CAPACITY_REACHED and is closed. @default 2048 */
  maxSessions?: number;
  /** A session with no message for this long is reaped (IDLE_TIMEOUT). @default 300 */
  idleTimeoutS?: number;
  /** Largest message handled; a larger one gets MESSAGE_TOO_LARGE (the session stays open). @default 1 MiB */
  maxMessageBytes?: number;
  /** Longest an async env's reset/step may take; past it STEP_TIMEOUT closes the session. @default 30 */
  stepTimeoutS?: number;
  /**
   * Milliseconds each reset and step waits before it runs: a benchmarking aid that gives a fast env the latency
   * of a slow or far-away one (`ragen env serve --step-delay-ms`; src/bench/scripts/bench-async.ts). @default 0
   */
  stepDelayMs?: number;
  /** Where log lines go (errors, reaps, clients gone mid-episode). @default stderr */
  log?: (line: string) => void;
  /** Also log every session opened and closed normally. @default false */
  verbose?: boolean;
  /**
   * Shared token clients must send (`Authorization: Bearer <token>`), checked at the WebSocket upgrade and on
   * /metadata and /schema (/health stays open for probes). @default undefined (no token)
   */
  token?: string;
  /** Listen beyond loopback without a token (anyone who reaches the port gets sessions). @default false */
  insecure?: boolean;
}

/** Messages a client may have waiting before it gets VALIDATION_ERROR (a client must await replies). */
const MAX_QUEUED = 32;

/** Counters for the load benchmark and tests. */
export interface EnvServerStats {
  sessionsOpened: number;
  steps: number;
  resets: number;
  errors: number;
  reaped: number;
}

/**
 * Serves registered envs: `await new EnvServer({envIds: ['SimpleSokoban']}).listen()` resolves with the
 * port; each WebSocket connection owns one env instance (`EnvSession`); `close()` ends every session
 * with SERVER_SHUTDOWN. The protocol is documented in docs/environments.md and typed in protocol.ts.
 */
export class EnvServer {
  readonly envIds: string[];
  readonly stats: EnvServerStats = { sessionsOpened: 0, steps: 0, resets: 0, errors: 0, reaped: 0 };
  private readonly options: Required<Omit<EnvServerOptions, 'envIds'>>; // token '' = none
  private readonly sessions = new Map<WebSocket, EnvSession>();
  private http: Server | undefined;
  private wss: WebSocketServer | undefined;
  private reaper: NodeJS.Timeout | undefined;
  private nextId = 1;

  constructor(options: EnvServerOptions) {
    if (options.envIds.length === 0)
      throw new RagenError('The env server needs at least one env id to serve (see `ragen envs`).');
    this.envIds = [...new Set(options.envIds.map(resolveEnvId))];
    this.options = {
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 8765,
      maxSessions: options.maxSessions ?? 2048,
      idleTimeoutS: options.idleTimeoutS ?? 300,
      maxMessageBytes: options.maxMessageBytes ?? 1 << 20,
      stepTimeoutS: options.stepTimeoutS ?? 30,
      stepDelayMs: options.stepDelayMs ?? 0,
      log: options.log ?? ((line) => process.stderr.write(`${line}\n`)),
      verbose: options.verbose ?? false,
      token: options.token ?? '',
      insecure: options.insecure ?? false,
    };
    const write = this.options.log;
    this.options.log = (line) => write(escapeControl(line)); // client bytes reach log lines: no terminal escapes
    checkExposure(this.exposure()); // refuses beyond loopback without a token unless insecure (the CLI prints the warning)
  }

  /** How this server is exposed, for `checkExposure` (src/util/exposure.ts): the policy every server shares. */
  exposure(port?: number): Exposure {
    return {
      server: 'ragen env serve',
      host: this.options.host,
      ...(port !== undefined ? { port } : {}),
      secret: {
        noun: 'token',
        given: this.options.token !== '',
        how: `${TOKEN_ENV} (or --token) on the server and its clients`,
      },
      insecure: this.options.insecure,
    };
  }

  /** Sessions open now. */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Start listening; resolves with the bound port (useful with port 0). */
  async listen(): Promise<number> {
    const http = httpServer((req, res) => this.onHttp(req, res), {
      form: 'plain',
      name: 'The env server',
      log: (line) => this.options.log(`[env-serve] ${line}`),
    });
    // ws closes a connection itself past maxPayload (code 1009); below it, our own limit answers with a typed error.
    const wss = new WebSocketServer({
      noServer: true,
      maxPayload: Math.max(4 * this.options.maxMessageBytes, 16 << 20),
    });
    http.on('upgrade', (req, socket, head) => {
      if (!this.authorized(req)) {
        this.stats.errors++;
        this.options.log(
          `[env-serve] refused a session from ${req.socket.remoteAddress ?? '?'} (${(req.url ?? '/').slice(0, 200)}): missing or wrong token`,
        );
        socket.end(
          'HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nThis env server needs its token: send `Authorization: Bearer <token>` (set RAGEN_ENV_TOKEN on the client).\n',
        );
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, req));
    });
    http.on('clientError', (err, socket) => {
      this.options.log(`[env-serve] bad HTTP request: ${err.message}`);
      socket.destroy();
    });
    this.http = http;
    this.wss = wss;
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(this.options.port, this.options.host, () => resolve());
    });
    const period = Math.min(5000, Math.max(50, (this.options.idleTimeoutS * 1000) / 4));
    this.reaper = setInterval(() => this.reapIdle(), period);
    this.reaper.unref();
    return (http.address() as AddressInfo).port;
  }

  /** Close every session (SERVER_SHUTDOWN) and stop listening. */
  async close(): Promise<void> {
    clearInterval(this.reaper);
    for (const [ws, session] of [...this.sessions])
      this.endSession(ws, session, { code: 'SERVER_SHUTDOWN', message: 'The env server is shutting down.' });
    await new Promise((resolve) => setTimeout(resolve, 50)); // lets the goodbye messages flush
    for (const ws of this.wss?.clients ?? []) ws.terminate();
    this.wss?.close();
    if (this.http) await closeServer(this.http);
  }

  /** What `/metadata` returns: OpenEnv's name and description, plus every served env. */
  metadata(): Record<string, unknown> {
    return {
      name: 'ragen-ts',
      description: `ragen-ts environments: ${this.envIds.join(', ')}`,
      version: '0.1.0',
      protocol: PROTOCOL_VERSION,
      envs: this.envIds.map((id) => {
        const spec = envSpec(id);
        const config = resolveEnvConfig(id);
        const env = spec.create(config);
        const row = {
          id,
          description: spec.description,
          instruction: env.instruction,
          legend: env.legend,
          actionNames: env.actionNames ? [...env.actionNames] : null,
          observationSpace: env.observationSpace ?? null,
          maxActionsPerEpisode: spec.maxActionsPerEpisode,
          hasSolver: spec.solve !== undefined,
          config,
        };
        void env.close();
        return row;
      }),
    };
  }

  /** What `/schema` returns: OpenEnv's action, observation and state schemas, plus each env's config schema. */
  schema(): Record<string, unknown> {
    const configs: Record<string, unknown> = {};
    for (const id of this.envIds) {
      try {
        configs[id] = z.toJSONSchema(envSpec(id).schema, { unrepresentable: 'any' });
      } catch (err) {
        configs[id] = { description: `not representable as JSON schema: ${String(err)}` };
      }
    }
    return {
      action: {
        type: 'object',
        properties: { text: { type: 'string', description: 'The action, as the model wrote it.' } },
        required: ['text'],
      },
      observation: {
        type: 'object',
        properties: {
          text: { type: 'string' },
          images: {
            type: 'array',
            description: 'The observation images (envs whose observationSpace declares one), as base64 PNG.',
            items: {
              type: 'object',
              properties: {
                width: { type: 'integer' },
                height: { type: 'integer' },
                format: { const: 'png' },
                data: { type: 'string', contentEncoding: 'base64', contentMediaType: 'image/png' },
              },
              required: ['width', 'height', 'format', 'data'],
            },
          },
        },
        required: ['text'],
      },
      state: {
        type: 'object',
        properties: {
          episode_id: { type: ['string', 'null'] },
          step_count: { type: 'integer' },
          env: { type: 'string' },
          status: { enum: ['new', 'running', 'ended'] },
          render: { type: ['string', 'null'] },
        },
      },
      config: configs,
    };
  }

  private onHttp(req: IncomingMessage, res: ServerResponse): void {
    const path = pathOf(req);
    if (req.method !== 'GET')
      throw new ApiError(
        405,
        `Only GET is served over HTTP (${req.method} ${path}); sessions go over WebSocket at /ws.`,
      );
    if (path === '/health')
      return sendJson(res, 200, {
        status: 'healthy',
        sessions: this.sessions.size,
        maxSessions: this.options.maxSessions,
      });
    if (!this.authorized(req))
      throw new ApiError(
        401,
        `This env server needs its token: send \`Authorization: Bearer <token>\` (set ${TOKEN_ENV} on the client).`,
      );
    if (path === '/metadata') return sendJson(res, 200, this.metadata());
    if (path === '/schema') return sendJson(res, 200, this.schema());
    throw new ApiError(
      404,
      `No route ${path}: use GET /health, /metadata, /schema or a WebSocket at /ws, /ws/<EnvId> or /<EnvId>.`,
    );
  }

  /** Whether `req` carries the server's token (always true when it has none). */
  private authorized(req: IncomingMessage): boolean {
    return this.options.token === '' || tokenMatches(req.headers, this.options.token);
  }

  private onConnection(ws: WebSocket, req: IncomingMessage): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const refuse = (code: ErrorCode, message: string, extra: Record<string, unknown> = {}): void => {
      this.stats.errors++;
      this.options.log(`[env-serve] refused ${url.pathname}: ${code}: ${message}`);
      ws.send(JSON.stringify({ type: 'error', data: { code, message, ...extra } }));
      ws.close(code === 'CAPACITY_REACHED' ? 1013 : 1008, code);
    };
    ws.on('error', (err) => this.options.log(`[env-serve] socket error: ${err.message}`));
    if (this.sessions.size >= this.options.maxSessions) {
      return refuse(
        'CAPACITY_REACHED',
        `The server holds its maximum of ${this.options.maxSessions} sessions; retry later or start it with a larger --max-sessions.`,
        { active_sessions: this.sessions.size, max_sessions: this.options.maxSessions },
      );
    }
    const named = envIdOfPath(url.pathname, url.searchParams) ?? (this.envIds.length === 1 ? this.envIds[0]! : null);
    if (named === null)
      return refuse(
        'UNKNOWN_ENV',
        `This server serves ${this.envIds.join(', ')}: connect to /ws/<EnvId> (or /ws?env=<EnvId>).`,
      );
    const id = this.envIds.find((e) => e.toLowerCase() === named.toLowerCase());
    if (id === undefined)
      return refuse(
        'UNKNOWN_ENV',
        `No served env \`${named.slice(0, 80)}\`; this server serves ${this.envIds.join(', ')}.`,
      );
    let config: Record<string, unknown>;
    try {
      const raw = url.searchParams.get('config');
      const overrides: unknown = raw ? JSON.parse(raw) : {};
      if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides))
        throw new RagenError(`the \`config\` query parameter must be a JSON object, got ${raw!.slice(0, 60)}`);
      config = resolveEnvConfig(id, overrides as Record<string, unknown>);
    } catch (err) {
      return refuse('CONFIG_ERROR', `Bad config for ${id}: ${err instanceof Error ? err.message : String(err)}`);
    }
    let session: EnvSession;
    try {
      session = new EnvSession(
        this.nextId++,
        id,
        envSpec(id).create(config),
        this.options.stepTimeoutS * 1000,
        this.options.stepDelayMs,
      );
    } catch (err) {
      return refuse('FACTORY_ERROR', `Creating ${id} failed: ${String(err)}`);
    }
    this.sessions.set(ws, session);
    this.stats.sessionsOpened++;
    if (this.options.verbose)
      this.options.log(`[env-serve] session ${session.id} (${id}) opened; ${this.sessions.size} open`);

    let queue: Promise<void> = Promise.resolve();
    let queued = 0;
    let flooded = false;
    ws.on('message', (data: RawData) => {
      const bytes = byteLength(data);
      if (bytes > this.options.maxMessageBytes) {
        this.stats.errors++;
        this.options.log(
          `[env-serve] session ${session.id} (${session.envId}): MESSAGE_TOO_LARGE: ${bytes} bytes, over the limit of ${this.options.maxMessageBytes}`,
        );
        this.reply(ws, {
          type: 'error',
          data: {
            code: 'MESSAGE_TOO_LARGE',
            message: `The message has ${bytes} bytes; this server takes at most ${this.options.maxMessageBytes} (--max-message-bytes).`,
            bytes,
            max_bytes: this.options.maxMessageBytes,
          },
        });
        return;
      }
      if (queued >= MAX_QUEUED) {
        this.stats.errors++;
        if (!flooded)
          this.options.log(
            `[env-serve] session ${session.id} (${id}): VALIDATION_ERROR: more than ${MAX_QUEUED} messages waiting (logged once per session)`,
          );
        flooded = true;
        this.reply(ws, {
          type: 'error',
          data: {
            code: 'VALIDATION_ERROR',
            message: `More than ${MAX_QUEUED} messages are waiting in this session; send the next message after the reply to the previous one.`,
          },
        });
        return;
      }
      queued++;
      const text = Array.isArray(data)
        ? Buffer.concat(data).toString('utf8')
        : Buffer.from(data as ArrayBuffer).toString('utf8');
      queue = queue.then(async () => {
        queued--;
        if (!this.sessions.has(ws)) return;
        try {
          await this.onMessage(ws, session, text);
        } catch (err) {
          // A bug of ours or an unserialisable env result: answer and log it, keep the session's queue alive.
          this.stats.errors++;
          this.options.log(
            `[env-serve] session ${session.id} (${id}): internal error: ${err instanceof Error ? err.stack : String(err)}`,
          );
          this.reply(ws, {
            type: 'error',
            data: { code: 'EXECUTION_ERROR', message: `The server failed to answer: ${String(err)}` },
          });
        }
      });
    });
    ws.on('close', () => {
      if (!this.sessions.has(ws)) return;
      this.sessions.delete(ws);
      const mid = session.status === 'running';
      if (mid || this.options.verbose)
        this.options.log(
          `[env-serve] session ${session.id} (${id}) closed by the client${mid ? ` mid-episode (after step ${session.stepCount}); env closed` : ''}`,
        );
      void this.closeEnv(session);
    });
  }

  private async onMessage(ws: WebSocket, session: EnvSession, text: string): Promise<void> {
    const parsed = parseClientMessage(text);
    let handled: Handled;
    if (!parsed.ok) {
      handled = { reply: { type: 'error', data: { code: parsed.code, message: parsed.message } }, close: false };
    } else {
      handled = await session.handle(parsed.message);
      if (parsed.message.type === 'step' && handled.reply?.type === 'observation') this.stats.steps++;
      if (parsed.message.type === 'reset' && handled.reply?.type === 'observation') this.stats.resets++;
    }
    if (handled.reply?.type === 'error') {
      this.stats.errors++;
      this.options.log(
        `[env-serve] session ${session.id} (${session.envId}): ${handled.reply.data.code}: ${handled.reply.data.message.slice(0, 200)}`,
      );
    }
    if (handled.close) {
      const reason = handled.reply?.type === 'error' ? handled.reply.data : undefined;
      if (reason && CLOSING_CODES.has(reason.code)) return this.endSession(ws, session, reason);
      this.sessions.delete(ws);
      ws.close(1000, 'close');
      void this.closeEnv(session);
      return;
    }
    if (handled.reply) this.reply(ws, handled.reply);
  }

  /** Send `reason` as a typed error, close the socket and the env. */
  private endSession(ws: WebSocket, session: EnvSession, reason: { code: ErrorCode; message: string }): void {
    this.sessions.delete(ws);
    this.reply(ws, { type: 'error', data: reason });
    ws.close(reason.code === 'SERVER_SHUTDOWN' ? 1001 : 1011, reason.code);
    void this.closeEnv(session);
  }

  private reapIdle(): void {
    const limit = Date.now() - this.options.idleTimeoutS * 1000;
    for (const [ws, session] of [...this.sessions]) {
      if (session.lastActive >= limit) continue;
      this.stats.reaped++;
      this.options.log(
        `[env-serve] session ${session.id} (${session.envId}) reaped after ${this.options.idleTimeoutS} s idle${session.status === 'running' ? ` mid-episode (after step ${session.stepCount})` : ''}`,
      );
      this.endSession(ws, session, {
        code: 'IDLE_TIMEOUT',
        message: `No message for ${this.options.idleTimeoutS} s (--idle-timeout); the session is closed. Reconnect and reset.`,
      });
    }
  }

  private reply(ws: WebSocket, msg: ServerMessage): void {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
  }

  private async closeEnv(session: EnvSession): Promise<void> {
    try {
      await session.env.close();
    } catch (err) {
      this.options.log(`[env-serve] session ${session.id} (${session.envId}): close() threw ${String(err)}`);
    }
  }
}

function byteLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((n, b) => n + b.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}
