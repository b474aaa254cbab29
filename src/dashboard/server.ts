// `ragen dashboard`'s HTTP server (node:http, 127.0.0.1): the bundled page from build/dashboard/, a JSON API over run
// directories (read only), checkpoint files for in-browser play, and server-sent events when a run's files change.
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { dirname, extname, join } from 'node:path';
import { hostname, networkInterfaces } from 'node:os';
import { filesIn, runPaths, verifyCheckpoint } from '../metrics/index.js';
import {
  ApiError,
  CheckpointError,
  closeServer,
  httpServer,
  listen,
  packageRoot,
  sendJson as send,
} from '../util/index.js';
import { evalSummary, readEvalFile, readRollouts } from './episodes.js';
import { RunIndex, runDetail } from '../metrics/index.js';
import { RunEvents } from './events.js';

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
  /**
   * Let the play page load a checkpoint whose checkpoint.json has no SHA-256 digests (the version-1 format), its files
   * checked by size only (`--allow-unverified-checkpoint`). @default false
   */
  allowUnverifiedCheckpoint?: boolean;
}

/** A running dashboard. */
export interface Dashboard {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** The ragen-ts package folder (where build/ lives). */
export const packageDir = packageRoot;

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
const PLAY_FILES =
  /^checkpoints\/step-\d+\/(config\.json|generation_config\.json|model\.safetensors|tokenizer\.json|tokenizer_config\.json|preprocessor_config\.json)$/;

/** Every reply is read fresh: a run's files change while it trains. */
const NO_STORE = { 'Cache-Control': 'no-store' };

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, body, { ...NO_STORE, 'Content-Type': 'application/json; charset=utf-8' });
}

function sendFile(res: ServerResponse, file: string): void {
  res.writeHead(200, {
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'content-length': statSync(file).size,
    'cache-control': 'no-store',
  });
  createReadStream(file)
    .on('error', (err) => {
      console.error(`ragen dashboard: reading ${file} failed: ${err.message}`);
      res.destroy(err);
    })
    .pipe(res);
}

type Route = (q: URLSearchParams, res: ServerResponse) => void;

/** Where the routes read from. */
interface RouteContext {
  index: RunIndex;
  /** Folder of the built page. */
  assets: string;
  /** The single-thread WASM kernels the play page runs. */
  wasm: string;
  events: RunEvents;
  /** Checks a checkpoint before any of its files is served (see `checkpointGate`). */
  verified: (stepDir: string) => void;
}

/**
 * The check the play page's checkpoint files pass before one is served: the checkpoint is exactly its manifest
 * (verifyCheckpoint, as `ragen eval --run` and `--resume` check it), else a 409 with its sentence. A checkpoint whose
 * files have not changed since it passed (same names, sizes, times and inodes) is not hashed again.
 */
function checkpointGate(allowUnverified: boolean): (stepDir: string) => void {
  const passed = new Map<string, string>();
  const stamp = (dir: string) =>
    filesIn(dir)
      .map((f) => {
        const st = statSync(join(dir, f));
        return `${f}:${st.size}:${st.mtimeMs}:${st.ino}`;
      })
      .sort()
      .join('|');
  return (dir) => {
    const now = stamp(dir);
    if (passed.get(dir) === now) return;
    try {
      verifyCheckpoint(dir, { allowUnverified, warn: (line) => console.error(`ragen dashboard: ${line}`) });
    } catch (err) {
      passed.delete(dir);
      if (err instanceof CheckpointError) throw new ApiError(409, err.message);
      throw err;
    }
    passed.set(dir, now);
  };
}

/** The run directory of `id`, or a 404 naming the dashboard's folders. */
function runDir(index: RunIndex, id: string | null): string {
  const dir = id === null ? null : index.resolve(id);
  if (dir === null)
    throw new ApiError(
      404,
      `No run \`${id}\` under the dashboard's folders (${index.roots.join(', ')}); pick one from the runs table.`,
    );
  return dir;
}

