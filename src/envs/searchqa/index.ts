// SearchQA: registers RAGEN's `SearchQA` tag (a generated corpus and questions, BM25 or a retrieval server).
import { registerEnv } from '../../env/index.js';
import { SearchQAEnv, searchqaQuestion, type SearchQAConfig, searchqaSchema } from './searchqa-env.js';

export {
  SearchQAEnv,
  searchqaQuestion,
  SEARCHQA_INSTRUCTION,
  type SearchQAConfig,
  searchqaSchema,
} from './searchqa-env.js';
export { normalizeAnswer, exactMatch, f1Score, scoreAnswer, extractAnswer, type AnswerScore } from './answer.js';
export {
  BM25Retriever,
  HttpRetriever,
  formatResults,
  MAX_TOP_K,
  type Retriever,
  type RetrievalResult,
} from './retrieval.js';
export { corpus, passageContent, type Corpus, type Passage } from './corpus.js';
export { questions, NUM_QUESTIONS, type Question, type QuestionType } from './questions.js';
export { world, WORLD_SIZE, type World } from './world.js';
export { loadQuestions, questionFile } from './data.js';
export { retrievalRecall, type RecallReport } from './recall.js';
export { startRetrievalServer, type RetrievalServer, type RetrievalServerOptions } from './server.js';

registerEnv<SearchQAConfig>('SearchQA', {
  description:
    'SearchQA: HotpotQA-style single-hop and two-hop questions over a generated 11,000-passage corpus; search[...] (BM25 or a retrieval server) then finish[answer].',
  schema: searchqaSchema,
  create: (config) => new SearchQAEnv(config),
  maxActionsPerEpisode: 10,
  /** Search each gold entity, then answer (a question file's questions: answer directly). */
  solve: (config, seed, mode) => {
    const q = searchqaQuestion(config, seed, mode);
    return [...q.queries.map((e) => `search[${e}]`), `finish[${q.answer}]`];
  },
});
