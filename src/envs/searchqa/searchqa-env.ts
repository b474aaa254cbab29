// The SearchQA environment: answer a question by searching a corpus, then finish[answer].
// Follows RAGEN's ragen/env/search (from rllm), on a generated corpus with in-process BM25 or a server.
import { z } from 'zod';
import { ResetNeededError } from '../../util/index.js';
import {
  checkResetOptions,
  invalidInfo,
  type Env,
  type EnvInfo,
  type EnvMode,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';
import { extractAnswer, scoreAnswer } from './answer.js';
import { loadQuestions, questionFile } from './data.js';
import { questions, type Question } from './questions.js';
import { BM25Retriever, formatResults, HttpRetriever, type RetrievalResult, type Retriever } from './retrieval.js';

/** SearchQA's configuration. */
export const searchqaSchema = z.object({
  /** Seed of the generated world, its corpus and its questions (the episode seed picks a question). @default 0 */
  corpusSeed: z.number().int().min(0).default(0),
  /**
   * Questions from JSONL instead of the generated ones: a folder with train.jsonl and val.jsonl, or one file for both
   * (`loadQuestions`); pair it with a `retrievalUrl` whose corpus answers them. @default ""
   */
  dataPath: z.string().default(''),
  /**
   * A RAGEN-compatible retrieval server (`http://host:port`); empty means in-process BM25 over the corpus. @default ""
   */
  retrievalUrl: z.union([z.literal(''), z.url({ protocol: /^https?$/ })]).default(''),
  /** Passages per search (RAGEN's client shows 5; capped at 50). @default 5 */
  topK: z.number().int().min(1).max(50).default(5),
  /** Searches per episode; the one that reaches it truncates the episode (RAGEN's `max_steps`). @default 10 */
  maxSearches: z.number().int().min(1).default(10),
  /** Questions reserved for `val` mode; `train` uses the rest. @default 500 */
  numValQuestions: z.number().int().min(1).max(4000).default(500),
  /** Longest accepted query in characters; longer ones are invalid actions. @default 500 */
  maxQueryLength: z.number().int().min(1).max(10_000).default(500),
  /** Each retrieved passage is cut to this many characters (RAGEN: 800). @default 800 */
  docChars: z.number().int().min(1).default(800),
  /** All results of one search are cut to this many characters (RAGEN: 4000). @default 4000 */
  resultChars: z.number().int().min(1).default(4000),
  /** Timeout of one request to `retrievalUrl`. @default 10000 */
  requestTimeoutMs: z.number().int().min(1).default(10_000),
});

export type SearchQAConfig = z.infer<typeof searchqaSchema>;

export const SEARCHQA_INSTRUCTION =
  'You answer a question by searching a knowledge base. Use search[query] to retrieve passages (the query ' +
  'can be an entity name or keywords) and finish[answer] to give the final answer: a short entity, year, ' +
  'name or yes/no. Some questions need two searches: find the first entity, then the one it leads to.';

/** Retrieval servers whose failure was already reported on stderr. */
const warned = new Set<string>();

/** The question an episode poses for `seed` in `mode` (the one `reset({seed, mode})` poses). */
export function searchqaQuestion(config: SearchQAConfig, seed: number, mode: EnvMode = 'train'): Question {
  const mod = (a: number, n: number): number => ((a % n) + n) % n;
  if (config.dataPath) {
    const file = loadQuestions(questionFile(config.dataPath, mode));
    return file[mod(seed, file.length)]!;
  }
  const all = questions(config.corpusSeed);
  const numVal = Math.min(config.numValQuestions, all.length - 1);
  return mode === 'val' ? all[mod(seed, numVal)]! : all[numVal + mod(seed, all.length - numVal)]!;
}

/**
 * SearchQA.
 *
 * ## Description
 * A HotpotQA-style question about entities of a generated world (people, cities, countries, companies,
 * films): single-hop, two-hop bridge ("In which country was X born?") or comparison ("Who was born first,
 * X or Y?"). The agent searches a corpus of about 11,000 passages and answers.
 *
 * ## Action Space
 * `search[query]` retrieves `topK` passages; `finish[answer]` answers. Any other non-empty text is a
 * fallback answer: RAGEN's extraction (`\boxed{}`, bold, "answer is", "therefore", first sentence) is
 * scored and ends the episode with `fallbackAnswer` set. An empty action, an empty query or one over
 * `maxQueryLength` is invalid and changes nothing.
 *
 * ## Observation
 * `Question: ...`, then after a search the results as RAGEN's client formats them
 * (`[Document i] (ID: d12, Score: 9.871)` and `"Title"\ntext`), or the error when the server failed.
 *
 * ## Starting State
 * A question: `val` mode draws from the first `numValQuestions` questions, `train` from the rest (with
 * `dataPath`, from the split's file; the seed picks one, `seed mod n`).
 *
 * ## Rewards
 * Searches earn 0. An answer earns 1 for an exact match after SQuAD normalisation, else its token F1 if
 * F1 >= 0.3, else 0 (yes/no mismatches score 0).
 *
 * ## Episode End
 * Terminated by an answer. Truncated by the search that reaches `maxSearches`.
 *
 * ## Info
 * `success` (exact match or reward > 0), `exactMatch`, `f1`, `fallbackAnswer`, `searches`, `questionType`
 * (`single`, `bridge`, `comparison`), `retrievalError` (the last search failed), `actionIsValid`,
 * `actionIsEffective`, `reason`.
 *
 * ## Arguments
 * See {@link SearchQAConfig}.
 */
export class SearchQAEnv implements Env {
  readonly instruction = SEARCHQA_INSTRUCTION;
  readonly legend = '';
  readonly actionNames = undefined;
  private readonly retriever: Retriever;
  private question: Question | undefined;
  private searches = 0;
  private done = false;
  private results = '';
  private answered: { answer: string; em: boolean; f1: number; fallback: boolean } | undefined;
  private retrievalError = false;

  constructor(readonly config: SearchQAConfig) {
    // A bad question file is a config error at creation, not at the first reset.
    if (config.dataPath)
      for (const mode of ['train', 'val'] as const) loadQuestions(questionFile(config.dataPath, mode));
    this.retriever = config.retrievalUrl
      ? new HttpRetriever(config.retrievalUrl, config.requestTimeoutMs)
      : new BM25Retriever(config.corpusSeed);
  }

  reset({ seed, mode = 'train', options }: ResetOptions): ResetResult {
    checkResetOptions('SearchQA', options, []);
    this.question = searchqaQuestion(this.config, seed, mode);
    this.searches = 0;
    this.done = false;
    this.results = '';
    this.answered = undefined;
    this.retrievalError = false;
    return { observation: this.render(), info: this.info(true, true) };
  }

  step(action: string): StepResult | Promise<StepResult> {
    if (this.question === undefined)
      throw new ResetNeededError('SearchQA.step() called before reset(); call reset({seed}) first.');
    if (this.done)
      throw new ResetNeededError(
        'SearchQA.step() called after the episode ended; call reset({seed}) to start a new one.',
      );
    const text = action.trim();
    if (text === '') return this.invalid('the action is empty; use search[query] or finish[answer]');
    const m = /^(search|finish)\s*\[([\s\S]*)\]$/i.exec(text);
    const verb = m?.[1]!.toLowerCase();
    if (verb === 'search') {
      const query = m![2]!.replace(/\s+/g, ' ').trim();
      if (query === '') return this.invalid('search[] needs a query between the brackets');
      if (query.length > this.config.maxQueryLength)
        return this.invalid(
          `the query has ${query.length} characters, more than maxQueryLength ${this.config.maxQueryLength}`,
        );
      let hits: RetrievalResult[] | Promise<RetrievalResult[]>;
      try {
        hits = this.retriever.retrieve(query, this.config.topK);
      } catch (err) {
        return this.searchFailed(query, err);
      }
      if (hits instanceof Promise)
        return hits.then(
          (h) => this.searched(query, h),
          (err) => this.searchFailed(query, err),
        );
      return this.searched(query, hits);
    }
    const fallback = verb !== 'finish';
    return this.finish(fallback ? extractAnswer(text) : m![2]!.trim(), fallback);
  }

  private searched(query: string, hits: RetrievalResult[]): StepResult {
    this.searches++;
    this.retrievalError = false;
    this.results = `Results for search[${query}]:\n${formatResults(hits, this.config.docChars, this.config.resultChars)}`;
    const truncated = this.searches >= this.config.maxSearches;
    if (truncated) this.done = true;
    return { observation: this.render(), reward: 0, terminated: false, truncated, info: this.info(true, true) };
  }

  /** A failed request is the server's fault, not the agent's: a valid, ineffective step that says why. */
  private searchFailed(query: string, err: unknown): StepResult {
    const reason = err instanceof Error ? err.message : String(err);
    // Once per URL on stderr too: a run against a dead server must not look like a model that never searches well.
    if (!warned.has(this.config.retrievalUrl)) {
      warned.add(this.config.retrievalUrl);
      console.warn(
        `ragen: SearchQA search failed (${reason}); episodes go on with the error as the observation and info.retrievalError set. Further failures of this server are not printed.`,
      );
    }
    this.retrievalError = true;
    this.results = `Search for "${query.slice(0, 100)}" failed: ${reason}`;
    return {
      observation: this.render(),
      reward: 0,
      terminated: false,
      truncated: false,
      info: { ...this.info(true, false), reason },
    };
  }

  private finish(answer: string, fallback: boolean): StepResult {
    const q = this.question!;
    const score = [q.answer, ...(q.aliases ?? [])]
      .map((truth) => scoreAnswer(answer, truth))
      .reduce((best, s) => (s.reward > best.reward ? s : best));
    this.answered = { answer, em: score.exactMatch, f1: score.f1, fallback };
    this.done = true;
    return {
      observation: this.render(),
      reward: score.reward,
      terminated: true,
      truncated: false,
      info: this.info(true, true, score.success),
    };
  }

  private invalid(reason: string): StepResult {
    return {
      observation: `${this.render()}\nInvalid action: ${reason}`,
      reward: 0,
      terminated: false,
      truncated: false,
      info: { ...invalidInfo(reason), ...this.extra() },
    };
  }

  render(): string {
    if (this.question === undefined) return '';
    let out = `Question: ${this.question.question}`;
    if (this.results) out += `\n\n${this.results}`;
    if (this.answered)
      out += `\n\nAnswer given: ${this.answered.answer.slice(0, 200)} (${this.answered.em ? 'correct' : 'incorrect'})`;
    return out;
  }

  close(): void {}

  private info(valid: boolean, effective: boolean, success = false): EnvInfo {
    return { success, actionIsValid: valid, actionIsEffective: effective, ...this.extra() };
  }

  private extra(): {
    exactMatch: boolean;
    f1: number;
    fallbackAnswer: boolean;
    searches: number;
    questionType: string;
    retrievalError: boolean;
  } {
    const a = this.answered;
    return {
      exactMatch: a?.em ?? false,
      f1: a?.f1 ?? 0,
      fallbackAnswer: a?.fallback ?? false,
      searches: this.searches,
      questionType: this.question!.type,
      retrievalError: this.retrievalError,
    };
  }
}