/** The route table: path -> handler. Anything else is a file of the built page (`staticFile`). */
function routes({ index, wasm, events, verified }: RouteContext): Record<string, Route> {
  return {
    '/api/runs': (_q, res) => sendJson(res, 200, { roots: index.roots, runs: index.list() }),
    '/api/run': (q, res) => {
      const id = q.get('id');
      sendJson(res, 200, runDetail(id ?? '', runDir(index, id)));
    },
    '/api/rollouts': (q, res) => {
      const step = Number(q.get('step'));
      if (!Number.isInteger(step) || step < 0)
        throw new ApiError(400, `Bad step \`${q.get('step')}\`: give a step number from the run's rollout list.`);
      sendJson(res, 200, readRollouts(runDir(index, q.get('id')), step));
    },
    '/api/eval': (q, res) => {
      const dir = runDir(index, q.get('id'));
      const file = q.get('file') ?? '';
      const files = existsSync(runPaths(dir).eval) ? readdirSync(runPaths(dir).eval) : [];
      if (!file.endsWith('.jsonl') || !files.includes(file))
        throw new ApiError(
          404,
          `No eval file \`${file}\` in this run's eval/ (it has: ${files.join(', ') || 'none'}).`,
        );
      const read = readEvalFile(dir, file);
      sendJson(res, 200, { ...read, summary: evalSummary(read.episodes) });
    },
    '/api/file': (q, res) => {
      const dir = runDir(index, q.get('id'));
      const path = q.get('path') ?? '';
      if (!PLAY_FILES.test(path))
        throw new ApiError(
          403,
          `Refused \`${path}\`: only checkpoints/step-N/{config.json,model.safetensors,tokenizer.json,...} are served.`,
        );
      const file = join(dir, path);
      if (!existsSync(file)) throw new ApiError(404, `\`${path}\` is missing in this run.`);
      verified(dirname(file));
      sendFile(res, file);
    },
    '/api/events': (_q, res) => events.open(res),
    '/kernels/ragen-single.wasm': (_q, res) => sendFile(res, wasm),
    '/favicon.ico': (_q, res) => void res.writeHead(204).end(),
  };
}

/** The request's URL, once its Host, path and method pass (else an ApiError). */
function checkRequest(req: IncomingMessage, allowedHosts: ReadonlySet<string>): URL {
  // DNS rebinding: a page from another site that resolves its name to 127.0.0.1 still sends its own Host header.
  if (!allowedHosts.has((req.headers.host ?? '').toLowerCase()))
    throw new ApiError(
      403,
      `Refused Host \`${req.headers.host}\`: open the dashboard as ${[...allowedHosts][0] ?? '127.0.0.1'}.`,
    );
  const raw = req.url ?? '/';
  if (/\.\.|%2e%2e|%2e\.|\.%2e|\\|%5c/i.test(raw))
    throw new ApiError(400, `Refused path \`${raw}\`: \`..\` and backslashes are not allowed.`);
  if (req.method !== 'GET' && req.method !== 'HEAD')
    throw new ApiError(405, `Method ${req.method} not allowed: the dashboard only reads.`);
  return new URL(raw, 'http://localhost');
}

/** A file of the built page. Looked up in the folder's listing, so a request can only name a file that is there. */
function staticFile(assets: string, pathname: string, res: ServerResponse): void {
  const name = pathname === '/' ? 'index.html' : pathname.slice(1);
  const listing = existsSync(assets) ? readdirSync(assets) : [];
  if (!listing.includes('index.html'))
    throw new ApiError(
      500,
      `The dashboard page is not built (${assets} has no index.html); run \`npm run build\` in the ragen-ts folder.`,
    );
  if (!listing.includes(name)) throw new ApiError(404, `Not found: ${pathname}`);
  sendFile(res, join(assets, name));
}

/**
 * This machine's names for the Host check of a wildcard bind (`--host 0.0.0.0 --insecure`): its host name and every
 * interface address, so other machines may open it by those while a foreign name (DNS rebinding) is still refused.
 */
function localAddresses(): string[] {
  return [hostname(), ...Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address))];
}

/** Start the server; resolves once it listens. */
export async function startDashboard(opts: DashboardOptions): Promise<Dashboard> {
  const index = new RunIndex(opts.roots);
  const events = new RunEvents(index);
  const assets = opts.assetsDir ?? join(packageDir(), 'build', 'dashboard');
  const verified = checkpointGate(opts.allowUnverifiedCheckpoint === true);
  const table = routes({
    index,
    assets,
    wasm: join(packageDir(), 'build', 'kernels', 'ragen-single.wasm'),
    events,
    verified,
  });
  let allowedHosts = new Set<string>();
  const server = httpServer(
    (req, res) => {
      const url = checkRequest(req, allowedHosts);
      const route = table[url.pathname];
      if (route) route(url.searchParams, res);
      else staticFile(assets, url.pathname, res);
    },
    {
      form: 'plain',
      name: 'The dashboard',
      log: (line) => console.error(`ragen dashboard: ${line}`),
      headers: NO_STORE,
    },
  );
  const host = opts.host ?? '127.0.0.1';
  await listen(server, opts.port ?? 0, host);
  // Started once listening, so a failed listen leaves no timer holding the process open.
  const timer = setInterval(() => {
    try {
      events.poll();
    } catch (err) {
      console.error(`ragen dashboard: watching runs failed: ${(err as Error).message}`);
    }
  }, opts.pollMs ?? 1000);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  allowedHosts = new Set(
    [host, 'localhost', '127.0.0.1', ...(host === '0.0.0.0' || host === '::' ? localAddresses() : [])].map((h) =>
      (h.includes(':') ? `[${h}]:${port}` : `${h}:${port}`).toLowerCase(),
    ),
  );
  return {
    server,
    url: `http://${host}:${port}/`,
    close: async () => {
      clearInterval(timer);
      events.close();
      await closeServer(server);
    },
  };
}
