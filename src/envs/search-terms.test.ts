import './index.js'; // the built-in environments
import { describe, expect, test } from 'vitest';
import { MAX_QUERY_TERMS, searchTerms } from './search-terms.js';
import { BM25Retriever } from './searchqa/index.js';

describe('searchTerms', () => {
  test('keeps distinct lowercased words in order, split at spaces, punctuation and control characters', () => {
    expect(searchTerms('Red, red SHOES!\u0000shoes\tsize: 9.5')).toBe('red shoes size 9 5');
    expect(searchTerms('  \u0007 ,, ')).toBe('');
  });
  test(`caps a query at ${MAX_QUERY_TERMS} distinct words`, () => {
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`);
    expect(searchTerms(words.join(' ')).split(' ')).toEqual(words.slice(0, MAX_QUERY_TERMS));
  });
  test('a 100 kB query of repeated common words is answered like its distinct words, quickly', () => {
    const r = new BM25Retriever(0);
    r.retrieve('warm up', 1);
    const t0 = performance.now();
    const hits = r.retrieve('river city born '.repeat(6500), 5); // took 30+ s before the terms were deduplicated
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(hits).toEqual(r.retrieve('river city born', 5));
  });
});
