// Retrievers for SearchQA: in-process BM25 over the generated corpus (MiniSearch), and a client of any
// server speaking RAGEN's retrieval API (POST /retrieve {query, top_k} -> {results: [{id, content, score}]}).
import MiniSearch from 'minisearch';
import { dropStopword, searchTerms } from '../search-terms.js';
import { corpus, passageContent, type Corpus } from './corpus.js';

/** One retrieved passage, as RAGEN's retrieval server returns it. */
export interface RetrievalResult {
  id: string;
  content: string;
  score: number;
}

/** Anything that answers a query with ranked passages. */
export interface Retriever {
  retrieve(query: string, topK: number): RetrievalResult[] | Promise<RetrievalResult[]>;
}

/** The most passages one request may ask for (RAGEN's client caps `top_k` at 50). */
export const MAX_TOP_K = 50;

const engines = new WeakMap<Corpus, MiniSearch>();

function engine(c: Corpus): MiniSearch {
  let ms = engines.get(c);
  if (!ms) {
    ms = new MiniSearch({
      fields: ['title', 'text'],
      processTerm: dropStopword,
      searchOptions: { boost: { title: 2 } },
    });
    ms.addAll(c.passages);
    engines.set(c, ms);
  }
  return ms;
}

/** BM25 (MiniSearch's BM25+) over the corpus of world `seed`; built on first use and cached. */
export class BM25Retriever implements Retriever {
  private readonly corpus: Corpus;

  constructor(seed: number) {
    this.corpus = corpus(seed);
  }

  retrieve(query: string, topK: number): RetrievalResult[] {
    const k = Math.max(1, Math.min(MAX_TOP_K, Math.floor(topK)));
    return engine(this.corpus)
      .search(searchTerms(query), { combineWith: 'OR' })
      .slice(0, k)
      .map((hit) => ({
        id: hit.id as string,
        content: passageContent(this.corpus.byId.get(hit.id as string)!),
        score: hit.score,
      }));
  }
}

/**
 * A client of a RAGEN-compatible retrieval server at `url` (e.g. `http://127.0.0.1:8000`, RAGEN's
 * E5/FAISS Wikipedia server or `ragen retrieval serve`). Rejects with a message naming the URL when the
 * server is unreachable, times out, answers non-200 or answers a body without `results`.
 */
export class HttpRetriever implements Retriever {
  constructor(
    readonly url: string,
    readonly timeoutMs = 10_000,
  ) {}

  async retrieve(query: string, topK: number): Promise<RetrievalResult[]> {
    const endpoint = `${this.url.replace(/\/+$/, '')}/retrieve`;
    let res: Response;
    try {
      res = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, top_k: Math.max(1, Math.min(MAX_TOP_K, Math.floor(topK))) }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = [(err as Error).message, cause?.code ?? cause?.message].filter(Boolean).join(': ');
      throw new Error(
        `retrieval server ${endpoint} did not answer (${why}); start one with \`ragen retrieval serve\` or fix retrievalUrl`,
      );
    }
    if (!res.ok)
      throw new Error(`retrieval server ${endpoint} answered HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
    const body = (await res.json().catch(() => undefined)) as { results?: unknown } | undefined;
    if (!body || !Array.isArray(body.results))
      throw new Error(
        `retrieval server ${endpoint} answered without a results array: ${JSON.stringify(body)?.slice(0, 200)}`,
      );
    return body.results.map((r: any, i: number) => ({
      id: String(r?.id ?? i),
      content: String(r?.content ?? r?.contents ?? ''),
      score: Number.isFinite(Number(r?.score)) ? Number(r.score) : 0,
    }));
  }
}

/**
 * Search results as RAGEN's client formats them: `[Document i] (ID: id, Score: s)` and the content, each
 * document cut to `docChars` and the whole to `totalChars` characters.
 */
export function formatResults(results: readonly RetrievalResult[], docChars = 800, totalChars = 4000): string {
  if (results.length === 0) return 'No results found.';
  let out = '';
  for (const [i, r] of results.entries()) {
    const content = r.content.length > docChars ? `${r.content.slice(0, docChars)}...` : r.content;
    const block = `${i > 0 ? '\n\n' : ''}[Document ${i + 1}] (ID: ${r.id}, Score: ${r.score.toFixed(3)})\n${content}`;
    if (out.length + block.length > totalChars) {
      out += block.slice(0, Math.max(0, totalChars - out.length));
      break;
    }
    out += block;
  }
  return out;
}
