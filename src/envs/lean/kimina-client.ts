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

/**
 * One result of /api/check (Kimina's ReplResponse): exactly one of `error` (server-level, e.g. "timed out") and
 * `response`; a response with `message` is a REPL-level error.
 */
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
      const res = await this.fetchWithTimeout(
        `${this.url}/health`,
        { method: 'GET', headers: this.headers() },
        Math.min(this.options.httpTimeout, 10),
      );
      if (!res.ok) throw new Error(`HTTP ${res.status} ${res.statusText}`);
    } catch (err) {
      throw new LeanServerError(
        `The Lean env needs a Kimina Lean server at ${this.url}, and GET ${this.url}/health failed (${describe(err)}). ` +
          'Start one (docs/environments.md, "Lean": `docker run -d -p 8000:8000 projectnumina/kimina-lean-server:2.0.0`) or point `env.config.Lean.serverUrl` at yours.',
      );
    }
    this.healthy = true;
  }

  /**
   * Check one Lean snippet: POST /api/check with RAGEN's settings (debug, reuse). The body names the
   * snippet both ways Kimina's server versions read it (`snippets: [..]` up to 1.x, `snippet` in 2.x; each
   * ignores the other key), and the answer may be `{results: [r]}`, `[r]` or `r`. No infotree is asked
   * for (RAGEN asks for `tactics`, which 2.x rejects, and never reads it).
   */
  async check(code: string): Promise<ReplResponse> {
    const id = `ragen-proof-${process.pid}-${++snippetCounter}`;
    const snippet = { id, code };
    const body = JSON.stringify({
      snippets: [snippet],
      snippet,
      timeout: Math.round(this.options.requestTimeout),
      debug: true,
      reuse: true,
    });
    let lastError = '';
    for (let attempt = 1; attempt <= this.options.maxRetries; attempt++) {
      try {
        const res = await this.fetchWithTimeout(
          `${this.url}/api/check`,
          { method: 'POST', headers: { 'content-type': 'application/json', ...this.headers() }, body },
          this.options.httpTimeout,
        );
        const text = await res.text();
        if (!res.ok) throw new Error(`HTTP ${res.status}: ${text.slice(0, 200)}`);
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          throw new Error(`the server answered non-JSON: ${JSON.stringify(text.slice(0, 200))}`);
        }
        const first = firstResult(json);
        if (first === undefined)
          throw new Error(
            `the answer is not a check result ({results: [...]}, [...] or {id, response | error}): ${text.slice(0, 200)}`,
          );
        return first;
      } catch (err) {
        lastError = describe(err);
        if (attempt < this.options.maxRetries) {
          const wait = (this.options.backoffSeconds ?? 1) * 2 ** (attempt - 1);
          console.warn(
            `[lean] POST ${this.url}/api/check failed (attempt ${attempt}/${this.options.maxRetries}: ${lastError}); retrying in ${wait} s`,
          );
          await new Promise((r) => setTimeout(r, wait * 1000));
        }
      }
    }
    this.healthy = false;
    throw new LeanServerError(
      `POST ${this.url}/api/check failed after ${this.options.maxRetries} attempt(s): ${lastError}. Is the Kimina Lean server still running?`,
    );
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

/** The first check result of an answer in any of the server versions' shapes. */
function firstResult(json: unknown): ReplResponse | undefined {
  const isResult = (x: unknown): x is ReplResponse =>
    typeof x === 'object' && x !== null && !Array.isArray(x) && ('response' in x || 'error' in x);
  if (Array.isArray(json)) return isResult(json[0]) ? json[0] : undefined;
  if (typeof json === 'object' && json !== null && 'results' in json) {
    const results = (json as { results: unknown }).results;
    return Array.isArray(results) && isResult(results[0]) ? results[0] : undefined;
  }
  return isResult(json) ? json : undefined;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    const code =
      typeof cause === 'object' && cause !== null && 'code' in cause ? ` ${(cause as { code: unknown }).code}` : '';
    return `${err.message}${code}`;
  }
  return String(err);
}
