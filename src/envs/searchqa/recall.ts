// Retrieval recall of SearchQA's gold passages: the figure `ragen bench retrieval` prints.
import type { EnvMode } from '../../env/index.js';
import { questions, type QuestionType } from './questions.js';
import { BM25Retriever, type Retriever } from './retrieval.js';

/** Recall@k of one group of questions. */
export interface RecallRow {
  questions: number;
  /** Mean fraction of a question's gold passages in the top k for the question text as the query. */
  recall: number;
  /** Fraction of questions with every gold passage in the top k (question text as the query). */
  allGold: number;
  /** Mean fraction of gold passages in the top k when each is searched by its entity name (the oracle's searches). */
  entityRecall: number;
}

export interface RecallReport {
  k: number;
  mode: EnvMode;
  seconds: number;
  rows: Record<QuestionType | 'all', RecallRow>;
}

/**
 * Recall@k of the gold passages of the first `limit` questions of `mode` (val: the first
 * `numValQuestions` questions; train: the rest) in world `seed`, by question type.
 */
export async function retrievalRecall(
  seed: number,
  options: { k?: number; mode?: EnvMode; numValQuestions?: number; limit?: number; retriever?: Retriever } = {},
): Promise<RecallReport> {
  const k = options.k ?? 5;
  const mode = options.mode ?? 'val';
  const all = questions(seed);
  const numVal = options.numValQuestions ?? 500;
  const pool = mode === 'val' ? all.slice(0, numVal) : all.slice(numVal);
  const qs = pool.slice(0, options.limit ?? pool.length);
  const retriever = options.retriever ?? new BM25Retriever(seed);
  const acc = new Map<string, { n: number; recall: number; allGold: number; entity: number }>();
  const t0 = performance.now();
  for (const q of qs) {
    const top = new Set((await retriever.retrieve(q.question, k)).map((r) => r.id));
    const hit = q.gold.filter((g) => top.has(g)).length;
    let entityHits = 0;
    for (const [i, g] of q.gold.entries())
      if ((await retriever.retrieve(q.queries[i]!, k)).some((r) => r.id === g)) entityHits++;
    for (const key of [q.type, 'all']) {
      const a = acc.get(key) ?? { n: 0, recall: 0, allGold: 0, entity: 0 };
      a.n++;
      a.recall += hit / q.gold.length;
      a.allGold += hit === q.gold.length ? 1 : 0;
      a.entity += entityHits / q.gold.length;
      acc.set(key, a);
    }
  }
  const row = (key: string): RecallRow => {
    const a = acc.get(key) ?? { n: 0, recall: 0, allGold: 0, entity: 0 };
    const n = Math.max(1, a.n);
    return { questions: a.n, recall: a.recall / n, allGold: a.allGold / n, entityRecall: a.entity / n };
  };
  return {
    k,
    mode,
    seconds: (performance.now() - t0) / 1000,
    rows: { single: row('single'), bridge: row('bridge'), comparison: row('comparison'), all: row('all') },
  };
}
