// Term handling shared by the BM25 searches of WebShop and SearchQA: stop words, and query clean-up (MiniSearch
// runs one sub-query per query word, so a long query of repeated common words would cost seconds).

/** Most distinct words of a query that are searched; the rest are ignored. */
export const MAX_QUERY_TERMS = 64;

/**
 * The query's distinct words (lowercased, split at spaces and punctuation), at most `MAX_QUERY_TERMS`, space-joined.
 */
export function searchTerms(query: string): string {
  const seen = new Set<string>();
  for (const word of query.toLowerCase().split(/[\s\p{P}\p{S}\p{C}]+/u)) {
    if (word === '' || seen.has(word)) continue;
    seen.add(word);
    if (seen.size === MAX_QUERY_TERMS) break;
  }
  return [...seen].join(' ');
}

// Lucene's English stop words (pyserini's default analyzer drops them too): they match most documents, cost
// most of a query's time and carry no evidence.
const STOPWORDS = new Set(
  'a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with'.split(
    ' ',
  ),
);

/** MiniSearch's `processTerm` for both engines: lowercase, and drop stop words (null). */
export function dropStopword(term: string): string | null {
  const t = term.toLowerCase();
  return STOPWORDS.has(t) ? null : t;
}
