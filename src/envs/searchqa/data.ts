// Question files for SearchQA (e.g. HotpotQA converted to JSONL), so a real retrieval server such as RAGEN's
// Wikipedia one can be used with real questions. Follows the MetamathQA env's dataPath conventions.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from '../../util/index.js';
import type { EnvMode } from '../../env/index.js';
import type { Question } from './questions.js';

/** The file of a split: a folder with `train.jsonl` and `val.jsonl`, or one `.jsonl` used for both. */
export function questionFile(dataPath: string, mode: EnvMode): string {
  const path = resolve(dataPath);
  if (!existsSync(path))
    throw new ConfigError(
      `SearchQA dataPath \`${dataPath}\` does not exist. Give a .jsonl file or a folder with train.jsonl and val.jsonl, or '' for the generated questions.`,
    );
  if (!statSync(path).isDirectory()) return path;
  const file = join(path, `${mode}.jsonl`);
  if (!existsSync(file))
    throw new ConfigError(
      `SearchQA dataPath \`${dataPath}\` has no ${mode}.jsonl. Add it, or point dataPath at a single .jsonl file.`,
    );
  return file;
}

const ANSWER_KEYS = ['answer', 'answers', 'ground_truth', 'golden_answers'] as const;
const cache = new Map<string, Question[]>();

/**
 * Questions from a JSONL file, one `{"question": "...", "answer": "..."}` a line (cached per path). The
 * answer may also be under `answers`, `ground_truth` or `golden_answers`, as a string or a list of
 * accepted strings; an optional string `type` becomes `info.questionType` (default `external`).
 * Malformed lines are errors naming the file, the line and the fix.
 */
export function loadQuestions(file: string): Question[] {
  const cached = cache.get(file);
  if (cached) return cached;
  const out: Question[] = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      const where = `${file}:${i + 1}`;
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(line) ?? {};
      } catch (err) {
        throw new ConfigError(`${where}: not valid JSON (${(err as Error).message}).`);
      }
      if (typeof rec.question !== 'string' || rec.question.trim() === '')
        throw new ConfigError(
          `${where}: a record needs a non-empty string \`question\`, got ${JSON.stringify(rec.question)?.slice(0, 80)}.`,
        );
      const key = ANSWER_KEYS.find((k) => rec[k] !== undefined);
      const raw = key === undefined ? undefined : rec[key];
      const answers =
        typeof raw === 'string'
          ? [raw]
          : Array.isArray(raw) && raw.length > 0 && raw.every((a) => typeof a === 'string')
            ? (raw as string[])
            : undefined;
      if (!answers)
        throw new ConfigError(
          `${where}: a record needs \`answer\` (or ${ANSWER_KEYS.slice(1).join(', ')}) as a string or a non-empty list of strings, got ${JSON.stringify(raw)?.slice(0, 80)}.`,
        );
      out.push({
        question: rec.question,
        answer: answers[0]!,
        aliases: answers.slice(1),
        type: typeof rec.type === 'string' ? rec.type : 'external',
        gold: [],
        queries: [],
      });
    });
  if (out.length === 0) throw new ConfigError(`${file} holds no questions.`);
  cache.set(file, out);
  return out;
}
