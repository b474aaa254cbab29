// SearchQA: registers RAGEN's `SearchQA` tag (a generated corpus and questions, BM25 or a retrieval server).
import { z } from 'zod';
import { registerEnv } from '../registry.js';
import { SearchQAEnv, searchqaQuestion, type SearchQAConfig } from './searchqa-env.js';

export { SearchQAEnv, searchqaQuestion, SEARCHQA_INSTRUCTION, type SearchQAConfig } from './searchqa-env.js';
export { normalizeAnswer, exactMatch, f1Score, scoreAnswer, extractAnswer, type AnswerScore } from './answer.js';
export { BM25Retriever, HttpRetriever, formatResults, MAX_TOP_K, type Retriever, type RetrievalResult } from './retrieval.js';
export { corpus, passageContent, type Corpus, type Passage } from './corpus.js';
export { questions, NUM_QUESTIONS, type Question, type QuestionType } from './questions.js';
export { world, WORLD_SIZE, type World } from './world.js';
export { loadQuestions, questionFile } from './data.js';
export { retrievalRecall, type RecallReport } from './recall.js';
export { startRetrievalServer, type RetrievalServer, type RetrievalServerOptions } from './server.js';

/** SearchQA's config: see {@link SearchQAConfig} for each field's meaning. */
export const searchqaSchema = z.object({
  corpusSeed: z.number().int().min(0).default(0),
  dataPath: z.string().default(''),
  retrievalUrl: z.union([z.literal(''), z.url({ protocol: /^https?$/ })]).default(''),
  topK: z.number().int().min(1).max(50).default(5),
  maxSearches: z.number().int().min(1).default(10),
  numValQuestions: z.number().int().min(1).max(4000).default(500),
  maxQueryLength: z.number().int().min(1).max(10_000).default(500),
  docChars: z.number().int().min(1).default(800),
  resultChars: z.number().int().min(1).default(4000),
  requestTimeoutMs: z.number().int().min(1).default(10_000),
});

registerEnv<SearchQAConfig>('SearchQA', {
  description: 'SearchQA: HotpotQA-style single-hop and two-hop questions over a generated 11,000-passage corpus; search[...] (BM25 or a retrieval server) then finish[answer].',
  schema: searchqaSchema,
  create: (config) => new SearchQAEnv(config),
  maxActionsPerEpisode: 10,
  /** Search each gold entity, then answer (a question file's questions: answer directly). */
  solve: (config, seed, mode) => {
    const q = searchqaQuestion(config, seed, mode);
    return [...q.queries.map((e) => `search[${e}]`), `finish[${q.answer}]`];
  },
});
