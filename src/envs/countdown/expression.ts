// Countdown answers: a tokenizer, a recursive-descent parser and exact rational evaluation, never `eval`.
// Scoring follows RAGEN/TinyZero (1.0 correct, 0.1 right numbers but wrong value, 0 otherwise) with bounded work.

/** Longest answer we read; a Countdown expression over at most 6 numbers never needs more. */
export const MAX_EXPRESSION_CHARS = 1000;
/** Deepest nesting of parentheses and unary signs we accept (keeps the recursion far from the stack limit). */
export const MAX_EXPRESSION_DEPTH = 64;

/** An exact rational number `num / den` with `den > 0`, in lowest terms. */
export interface Rational {
  num: bigint;
  den: bigint;
}

/** A parsed expression: its postfix form and the numbers it uses, as written (digit strings). */
export interface ParsedExpression {
  /** Postfix program: digit strings are numbers; `+ - * /` are binary ops; `neg` is unary minus. */
  postfix: string[];
  /** Every number literal, leading zeros removed ("007" -> "7"). */
  numbers: string[];
}

export type ParseResult = { ok: true; expr: ParsedExpression } | { ok: false; reason: string };

const OPERATOR_ALIASES: Record<string, string> = { '×': '*', '÷': '/', '−': '-', '–': '-' };

/** Split an answer into tokens: digit runs, `+ - * / ( )` (and × ÷ − as aliases). Whitespace is skipped. */
export function tokenize(text: string): { ok: true; tokens: string[] } | { ok: false; reason: string } {
  if (text.length > MAX_EXPRESSION_CHARS) {
    return {
      ok: false,
      reason: `the answer is ${text.length} characters long; an expression needs at most ${MAX_EXPRESSION_CHARS}`,
    };
  }
  const tokens: string[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c >= '0' && c <= '9') {
      let j = i + 1;
      while (j < text.length && text[j]! >= '0' && text[j]! <= '9') j++;
      tokens.push(text.slice(i, j));
      i = j;
    } else if (c === '+' || c === '-' || c === '*' || c === '/' || c === '(' || c === ')') {
      tokens.push(c);
      i++;
    } else if (OPERATOR_ALIASES[c] !== undefined) {
      tokens.push(OPERATOR_ALIASES[c]!);
      i++;
    } else if (/\s/.test(c)) {
      i++;
    } else {
      const shown =
        c === '='
          ? "'=' (give the expression only, without '= target')"
          : JSON.stringify(String.fromCodePoint(text.codePointAt(i)!));
      return {
        ok: false,
        reason: `unexpected character ${shown} at position ${i}; use integers, + - * / and parentheses`,
      };
    }
  }
  if (tokens.length === 0)
    return { ok: false, reason: 'the answer is empty; give an arithmetic expression such as (3 + 5) * 2' };
  return { ok: true, tokens };
}

/** Parse an answer into postfix form. Syntax errors, depth and length limits are `{ok: false}`, never exceptions. */
export function parseExpression(text: string): ParseResult {
  const lexed = tokenize(text);
  if (!lexed.ok) return lexed;
  const tokens = lexed.tokens;
  const postfix: string[] = [];
  const numbers: string[] = [];
  let pos = 0;
  let error: string | undefined;

  const fail = (reason: string): false => {
    error ??= reason;
    return false;
  };
  const where = (): string => (pos < tokens.length ? `'${tokens[pos]}' (token ${pos + 1})` : 'the end of the answer');

  // Each returns false on a syntax error (recorded in `error`); `depth` counts open parentheses and unary signs.
  const expr = (depth: number): boolean => {
    if (!term(depth)) return false;
    while (pos < tokens.length && (tokens[pos] === '+' || tokens[pos] === '-')) {
      const op = tokens[pos++]!;
      if (!term(depth)) return false;
      postfix.push(op);
    }
    return true;
  };
  const term = (depth: number): boolean => {
    if (!unary(depth)) return false;
    while (pos < tokens.length && (tokens[pos] === '*' || tokens[pos] === '/')) {
      const op = tokens[pos++]!;
      if (!unary(depth)) return false;
      postfix.push(op);
    }
    return true;
  };
  const unary = (depth: number): boolean => {
    const t = tokens[pos];
    if (t === '-' || t === '+') {
      if (depth >= MAX_EXPRESSION_DEPTH) return fail(`the expression nests deeper than ${MAX_EXPRESSION_DEPTH} levels`);
      pos++;
      if (!unary(depth + 1)) return false;
      if (t === '-') postfix.push('neg');
      return true;
    }
    return primary(depth);
  };
  const primary = (depth: number): boolean => {
    const t = tokens[pos];
    if (t === undefined) return fail('the expression ends where a number or ( was expected');
    if (t === '(') {
      if (depth >= MAX_EXPRESSION_DEPTH) return fail(`the expression nests deeper than ${MAX_EXPRESSION_DEPTH} levels`);
      pos++;
      if (!expr(depth + 1)) return false;
      if (tokens[pos] !== ')') return fail(`expected ')' at ${where()}`);
      pos++;
      return true;
    }
    if (t[0]! >= '0' && t[0]! <= '9') {
      pos++;
      const digits = t.replace(/^0+(?=\d)/, '');
      numbers.push(digits);
      postfix.push(digits);
      return true;
    }
    return fail(`expected a number or ( at ${where()}`);
  };

  if (!expr(0)) return { ok: false, reason: `not a valid expression: ${error}` };
  if (pos < tokens.length) return { ok: false, reason: `not a valid expression: unexpected ${where()}` };
  return { ok: true, expr: { postfix, numbers } };
}

