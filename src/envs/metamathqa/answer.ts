// Answer checking for question-answer envs: extract "The answer is: X", normalise, compare numbers as numbers.
// RAGEN compares lowercased, whitespace-stripped strings; we also accept 1,000 == 1000.0 and 3/4 == 0.75.

const ANSWER_MARK = /the answer is:?/gi;

/** The text after the last "The answer is:" in a MetaMathQA response, or undefined when absent. */
export function extractAnswer(response: string): string | undefined {
  let end = -1;
  for (const m of response.matchAll(ANSWER_MARK)) end = m.index + m[0].length;
  return end < 0 ? undefined : response.slice(end).trim();
}

/** Lowercase, drop whitespace, `$`, `\boxed{}`, a trailing period, LaTeX spacing, and "The answer is:". */
export function normalizeAnswer(text: string): string {
  let s = extractAnswer(text) ?? text;
  s = s.toLowerCase().replace(/\s+/g, '');
  s = s.replace(/\\[!,;:]/g, '').replace(/\\\$|\$/g, '');
  const boxed = /^\\boxed\{(.*)\}$/.exec(s);
  if (boxed) s = boxed[1]!;
  s = s.replace(/\\[dt]frac/g, '\\frac');
  while (s.endsWith('.')) s = s.slice(0, -1);
  return s;
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/;
const GROUPED = /^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?$/;

/** A number parsed from normalised answer text, or undefined: 12, -3.5, 1,000, 3/4, \frac{3}{4}, 25%, 12 apples. */
export function parseNumber(normalised: string): number | undefined {
  let s = normalised;
  if (s.length > 200) return undefined;
  s = s.replace(/^(-?[\d.,/]+)(?:%|[a-z]+)$/, '$1'); // a unit or percent sign after the number
  const frac = /^(-?)\\frac\{([^{}]+)\}\{([^{}]+)\}$/.exec(s);
  if (frac) s = `${frac[1]}${frac[2]}/${frac[3]}`;
  const slash = s.indexOf('/');
  if (slash >= 0) {
    const num = parseNumber(s.slice(0, slash));
    const den = parseNumber(s.slice(slash + 1));
    return num === undefined || den === undefined || den === 0 ? undefined : num / den;
  }
  if (GROUPED.test(s)) s = s.replace(/,/g, '');
  if (!DECIMAL.test(s)) return undefined;
  const x = Number(s);
  return Number.isFinite(x) ? x : undefined;
}

/** Whether `given` answers `reference`: equal numbers (relative tolerance 1e-9) or equal normalised text. */
export function answersMatch(given: string, reference: string): boolean {
  const a = normalizeAnswer(given);
  const b = normalizeAnswer(reference);
  if (a === b) return a.length > 0;
  const x = parseNumber(a);
  const y = parseNumber(b);
  if (x === undefined || y === undefined) return false;
  return Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x), Math.abs(y));
}
