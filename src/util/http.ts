// The node:http pieces every server we ship shares (serve and the training gateway, env serve, the dashboard,
// retrieval serve): one error type and its two wire forms, JSON replies, bodies under a size limit, the client-gone
// signal, server-sent events, and listen/close. Each server keeps only its routes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * One failed request: its HTTP status, its message, and OpenAI's error fields (`type`, `param`, `code`). Thrown by a
 * handler, answered by `httpServer` in the server's wire form (`errorBody`).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** OpenAI's `type`: 'invalid_request_error', 'authentication_error', 'rate_limit_error', 'server_error'... */
    readonly type = 'invalid_request_error',
    /** The request field at fault, if one is. */
    readonly param: string | null = null,
    /** A machine-readable code: 'model_not_found', 'context_length_exceeded', 'invalid_api_key'... */
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The JSON body OpenAI sends with this error. */
  body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** How a server writes its errors: OpenAI's `{"error": {message, type, param, code}}` or `{"error": message}`. */
export type ErrorForm = 'openai' | 'plain';

/** The reply body of `e` in the server's form. */
export function errorBody(e: ApiError, form: ErrorForm): unknown {
  return form === 'openai' ? e.body() : { error: e.message };
}

/** 400 naming the field, the value received and what is accepted. */
export function badParam(param: string, value: unknown, accepted: string): ApiError {
  return new ApiError(
    400,
    `Invalid value for \`${param}\`: ${preview(value)}. ${accepted}`,
    'invalid_request_error',
    param,
    'invalid_value',
  );
}

/** A short JSON rendering of a client-sent value for messages (never echo megabytes back). */
export function preview(value: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(value) ?? String(value);
  } catch {
    s = String(value);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** Reply with `body` as JSON (nothing when the response is gone or already started). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** The request's path: no query, no trailing slash ('/' for the root). */
export function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
}

/**
 * The request body, refusing one over `max` bytes with a 413 (from its Content-Length when declared, else as soon as
 * the bytes pass it; the rest is not read) and a client that leaves mid-body with a 400. `setting` names the limit's
 * flag in the 413's message (` (--max-body-bytes)`).
 */
export function readBody(req: IncomingMessage, max: number, setting = ''): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) return Promise.reject(tooLarge(declared, max, setting));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const settle = (fn: () => void) => {
      if (done) return;
      done = true;
      fn();
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > max) {
        chunks.length = 0;
        return settle(() => reject(tooLarge(size, max, setting)));
      }
      chunks.push(chunk);
    });
    req.on('end', () => settle(() => resolve(Buffer.concat(chunks))));
    req.on('aborted', () =>
      settle(() => reject(new ApiError(400, 'The client closed the connection before the body was complete.'))),
    );
    req.on('error', (err) => settle(() => reject(err)));
  });
}

/** The request body as JSON under `max` bytes (`readBody`); bad JSON is a 400 saying what to send. */
export async function readJson(req: IncomingMessage, max: number, setting = ''): Promise<unknown> {
  const text = (await readBody(req, max, setting)).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ApiError(
      400,
      `The request body is not valid JSON (${(err as Error).message}); send a JSON object with Content-Type: application/json.`,
      'invalid_request_error',
      null,
      'invalid_json',
    );
  }
}

function tooLarge(size: number, max: number, setting: string): ApiError {
  return new ApiError(
    413,
    `The request body is ${size} bytes or more, over this server's limit of ${max} bytes${setting}.`,
    'invalid_request_error',
    null,
    'request_too_large',
  );
}

/** A signal that aborts when the client goes away before the response finished (its queued work can be dropped). */
export function clientGone(res: ServerResponse): AbortSignal {
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  return abort.signal;
}

/** Responses that are event streams (a failure after their headers is sent as an event). */
const eventStreams = new WeakSet<ServerResponse>();

/** Server-sent events on one response: `open` sends the headers, `send` one event, `end` the last bytes. */
export class EventStream {
  constructor(private readonly res: ServerResponse) {}

  /** Status 200 and the event-stream headers; `retryMs` tells a browser how soon to reconnect. */
  open(retryMs?: number): this {
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
    });
    eventStreams.add(this.res);
    if (retryMs !== undefined) this.res.write(`retry: ${retryMs}\n\n`);
    return this;
  }

  /** One event: `data` as JSON (a string as is), under `event` when named. Nothing once the client is gone. */
  send(data: unknown, event?: string): void {
    if (this.res.destroyed) return;
    const line = `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
    this.res.write(event === undefined ? line : `event: ${event}\n${line}`);
  }

  /** End the stream, with a last event when given. */
  end(last?: unknown): void {
    if (this.res.destroyed) return;
    if (last === undefined) this.res.end();
    else this.res.end(`data: ${typeof last === 'string' ? last : JSON.stringify(last)}\n\n`);
  }
}

/** How `httpServer` answers failures. */
export interface FailurePolicy {
  /** The error body's form. */
  form: ErrorForm;
  /** Names the server in a 500's message: `${name} failed on this request: ...`. */
  name: string;
  /** Where the 500s' stacks and the clients gone mid-request are logged. */
  log: (line: string) => void;
  /** Errors that mean the client left (logged in one line, never answered). */
  isClientGone?: (err: unknown) => boolean;
  /** Sees every failure first (the training gateway notes the policy's own errors). */
  onError?: (err: unknown) => void;
  /** Also log refusals for size (413) and load (429) in one line each. @default false */
  logRefused?: boolean;
  /** Headers on every error reply (the dashboard's `Cache-Control: no-store`). */
  headers?: Record<string, string>;
}

/**
 * A node:http server over `handle`, whose failures become replies: an ApiError as its status and body, anything else
 * a 500 naming what broke (its stack logged); mid-stream, the error goes in the stream as its last event. After a
 * 413 the connection is closed rather than the rest of the body read.
 */
export function httpServer(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void> | void,
  policy: FailurePolicy,
): Server {
  return createServer((req, res) => {
    res.on('error', (err) => policy.log(`response error (client gone?): ${err.message}`));
    req.on('error', (err) => policy.log(`request error: ${err.message}`));
    Promise.resolve()
      .then(() => handle(req, res))
      .catch((err: unknown) => fail(res, err, policy));
  });
}

function fail(res: ServerResponse, err: unknown, p: FailurePolicy): void {
  p.onError?.(err);
  const message = (err as Error)?.message ?? String(err);
  if (p.isClientGone?.(err) || res.destroyed) return p.log(`client gone: ${message}`);
  const e =
    err instanceof ApiError
      ? err
      : new ApiError(500, `${p.name} failed on this request: ${message}`, 'server_error', null, 'internal_error');
  if (e.status >= 500) p.log(`500: ${(err as Error)?.stack ?? String(err)}`);
  else if (p.logRefused && (e.status === 413 || e.status === 429)) p.log(`${e.status}: ${e.message}`);
  if (res.headersSent) {
    if (eventStreams.has(res)) new EventStream(res).end(errorBody(e, p.form));
    else res.end();
    return;
  }
  sendJson(res, e.status, errorBody(e, p.form), { ...p.headers, ...(e.status === 413 ? { Connection: 'close' } : {}) });
}

/** Listen on `host:port` (0: a free one); resolves with the bound port, rejects when the address is taken. */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Stop accepting connections and close open ones (streams included); resolves once closed. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
