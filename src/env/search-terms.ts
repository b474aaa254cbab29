// Query clean-up shared by the BM25 searches of WebShop and SearchQA: MiniSearch runs one sub-query per
// query word, so a long query of repeated common words would cost seconds; distinct words, capped, cost ~ms.

/** Most distinct words of a query that are searched; the rest are ignored. */
export const MAX_QUERY_TERMS = 64;

/** The query's distinct words (lowercased, split at spaces and punctuation), at most `MAX_QUERY_TERMS`, space-joined. */
export function searchTerms(query: string): string {
  const seen = new Set<string>();
  for (const word of query.toLowerCase().split(/[\s\p{P}\p{S}\p{C}]+/u)) {
    if (word === '' || seen.has(word)) continue;
    seen.add(word);
    if (seen.size === MAX_QUERY_TERMS) break;
  }
  return [...seen].join(' ');
}
