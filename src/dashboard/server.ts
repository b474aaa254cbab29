// `ragen dashboard`'s HTTP server (node:http, 127.0.0.1): the bundled page from build/dashboard/, a JSON API over run
// directories (read only), checkpoint files for in-browser play, and server-sent events when a run's files change.
import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runPaths } from '../metrics/index.js';
import { evalSummary, readEvalFile, readRollouts } from './episodes.js';
import { RunIndex, runDetail } from '../metrics/index.js';

/** Options of `startDashboard`. */
export interface DashboardOptions {
  /** Run directories, or folders holding them. */
  roots: readonly string[];
  /** @default 0 (any free port) */
  port?: number;
  /** @default 127.0.0.1 */
  host?: string;
  /** How often the event stream looks for changed runs, in ms. @default 1000 */
  pollMs?: number;
  /** Folder of the built page (index.html, app.js, app.css). @default <package>/build/dashboard */
  assetsDir?: string;
}

/** A running dashboard. */
export interface Dashboard {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** The ragen-ts package folder (where build/ lives), found upward from this file. */
export function packageDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const pj = join(dir, 'package.json');
    if (existsSync(pj) && (JSON.parse(readFileSync(pj, 'utf8')) as { name?: string }).name === 'ragen-ts') return dir;
    dir = dirname(dir);
  }
  throw new Error(`cannot find the ragen-ts package folder above ${fileURLToPath(import.meta.url)}`);
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.safetensors': 'application/octet-stream',
};

/** Checkpoint files the play page may fetch (nothing else of a run is served raw). */
const PLAY_FILES = /^checkpoints\/step-\d+\/(config\.json|generation_config\.json|model\.safetensors|tokenizer\.json|tokenizer_config\.json)$/;

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

function sendFile(res: ServerResponse, file: string): void {
  res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-length': statSync(file).size, 'cache-control': 'no-store' });
  createReadStream(file)
    .on('error', (err) => {
      console.error(`ragen dashboard: reading ${file} failed: ${err.message}`);
      res.destroy(err);
    })
    .pipe(res);
}

/** What changes when a run is written to: metrics.jsonl's size and time, and the rollout files. */
function runSignature(dir: string): string {
  const p = runPaths(dir);
  const parts: string[] = [];
  for (const f of [p.metrics, p.config]) parts.push(existsSync(f) ? `${statSync(f).size}:${statSync(f).mtimeMs}` : '-');
  for (const d of [p.rollouts, p.eval, p.checkpoints]) parts.push(existsSync(d) ? readdirSync(d).length.toString() : '-');
  return parts.join('|');
}

