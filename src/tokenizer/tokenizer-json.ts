// The shape of a Hugging Face tokenizer.json, checked before @huggingface/tokenizers reads it (it meets a `"model":
// null` or a missing vocab with a raw TypeError): what that library needs, each field described for messages.
import { z } from 'zod';
import { ConfigError } from '../util/index.js';

const id = z.int({ error: 'a non-negative integer id' }).min(0, { error: 'a non-negative integer id' });
const component = z
  .looseObject({ type: z.string({ error: 'a string' }) }, { error: 'an object with a `type`, or null' })
  .nullable();

// The vocabulary and the merges hold ~150k entries each in a real tokenizer: their elements are checked by a plain
// loop (a zod record/array of unions over them takes ~0.5 s per load), the rest of the file by zod.
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 0;
const isMerge = (m: unknown): boolean =>
  typeof m === 'string' || (Array.isArray(m) && m.length === 2 && typeof m[0] === 'string' && typeof m[1] === 'string');
const isPiece = (p: unknown): boolean =>
  Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && typeof p[1] === 'number';

/** One large field: its container's test and description, and each element's. */
interface Bulk {
  field: string;
  container: (v: unknown) => boolean;
  expected: string;
  element: (v: unknown) => boolean;
  elementExpected: string;
}
const VOCAB: Bulk = {
  field: 'vocab',
  container: isObject,
  expected: 'an object of token -> id',
  element: isId,
  elementExpected: 'a non-negative integer id',
};
const MERGES: Bulk = {
  field: 'merges',
  container: Array.isArray,
  expected: 'an array of merges ("a b" or ["a", "b"])',
  element: isMerge,
  elementExpected: 'a merge ("a b" or ["a", "b"])',
};
const PIECES: Bulk = {
  field: 'vocab',
  container: Array.isArray,
  expected: 'an array of [token, score] pairs',
  element: isPiece,
  elementExpected: 'a [token, score] pair',
};

/**
 * The models the library builds by `model.type`; for other types (WordLevel) and none it goes by the fields present.
 */
const MODELS: Record<string, Bulk[]> = { BPE: [VOCAB, MERGES], WordPiece: [VOCAB], Unigram: [PIECES] };

const TokenizerJson = z.looseObject({
  model: z.looseObject({}, { error: 'an object {type, vocab, ...}' }),
  added_tokens: z.array(
    z.looseObject(
      { id, content: z.string({ error: 'a string' }), special: z.boolean({ error: 'true or false' }).optional() },
      { error: 'an object {id, content, special}' },
    ),
    { error: 'an array of {id, content, special}' },
  ),
  normalizer: component,
  pre_tokenizer: component,
  post_processor: component,
  decoder: component,
});

function show(v: unknown): string {
  if (v === undefined) return '(missing)';
  const s = JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

function refuse(source: string, root: unknown, path: readonly PropertyKey[], expected: string): never {
  let v: unknown = root;
  for (const key of path)
    v = typeof v === 'object' && v !== null ? (v as Record<PropertyKey, unknown>)[key] : undefined;
  throw new ConfigError(
    `${source}: tokenizer.json's \`${path.map(String).join('.')}\` = ${show(v)}; expected ${expected}. The file is damaged or not a Hugging Face tokenizer: download it again or use the model's original tokenizer files.`,
  );
}

function check(schema: z.ZodType, value: unknown, source: string, root: unknown, prefix: PropertyKey[]): void {
  const r = schema.safeParse(value);
  if (r.success) return;
  const issue = r.error.issues[0]!;
  refuse(source, root, [...prefix, ...issue.path], issue.message);
}

function checkModel(fields: Bulk[], model: Record<string, unknown>, source: string, root: unknown): void {
  for (const f of fields) {
    const v = model[f.field];
    if (!f.container(v)) refuse(source, root, ['model', f.field], f.expected);
    const values: unknown[] = Array.isArray(v) ? v : Object.values(v as object);
    for (let i = 0; i < values.length; i++) {
      if (f.element(values[i])) continue;
      refuse(source, root, ['model', f.field, Array.isArray(v) ? i : Object.keys(v as object)[i]!], f.elementExpected);
    }
  }
}

/**
 * Throw a ConfigError naming `source` (the model directory) and the field when `json` is not the shape of a
 * tokenizer.json: the model (BPE with vocab and merges, WordPiece, Unigram), added tokens, the pipeline components.
 */
export function checkTokenizerJson(json: unknown, source: string): void {
  if (!isObject(json)) {
    throw new ConfigError(
      `${source}: tokenizer.json is ${show(json)}, not a JSON object; the file is damaged or not a Hugging Face tokenizer.`,
    );
  }
  check(TokenizerJson, json, source, json, []);
  const model = json['model'] as Record<string, unknown>;
  const type = model['type'];
  if (type !== undefined && typeof type !== 'string')
    refuse(source, json, ['model', 'type'], `a model type name such as ${Object.keys(MODELS).join(', ')}`);
  if (type !== undefined && Object.hasOwn(MODELS, type)) return checkModel(MODELS[type]!, model, source, json);
  // Another type (WordLevel) or none: the library picks a model by the fields present, and needs a vocab.
  if (!('vocab' in model))
    refuse(source, json, ['model', 'vocab'], 'an object of token -> id, or an array of [token, score] pairs');
  checkModel(
    Array.isArray(model['vocab']) ? MODELS['Unigram']! : MODELS['merges' in model ? 'BPE' : 'WordPiece']!,
    model,
    source,
    json,
  );
}
