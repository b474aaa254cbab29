// The WebShop search engine: BM25 over the catalogue with MiniSearch (WebShop uses pyserini's Lucene
// BM25 over title, description, features and options; MiniSearch scores with BM25+ over the same fields).
import MiniSearch from 'minisearch';
import { dropStopword, searchTerms } from '../search-terms.js';
import type { Catalogue } from './catalogue.js';

/** Results WebShop returns for a query (its `top_n`), shown 10 per page. */
export const TOP_N = 50;
export const PAGE_SIZE = 10;

const engines = new WeakMap<Catalogue, MiniSearch>();

function engine(c: Catalogue): MiniSearch {
  let ms = engines.get(c);
  if (!ms) {
    ms = new MiniSearch({
      idField: 'asin',
      fields: ['title', 'type', 'category', 'attributes', 'options', 'description'],
      extractField: (doc: any, field: string) => {
        if (field === 'attributes') return doc.attributes.join(' ');
        if (field === 'options')
          return Object.values(doc.options as Record<string, string[]>)
            .flat()
            .join(' ');
        return doc[field];
      },
      processTerm: dropStopword,
      searchOptions: { boost: { title: 2, type: 2 } },
    });
    ms.addAll(c.products);
    engines.set(c, ms);
  }
  return ms;
}

/**
 * The ASINs of the best `TOP_N` products for `query`'s distinct words (any may match: WebShop's BM25 is an OR query).
 */
export function searchProducts(c: Catalogue, query: string): string[] {
  const hits = engine(c).search(searchTerms(query), { combineWith: 'OR' });
  return hits.slice(0, TOP_N).map((h) => h.id as string);
}
