// A client of the Kimina Lean server's HTTP API (POST /api/check, GET /health), as RAGEN's LeanEnv uses
// kimina_client.KiminaClient: one snippet per request, an HTTP timeout, retries with exponential backoff.
import { RagenError } from '../../util/index.js';

/** The Kimina server could not be reached or answered nonsense: start it or fix `serverUrl`. */
export class LeanServerError extends RagenError {}

/** One message of the Lean REPL (`severity` error | warning | info | trace). */
export interface LeanMessage {
  severity: string;
  data: string;
  pos?: { line: number; column: number };
  endPos?: { line: number; column: number } | null;
}

/** The REPL's answer to a command: messages and `sorry` placeholders (Kimina's CommandResponse). */
export interface CommandResponse {
  env?: number | null;
  messages?: LeanMessage[] | null;
  sorries?: unknown[] | null;
}

/** One result of /api/check (Kimina's ReplResponse): exactly one of `error` (server-level, e.g. "timed out") and `response`; a response with `message` is a REPL-level error. */
export interface ReplResponse {
  id: string;
  time?: number;
  error?: string | null;
  response?: CommandResponse | { message: string } | null;
  diagnostics?: Record<string, unknown> | null;
}

/** Options of {@link KiminaClient} (RAGEN's LeanEnvConfig names in parentheses). */
export interface KiminaClientOptions {
  /** Base URL (`server_url`). */
  serverUrl: string;
  /** Bearer token for servers started with LEAN_SERVER_API_KEY (`api_key`). */
  apiKey?: string;
  /** Seconds Lean may spend on one check, sent to the server (`request_timeout`). */
  requestTimeout: number;
  /** Seconds the HTTP request may take (`http_timeout`). */
  httpTimeout: number;
  /** Attempts per request on connection errors, non-2xx answers or non-JSON bodies (`max_retries`). */
  maxRetries: number;
  /** First backoff wait in seconds, doubled per retry. @default 1 */
  backoffSeconds?: number;
}

let snippetCounter = 0;

/** Talks to one Kimina Lean server. Failures are {@link LeanServerError}s naming the URL and the fix. */
export class KiminaClient {
  private healthy = false;

  constructor(readonly options: KiminaClientOptions) {}

  get url(): string {
    return this.options.serverUrl.replace(/\/+$/, '');
  }

  /** GET /health once (again after a failure); throws {@link LeanServerError} when the server is not there. */
  async ensureReachable(): Promise<void> {
    if (this.healthy) return;
    try {
      const res = await this.fetchWithTimeout(`${this.url}/health`, { method: 'GET', headers: this.headers() }, Math.min(this.options.httpTimeout, 10));
      if (!res.ok) throw new Error(`HTTP ${res.status} ${res.statusText}`);
    } catch (err) {
      throw new LeanServerError(
        `The Lean env needs a Kimina Lean server at ${this.url}, and GET ${this.url}/health failed (${describe(err)}). ` +
          'Start one (docs/environments.md, "Lean": `docker run -d -p 8000:8000 projectnumina/kimina-lean-server:2.0.0`) or point `env.config.Lean.serverUrl` at yours.',
      );
    }
    this.healthy = true;
  }

  /** Check one Lean snippet: POST /api/check with RAGEN's settings (debug, reuse, tactic infotree). */
  async check(code: string): Promise<ReplResponse> {
    const id = `ragen-proof-${process.pid}-${++snippetCounter}`;
    const body = JSON.stringify({ snippets: [{ id, code }], timeout: Math.round(this.options.requestTimeout), debug: true, reuse: true, infotree: 'tactics' });
    let lastError = '';
    for (let attempt = 1; attempt <= this.options.maxRetries; attempt++) {
      try {
        const res = await this.fetchWithTimeout(`${this.url}/api/check`, { method: 'POST', headers: { 'content-type': 'application/json', ...this.headers() }, body }, this.options.httpTimeout);
        const text = await res.text();
        if (!res.ok) throw new Error(`HTTP ${res.status}: ${text.slice(0, 200)}`);
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          throw new Error(`the server answered non-JSON: ${JSON.stringify(text.slice(0, 200))}`);
        }
        const results = (json as { results?: unknown }).results;
        if (!Array.isArray(results) || results.length === 0 || typeof results[0] !== 'object' || results[0] === null) {
          throw new Error(`the answer has no results[0]: ${text.slice(0, 200)}`);
        }
        return results[0] as ReplResponse;
      } catch (err) {
        lastError = describe(err);
        if (attempt < this.options.maxRetries) {
          const wait = (this.options.backoffSeconds ?? 1) * 2 ** (attempt - 1);
          console.warn(`[lean] POST ${this.url}/api/check failed (attempt ${attempt}/${this.options.maxRetries}: ${lastError}); retrying in ${wait} s`);
          await new Promise((r) => setTimeout(r, wait * 1000));
        }
      }
    }
    this.healthy = false;
    throw new LeanServerError(`POST ${this.url}/api/check failed after ${this.options.maxRetries} attempt(s): ${lastError}. Is the Kimina Lean server still running?`);
  }

  private headers(): Record<string, string> {
    return this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {};
  }

  private async fetchWithTimeout(url: string, init: RequestInit, seconds: number): Promise<Response> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`timed out after ${seconds} s`)), seconds * 1000);
    try {
      return await fetch(url, { ...init, signal: abort.signal });
    } finally {
      clearTimeout(timer);
    }
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    const code = typeof cause === 'object' && cause !== null && 'code' in cause ? ` ${(cause as { code: unknown }).code}` : '';
    return `${err.message}${code}`;
  }
  return String(err);
}
