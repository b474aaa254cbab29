// The generated DeepCoder problem set: problem k comes from family k mod F with a seed derived from k,
// so the set is the same on every machine; every fifth problem is held out for validation.
import { Rng } from '../../util/index.js';
import { CALL_FAMILIES } from './families-call.js';
import { STDIN_FAMILIES } from './families-stdin.js';
import { pyRepr, type Family, type Problem, type Style, type Tier } from './problem.js';

/** Every family, stdin ones first. */
export const FAMILIES: readonly Family[] = [...STDIN_FAMILIES, ...CALL_FAMILIES];

/** How many examples of the hidden tests the statement shows (LiveCodeBench shows the public ones). */
const EXAMPLES = 2;

const cache = new Map<number, Problem[]>();

/** Problem `k` of the set: deterministic in k alone. */
export function generateProblem(k: number): Problem {
  const family = FAMILIES[k % FAMILIES.length]!;
  const draft = family.make(new Rng((Math.imul(k + 1, 0x9e3779b1) ^ 0x5bd1e995) >>> 0));
  // Families list their fixed edge cases first and random cases last: the shown examples are random ones.
  // A repeated input is dropped (it would weigh twice in passed / total).
  const seen = new Set<string>();
  const tests = [...draft.tests.slice(-EXAMPLES), ...draft.tests.slice(0, -EXAMPLES)].filter(
    (t) => !seen.has(t.input) && seen.add(t.input),
  );
  return { id: `${family.id}-${k}`, family: family.id, tier: family.tier, style: family.style, ...draft, tests };
}

/** The first `count` problems (cached). */
export function generateProblems(count: number): Problem[] {
  let list = cache.get(count);
  if (!list) {
    list = Array.from({ length: count }, (_, k) => generateProblem(k));
    cache.set(count, list);
  }
  return list;
}

/** Whether problem `k` belongs to the validation split (every fifth one). */
export const isValProblem = (k: number): boolean => k % 5 === 4;

/** The problems a (mode, tiers, styles) selection draws from, in index order. */
export function problemPool(
  count: number,
  mode: 'train' | 'val',
  tiers: readonly Tier[],
  styles: readonly Style[],
): Problem[] {
  return generateProblems(count).filter(
    (p, k) => isValProblem(k) === (mode === 'val') && tiers.includes(p.tier) && styles.includes(p.style),
  );
}

/** The text the model reads: statement, examples, and how to answer (starter code for call style). */
export function renderProblem(p: Problem): string {
  const parts = [`# ${p.title} (${p.tier})`, '', p.statement, ''];
  p.tests.slice(0, EXAMPLES).forEach((t, i) => {
    if (p.style === 'stdin') {
      parts.push(`Example ${i + 1}`, 'Input:', t.input.trimEnd(), 'Output:', t.output.trimEnd(), '');
    } else {
      const args = (JSON.parse(t.input) as unknown[]).map(pyRepr).join(', ');
      parts.push(`Example ${i + 1}: ${p.functionName}(${args}) returns ${t.output}`, '');
    }
  });
  if (p.style === 'stdin')
    parts.push(
      'Write a Python 3 program that reads the input from standard input and prints the answer to standard output.',
    );
  else
    parts.push(
      'Complete this Python 3 code (answer with the whole class, or with just the method):',
      `class Solution:\n    ${p.signature}`,
    );
  return parts.join('\n');
}