function gcd(a: bigint, b: bigint): bigint {
  if (a < 0n) a = -a;
  if (b < 0n) b = -b;
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

function rational(num: bigint, den: bigint): Rational {
  if (den < 0n) {
    num = -num;
    den = -den;
  }
  const g = gcd(num, den);
  return g > 1n ? { num: num / g, den: den / g } : { num, den };
}

/** Evaluate a parsed expression exactly. Division by zero gives `undefined` (never Infinity or NaN). */
export function evaluate(expr: ParsedExpression): Rational | undefined {
  const stack: Rational[] = [];
  for (const t of expr.postfix) {
    if (t === 'neg') {
      const a = stack.pop()!;
      stack.push({ num: -a.num, den: a.den });
      continue;
    }
    if (t !== '+' && t !== '-' && t !== '*' && t !== '/') {
      stack.push({ num: BigInt(t), den: 1n });
      continue;
    }
    const b = stack.pop()!;
    const a = stack.pop()!;
    if (t === '+') stack.push(rational(a.num * b.den + b.num * a.den, a.den * b.den));
    else if (t === '-') stack.push(rational(a.num * b.den - b.num * a.den, a.den * b.den));
    else if (t === '*') stack.push(rational(a.num * b.num, a.den * b.den));
    else {
      if (b.num === 0n) return undefined;
      stack.push(rational(a.num * b.den, a.den * b.num));
    }
  }
  return stack[0];
}

/** Whether `used` (digit strings) is exactly the multiset `given`: each given number used exactly once. */
export function usesExactly(used: readonly string[], given: readonly number[]): boolean {
  if (used.length !== given.length) return false;
  const counts = new Map<string, number>();
  for (const n of given) counts.set(String(n), (counts.get(String(n)) ?? 0) + 1);
  for (const u of used) {
    const c = counts.get(u);
    if (!c) return false;
    counts.set(u, c - 1);
  }
  return true;
}

/** The outcome of scoring one answer. `valid` is false only when the text is not an expression at all. */
export interface CountdownScore {
  valid: boolean;
  /** The value is the target and each number is used exactly once. */
  correct: boolean;
  /** 1.0 correct, 0.1 right numbers but wrong value, 0 otherwise. */
  score: number;
  /** The exact value when the expression could be evaluated with the right numbers, e.g. "24" or "7/2". */
  value?: string;
  reason?: string;
}

/** Score a Countdown answer against `numbers` (each used exactly once) and `target`. */
export function scoreAnswer(
  answer: string,
  numbers: readonly number[],
  target: number,
  correctScore = 1,
  formatScore = 0.1,
): CountdownScore {
  const parsed = parseExpression(answer.trim());
  if (!parsed.ok) return { valid: false, correct: false, score: 0, reason: parsed.reason };
  const { expr } = parsed;
  if (!usesExactly(expr.numbers, numbers)) {
    const shown = expr.numbers.map((n) => (n.length > 12 ? `${n.slice(0, 12)}...` : n)).join(', ');
    return {
      valid: true,
      correct: false,
      score: 0,
      reason: `the expression uses [${shown}] but must use each of [${numbers.join(', ')}] exactly once`,
    };
  }
  const value = evaluate(expr);
  if (value === undefined) return { valid: true, correct: false, score: 0, reason: 'the expression divides by zero' };
  const shown = value.den === 1n ? String(value.num) : `${value.num}/${value.den}`;
  if (value.den === 1n && value.num === BigInt(target))
    return { valid: true, correct: true, score: correctScore, value: shown };
  return {
    valid: true,
    correct: false,
    score: formatScore,
    value: shown,
    reason: `the expression equals ${shown}, not ${target}`,
  };
}
