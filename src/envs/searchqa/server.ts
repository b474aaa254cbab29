// `ragen retrieval serve`: RAGEN's retrieval API over the generated corpus (BM25), on node:http.
// POST /retrieve {query, top_k} -> {results: [{id, content, score}]}; GET /health -> {status, ...}.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, closeServer, httpServer, listen, pathOf, readJson, sendJson } from '../../util/index.js';
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
  const server = httpServer(handle, {
    form: 'plain',
    name: 'The retrieval server',
    log: (line) => process.stderr.write(`ragen retrieval serve: ${line}\n`),
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req);
    if (path === '/health') {
      if (req.method !== 'GET') throw new ApiError(405, 'use GET /health');
      return sendJson(res, 200, { status: 'healthy', retriever: 'bm25', corpusSeed: seed, passages });
    }
    if (path !== '/retrieve')
      throw new ApiError(404, `no route ${req.method} ${path}; use POST /retrieve or GET /health`);
    if (req.method !== 'POST') throw new ApiError(405, 'use POST /retrieve with a JSON body {query, top_k}');
    const parsed = (await readJson(req, maxBody)) as { query?: unknown; top_k?: unknown } | null;
    const query = parsed?.query;
    if (typeof query !== 'string' || query.trim() === '')
      throw new ApiError(400, `"query" must be a non-empty string, got ${JSON.stringify(query)?.slice(0, 80)}`);
    const topK = parsed?.top_k ?? 5;
    if (typeof topK !== 'number' || !Number.isInteger(topK) || topK < 1 || topK > MAX_TOP_K)
      throw new ApiError(400, `"top_k" must be an integer in 1..${MAX_TOP_K}, got ${JSON.stringify(topK)}`);
    sendJson(res, 200, { results: retriever.retrieve(query, topK) });
  }
  await listen(server, options.port ?? 8000, options.host ?? '127.0.0.1');
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return { url: `http://${host}:${addr.port}`, server, close: () => closeServer(server) };
}
