// Countdown tasks generated from a seed (always solvable), and an exhaustive solver over expression trees.
// Replaces RAGEN's download of Jiayi-Pan/Countdown-Tasks-3to4: same shape (3-4 numbers, target), no data set.
import { Rng } from '../../util/index.js';

/** One Countdown task: reach `target` using each of `numbers` exactly once. */
export interface CountdownTask {
  numbers: number[];
  target: number;
  /** The expression the generator built; a witness that the task is solvable. */
  witness: string;
}

/** How tasks are drawn. */
export interface CountdownGenOptions {
  minNumbers: number;
  maxNumbers: number;
  /** Numbers are drawn uniformly from 1..maxNumber. */
  maxNumber: number;
  /** Targets lie in 1..maxTarget. */
  maxTarget: number;
}

interface Node {
  value: number;
  expr: string;
  leaf: boolean;
}

const MAX_ATTEMPTS = 10_000;

function wrap(n: Node): string {
  return n.leaf ? n.expr : `(${n.expr})`;
}

/**
 * Draw a task: numbers uniformly from 1..maxNumber, then a random expression tree over all of them whose
 * intermediate values are positive integers (subtraction keeps the larger operand first, division only when
 * exact). The target is the tree's value; targets outside 1..maxTarget or equal to one of the numbers are
 * rejected and the draw repeated.
 */
export function generateTask(rng: Rng, opts: CountdownGenOptions): CountdownTask {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const count = rng.intBetween(opts.minNumbers, opts.maxNumbers);
    const numbers: number[] = [];
    for (let i = 0; i < count; i++) numbers.push(rng.intBetween(1, opts.maxNumber));
    const nodes: Node[] = numbers.map((n) => ({ value: n, expr: String(n), leaf: true }));
    while (nodes.length > 1) {
      const i = rng.int(nodes.length);
      let j = rng.int(nodes.length - 1);
      if (j >= i) j++;
      let a = nodes[i]!;
      let b = nodes[j]!;
      if (a.value < b.value) [a, b] = [b, a];
      const ops = ['+', '*'];
      if (a.value > b.value) ops.push('-');
      if (b.value > 1 && a.value % b.value === 0) ops.push('/');
      const op = rng.choice(ops);
      const value =
        op === '+'
          ? a.value + b.value
          : op === '-'
            ? a.value - b.value
            : op === '*'
              ? a.value * b.value
              : a.value / b.value;
      const node = { value, expr: `${wrap(a)} ${op} ${wrap(b)}`, leaf: false };
      nodes.splice(Math.max(i, j), 1);
      nodes.splice(Math.min(i, j), 1, node);
    }
    const target = nodes[0]!.value;
    if (target >= 1 && target <= opts.maxTarget && !numbers.includes(target)) {
      return { numbers, target, witness: nodes[0]!.expr };
    }
  }
  throw new Error(`Countdown: no task found in ${MAX_ATTEMPTS} draws for ${JSON.stringify(opts)}`);
}

interface Item {
  num: number;
  den: number;
  expr: string;
  leaf: boolean;
}

function gcd(a: number, b: number): number {
  a = Math.abs(a);
  b = Math.abs(b);
  while (b) [a, b] = [b, a % b];
  return a;
}

/**
 * Find an expression using each of `numbers` exactly once that equals `target`, or undefined if none exists.
 * Exhaustive search: repeatedly combine two of the remaining values with + - * / (exact rationals), as in the
 * classic "24 game" solver. Branches whose numerator or denominator leaves the safe-integer range are skipped.
 */
export function solveCountdown(numbers: readonly number[], target: number): string | undefined {
  const items: Item[] = numbers.map((n) => ({ num: n, den: 1, expr: String(n), leaf: true }));
  const seen = new Set<string>();
  const search = (list: Item[]): string | undefined => {
    if (list.length === 1) {
      const only = list[0]!;
      return only.den === 1 && only.num === target ? only.expr : undefined;
    }
    // Skip multisets of values already explored at this size (many orders reach the same state).
    const key = list
      .map((x) => `${x.num}/${x.den}`)
      .sort()
      .join(',');
    if (seen.has(key)) return undefined;
    seen.add(key);
    for (let i = 0; i < list.length; i++) {
      for (let j = 0; j < list.length; j++) {
        if (i === j) continue;
        const a = list[i]!;
        const b = list[j]!;
        const rest = list.filter((_, k) => k !== i && k !== j);
        const candidates: [number, number, string][] = [];
        if (i < j) {
          candidates.push([a.num * b.den + b.num * a.den, a.den * b.den, '+']);
          candidates.push([a.num * b.num, a.den * b.den, '*']);
        }
        candidates.push([a.num * b.den - b.num * a.den, a.den * b.den, '-']);
        if (b.num !== 0) candidates.push([a.num * b.den, a.den * b.num, '/']);
        for (let [num, den, op] of candidates) {
          if (!Number.isSafeInteger(num) || !Number.isSafeInteger(den)) continue;
          if (den < 0) {
            num = -num;
            den = -den;
          }
          const g = gcd(num, den) || 1;
          const item = {
            num: num / g,
            den: den / g,
            expr: `${a.leaf ? a.expr : `(${a.expr})`} ${op} ${b.leaf ? b.expr : `(${b.expr})`}`,
            leaf: false,
          };
          const found = search([...rest, item]);
          if (found !== undefined) return found;
        }
      }
    }
    return undefined;
  };
  return search(items);
}
