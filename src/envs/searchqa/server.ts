// `ragen retrieval serve`: RAGEN's retrieval API over the generated corpus (BM25), on node:http.
// POST /retrieve {query, top_k} -> {results: [{id, content, score}]}; GET /health -> {status, ...}.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { corpus } from './corpus.js';
import { BM25Retriever, MAX_TOP_K } from './retrieval.js';

export interface RetrievalServerOptions {
  /** World seed of the corpus served (SearchQA's `corpusSeed`). @default 0 */
  corpusSeed?: number;
  /** @default 8000 (RAGEN's port); 0 picks a free one */
  port?: number;
  /** @default "127.0.0.1" */
  host?: string;
  /** Largest request body in bytes. @default 65536 */
  maxBodyBytes?: number;
}

export interface RetrievalServer {
  /** `http://host:port`, the value for SearchQA's `retrievalUrl`. */
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Build the corpus and its index, then listen. Resolves once the server accepts requests. */
export async function startRetrievalServer(options: RetrievalServerOptions = {}): Promise<RetrievalServer> {
  const seed = options.corpusSeed ?? 0;
  const maxBody = options.maxBodyBytes ?? 65_536;
  const retriever = new BM25Retriever(seed);
  retriever.retrieve('warm up the index', 1); // build the index before the first request
  const passages = corpus(seed).passages.length;
  const server = createServer((req, res) => {
    handle(req, res).catch((err) => send(res, 500, { error: `internal error: ${(err as Error).message}` }));
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/health') {
      if (req.method !== 'GET') return send(res, 405, { error: 'use GET /health' });
      return send(res, 200, { status: 'healthy', retriever: 'bm25', corpusSeed: seed, passages });
    }
    if (path !== '/retrieve')
      return send(res, 404, { error: `no route ${req.method} ${path}; use POST /retrieve or GET /health` });
    if (req.method !== 'POST') return send(res, 405, { error: 'use POST /retrieve with a JSON body {query, top_k}' });
    const body = await readBody(req, maxBody);
    if (body === undefined) return send(res, 413, { error: `request body over ${maxBody} bytes` });
    let parsed: { query?: unknown; top_k?: unknown };
    try {
      parsed = JSON.parse(body);
    } catch {
      return send(res, 400, { error: `the body is not JSON: ${JSON.stringify(body.slice(0, 80))}` });
    }
    const query = parsed?.query;
    if (typeof query !== 'string' || query.trim() === '')
      return send(res, 400, {
        error: `"query" must be a non-empty string, got ${JSON.stringify(query)?.slice(0, 80)}`,
      });
    const topK = parsed.top_k ?? 5;
    if (typeof topK !== 'number' || !Number.isInteger(topK) || topK < 1 || topK > MAX_TOP_K)
      return send(res, 400, { error: `"top_k" must be an integer in 1..${MAX_TOP_K}, got ${JSON.stringify(topK)}` });
    send(res, 200, { results: retriever.retrieve(query, topK) });
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8000, options.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return { url: `http://${host}:${addr.port}`, server, close: () => new Promise((r) => server.close(() => r())) };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/**
 * The body as text, or undefined when it exceeds `max` bytes (the rest is read and dropped, so the 413 reaches the
 * client).
 */
function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= max) chunks.push(c);
    });
    req.on('end', () => resolve(size > max ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