/** Start the server; resolves once it listens. */
export async function startDashboard(opts: DashboardOptions): Promise<Dashboard> {
  const index = new RunIndex(opts.roots);
  const assets = opts.assetsDir ?? join(packageDir(), 'build', 'dashboard');
  const wasm = join(packageDir(), 'build', 'kernels', 'ragen-single.wasm');
  const streams = new Set<ServerResponse>();

  const runDir = (id: string | null): string => {
    const dir = id === null ? null : index.resolve(id);
    if (dir === null) throw new HttpError(404, `No run \`${id}\` under the dashboard's folders (${index.roots.join(', ')}); pick one from the runs table.`);
    return dir;
  };

  const routes: Record<string, (q: URLSearchParams, res: ServerResponse) => void> = {
    '/api/runs': (_q, res) => sendJson(res, 200, { roots: index.roots, runs: index.list() }),
    '/api/run': (q, res) => {
      const id = q.get('id');
      sendJson(res, 200, runDetail(id ?? '', runDir(id)));
    },
    '/api/rollouts': (q, res) => {
      const step = Number(q.get('step'));
      if (!Number.isInteger(step) || step < 0) throw new HttpError(400, `Bad step \`${q.get('step')}\`: give a step number from the run's rollout list.`);
      sendJson(res, 200, readRollouts(runDir(q.get('id')), step));
    },
    '/api/eval': (q, res) => {
      const dir = runDir(q.get('id'));
      const file = q.get('file') ?? '';
      const files = existsSync(runPaths(dir).eval) ? readdirSync(runPaths(dir).eval) : [];
      if (!file.endsWith('.jsonl') || !files.includes(file)) throw new HttpError(404, `No eval file \`${file}\` in this run's eval/ (it has: ${files.join(', ') || 'none'}).`);
      const read = readEvalFile(dir, file);
      sendJson(res, 200, { ...read, summary: evalSummary(read.episodes) });
    },
    '/api/file': (q, res) => {
      const dir = runDir(q.get('id'));
      const path = q.get('path') ?? '';
      if (!PLAY_FILES.test(path)) throw new HttpError(403, `Refused \`${path}\`: only checkpoints/step-N/{config.json,model.safetensors,tokenizer.json,...} are served.`);
      const file = join(dir, path);
      if (!existsSync(file)) throw new HttpError(404, `\`${path}\` is missing in this run.`);
      sendFile(res, file);
    },
  };

  let allowedHosts = new Set<string>();
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    // DNS rebinding: a page from another site that resolves its name to 127.0.0.1 still sends its own Host header.
    if (!allowedHosts.has((req.headers.host ?? '').toLowerCase())) throw new HttpError(403, `Refused Host \`${req.headers.host}\`: open the dashboard as ${[...allowedHosts][0] ?? '127.0.0.1'}.`);
    const raw = req.url ?? '/';
    if (/\.\.|%2e%2e|%2e\.|\.%2e|\\|%5c/i.test(raw)) throw new HttpError(400, `Refused path \`${raw}\`: \`..\` and backslashes are not allowed.`);
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, `Method ${req.method} not allowed: the dashboard only reads.`);
    const url = new URL(raw, 'http://localhost');
    const route = routes[url.pathname];
    if (route) return route(url.searchParams, res);
    if (url.pathname === '/api/events') return openEvents(res);
    if (url.pathname === '/kernels/ragen-single.wasm') return sendFile(res, wasm);
    if (url.pathname === '/favicon.ico') return void res.writeHead(204).end();
    const name = url.pathname === '/' ? 'index.html' : url.pathname.slice(1);
    // Static files are looked up in the folder's listing, so a request can only name a file that is there.
    const listing = existsSync(assets) ? readdirSync(assets) : [];
    if (!listing.includes('index.html')) throw new HttpError(500, `The dashboard page is not built (${assets} has no index.html); run \`npm run build\` in the ragen-ts folder.`);
    if (!listing.includes(name)) throw new HttpError(404, `Not found: ${url.pathname}`);
    sendFile(res, join(assets, name));
  };

  const openEvents = (res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    res.write('retry: 2000\n\n');
    streams.add(res);
    res.on('close', () => streams.delete(res));
  };

  // One poller for all event streams: a run whose files changed is announced as `change`, new or removed runs as `runs`.
  let last = new Map<string, string>();
  const poll = (): void => {
    if (streams.size === 0) return;
    const now = new Map<string, string>();
    for (const r of index.entries()) now.set(r.id, runSignature(r.path));
    const changed = [...now].filter(([id, sig]) => last.get(id) !== sig).map(([id]) => id);
    const listingChanged = now.size !== last.size || [...now.keys()].some((id) => !last.has(id));
    if (last.size > 0 || now.size > 0) {
      if (listingChanged) for (const s of streams) s.write(`event: runs\ndata: ${JSON.stringify([...now.keys()])}\n\n`);
      if (changed.length > 0) for (const s of streams) s.write(`event: change\ndata: ${JSON.stringify(changed)}\n\n`);
    }
    last = now;
  };

  const server = createServer((req, res) => {
    try {
      handle(req, res);
    } catch (err) {
      const status = err instanceof HttpError ? err.status : 500;
      if (status === 500) console.error(`ragen dashboard: ${req.url}: ${(err as Error).stack ?? String(err)}`);
      if (!res.headersSent) sendJson(res, status, { error: (err as Error).message });
      else res.end();
    }
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolveListen());
  });
  // Started once listening, so a failed listen leaves no timer holding the process open.
  const timer = setInterval(() => {
    try {
      poll();
    } catch (err) {
      console.error(`ragen dashboard: watching runs failed: ${(err as Error).message}`);
    }
  }, opts.pollMs ?? 1000);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  allowedHosts = new Set([`${host}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`]);
  return {
    server,
    url: `http://${host}:${port}/`,
    close: async () => {
      clearInterval(timer);
      for (const s of streams) s.end();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
