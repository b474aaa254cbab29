// A stand-in Kimina Lean server for tests (Lean cannot be installed on these machines): it answers
// POST /api/check and GET /health with the API's documented shapes, judging proofs against known ones.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { CommandResponse, ReplResponse } from './kimina-client.js';
import type { LeanTheorem } from './theorems.js';

/**
 * Judges a snippet by its tactic lines (two-space indented lines after the statement) against the known
 * proof of the theorem it states: the whole proof -> no messages (success); a prefix -> an "unsolved
 * goals" error; anything else -> an error at the first wrong line plus "unsolved goals". Scripted
 * tactics: a line containing `sorry` -> a sorry and its warning; `fake_timeout` -> a server-level
 * "timed out" error; `fake_repl_error` -> a REPL-level `{message}`; `fake_http_500` -> HTTP 500 the
 * first time that snippet text is seen (a retry then succeeds).
 */
export class FakeKiminaServer {
  /** Every /api/check body received, parsed. */
  readonly requests: { snippets: { id: string; code: string }[]; timeout: number; [k: string]: unknown }[] = [];
  private server: Server | undefined;
  private readonly seen500 = new Set<string>();

  /**
   * `v1`: answers `{results: [r]}` (kimina-lean-server 1.x, RAGEN's client); `v2`: answers the bare `r` of the
   * single-snippet endpoint (2.x).
   */
  constructor(
    private readonly theorems: readonly LeanTheorem[],
    private readonly api: 'v1' | 'v2' = 'v1',
  ) {}

  /** Starts on 127.0.0.1 (a free port) and resolves with the base URL. */
  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(([status, body]) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    if (this.server) await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private async handle(req: IncomingMessage): Promise<[number, unknown]> {
    if (req.method === 'GET' && req.url === '/health') return [200, { status: 'ok' }];
    if (req.method !== 'POST' || req.url !== '/api/check') return [404, { detail: 'Not Found' }];
    let text = '';
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text);
    this.requests.push(body);
    const snippet = (this.api === 'v1' ? body.snippets?.[0] : body.snippet) as { id: string; code: string } | undefined;
    if (!snippet)
      return [
        422,
        {
          detail: [
            { msg: this.api === 'v1' ? '`snippets` must be provided and non empty' : 'Field required: snippet' },
          ],
        },
      ];
    if (snippet.code.includes('fake_http_500') && !this.seen500.has(snippet.code)) {
      this.seen500.add(snippet.code);
      return [500, { detail: 'Internal Server Error' }];
    }
    const result = this.judge(snippet.id, snippet.code, body.timeout);
    return [200, this.api === 'v1' ? { results: [result] } : result];
  }

  private judge(id: string, code: string, timeout: number): ReplResponse {
    const lines = code.split('\n');
    const thm = this.theorems.find((t) => code.includes(t.formalStatement));
    const at = thm ? lines.findIndex((l) => l === thm.formalStatement.split('\n').at(-1)) : -1;
    if (!thm || at < 0)
      return {
        id,
        time: 0.1,
        response: { messages: [{ severity: 'error', pos: { line: 1, column: 0 }, data: 'unknown identifier' }] },
      };
    const tactics = lines.slice(at + 1).filter((l) => l.trim() !== '');
    const goal = `⊢ ${thm.formalStatement.replace(/^theorem \S+ /, '').replace(/ := by$/, '')}`;
    const lineOf = (i: number) => ({ line: at + 2 + i, column: 2 });
    if (tactics.some((t) => t.includes('fake_timeout')))
      return {
        id,
        time: timeout,
        error: `Lean REPL command timed out in ${timeout} seconds`,
        diagnostics: { repl_uuid: 'fake' },
      };
    if (tactics.some((t) => t.includes('fake_repl_error')))
      return { id, time: 0.1, response: { message: 'Lean REPL error: unexpected end of input' } };
    const sorryAt = tactics.findIndex((t) => /\bsorry\b/.test(t));
    if (sorryAt >= 0) {
      const response: CommandResponse = {
        env: 0,
        messages: [
          {
            severity: 'warning',
            pos: { line: 1, column: 8 },
            endPos: { line: 1, column: 20 },
            data: "declaration uses 'sorry'",
          },
        ],
        sorries: [{ pos: lineOf(sorryAt), endPos: { ...lineOf(sorryAt), column: 7 }, goal }],
      };
      return { id, time: 0.1, response };
    }
    const proof = thm.proof ?? [];
    const given = tactics.map((t) => t.trim());
    const wrong = given.findIndex((t, i) => t !== proof[i]);
    const unsolved = {
      severity: 'error',
      pos: { line: at + 1, column: thm.formalStatement.length - 2 },
      endPos: lineOf(Math.max(0, given.length - 1)),
      data: `unsolved goals\n${goal}`,
    };
    if (wrong < 0 && given.length === proof.length) return { id, time: 0.2, response: { env: 0, messages: [] } };
    if (wrong < 0) return { id, time: 0.2, response: { env: 0, messages: [unsolved] } };
    return {
      id,
      time: 0.2,
      response: {
        env: 0,
        messages: [
          {
            severity: 'error',
            pos: lineOf(wrong),
            endPos: { ...lineOf(wrong), column: 2 + given[wrong]!.length },
            data: `unknown tactic '${given[wrong]!.slice(0, 40)}'`,
          },
          unsolved,
        ],
      },
    };
  }
}
