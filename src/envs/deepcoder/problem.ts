// The shape of a generated programming problem and the helpers its families share (Python value
// rendering, random arrays). Problems are ours: written from templates and seeds, not copied from a dataset.
import type { Rng } from '../../util/index.js';

/** Difficulty tiers (DeepCoder's sources mix easy to hard contest problems). */
export const TIERS = ['easy', 'medium', 'hard'] as const;
export type Tier = (typeof TIERS)[number];

/**
 * `stdin`: a program reads stdin and prints; `call`: a method of `class Solution` is called with arguments
 * (LiveCodeBench's "functional" tests).
 */
export const STYLES = ['stdin', 'call'] as const;
export type Style = (typeof STYLES)[number];

/** One hidden test: stdin text (or a JSON array of arguments) and the expected stdout (or `str(result)`). */
export interface TestCase {
  input: string;
  output: string;
}

/** A generated problem with its hidden tests and a reference solution in Python. */
export interface Problem {
  /** `<family>-<index>`, stable for a given index. */
  id: string;
  family: string;
  tier: Tier;
  style: Style;
  title: string;
  /** The task, the input/output format and examples, as the model reads it. */
  statement: string;
  /** `call` style: the method to implement, and its signature line (`def f(self, nums: list[int]) -> int:`). */
  functionName?: string;
  signature?: string;
  tests: TestCase[];
  /** A Python program that passes every test. */
  reference: string;
}

/** What a family's generator returns; `problems.ts` adds id, family, tier, style and examples. */
export type ProblemDraft = Omit<Problem, 'id' | 'family' | 'tier' | 'style'>;

/** A template of problems: each seed gives other parameters, names and tests. */
export interface Family {
  id: string;
  tier: Tier;
  style: Style;
  make(rng: Rng): ProblemDraft;
}

/** Python's `repr` of a JSON-like value (ints, bools, None, strings of printable ASCII, lists). */
export function pyRepr(v: unknown): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new RangeError(`pyRepr handles integers only, got ${v}`);
    return String(v);
  }
  if (typeof v === 'string') {
    const quote = v.includes("'") && !v.includes('"') ? '"' : "'";
    const body = v.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll(quote, `\\${quote}`);
    return `${quote}${body}${quote}`;
  }
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  throw new TypeError(`pyRepr cannot render ${typeof v}`);
}

/** Python's `str` of a value: strings bare, everything else as `repr`. */
export function pyStr(v: unknown): string {
  return typeof v === 'string' ? v : pyRepr(v);
}

/** `n` integers in [lo, hi]. */
export function ints(rng: Rng, n: number, lo: number, hi: number): number[] {
  return Array.from({ length: n }, () => rng.intBetween(lo, hi));
}

/** A word of `n` letters from `alphabet`. */
export function word(rng: Rng, n: number, alphabet = 'abcdefghijklmnopqrstuvwxyz'): string {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[rng.int(alphabet.length)];
  return s;
}

/** Remove a common leading indentation and surrounding blank lines (so templates can be indented in source). */
export function dedent(text: string): string {
  const lines = text.replace(/^\n+|\s+$/g, '').split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
  return lines.map((l) => l.slice(indent)).join('\n') + '\n';
}
