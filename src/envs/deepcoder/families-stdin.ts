// Problem families read from stdin and print to stdout (the contest style of DeepCoder's TACO and
// Codeforces sources). Each family: parameters from the seed, a TypeScript oracle for the expected
// outputs, and a Python reference solution; the tests check the two agree.
import { gridPath, islands } from './families-grid.js';
import { dedent, ints, word, type Family, type TestCase } from './problem.js';

const arrayInput = (a: number[]): string => `${a.length}\n${a.join(' ')}\n`;

const filteredSum: Family = {
  id: 'filtered-sum',
  tier: 'easy',
  style: 'stdin',
  make(rng) {
    const k = rng.intBetween(2, 9);
    const keep = rng.random() < 0.5;
    const cases = [[k], [1], [k * 3, -k, 5, 7]].concat(
      Array.from({ length: 7 }, () => ints(rng, rng.intBetween(1, 30), -100, 100)),
    );
    const answer = (a: number[]): number => a.filter((x) => (x % k === 0) === keep).reduce((s, x) => s + x, 0);
    const cond = keep ? `x % ${k} == 0` : `x % ${k} != 0`;
    return {
      title: `Sum of the numbers ${keep ? '' : 'not '}divisible by ${k}`,
      statement: `You are given n integers. Print the sum of those that are ${keep ? '' : 'not '}divisible by ${k} (print 0 if there are none).\n\nInput: the first line holds n (1 <= n <= 30); the second line holds the n integers, each between -100 and 100.\nOutput: one integer.`,
      tests: cases.map((a) => ({ input: arrayInput(a), output: `${answer(a)}\n` })),
      reference: dedent(`
        n = int(input())
        a = list(map(int, input().split()))
        print(sum(x for x in a if ${cond}))
      `),
    };
  },
};

const caesar: Family = {
  id: 'caesar',
  tier: 'easy',
  style: 'stdin',
  make(rng) {
    const s = rng.intBetween(1, 25);
    const back = rng.random() < 0.5;
    const shift = back ? 26 - s : s;
    const line = (): string =>
      Array.from({ length: rng.intBetween(1, 5) }, () => word(rng, rng.intBetween(1, 8))).join(' ');
    const cases = ['z', 'abc xyz', ...Array.from({ length: 8 }, line)];
    const enc = (t: string): string =>
      [...t].map((c) => (c === ' ' ? c : String.fromCharCode(((c.charCodeAt(0) - 97 + shift) % 26) + 97))).join('');
    return {
      title: `Shift letters ${back ? 'back' : 'forward'} by ${s}`,
      statement: `Encrypt a line of text by moving every letter ${s} place${s > 1 ? 's' : ''} ${back ? 'backward' : 'forward'} in the alphabet, wrapping around (${back ? "'a' wraps to 'z'" : "'z' wraps to 'a'"}). Spaces stay as they are.\n\nInput: one line of lowercase letters and single spaces.\nOutput: the encrypted line.`,
      tests: cases.map((t) => ({ input: `${t}\n`, output: `${enc(t)}\n` })),
      reference: dedent(`
        s = input()
        print(''.join(c if c == ' ' else chr((ord(c) - 97 + ${shift}) % 26 + 97) for c in s))
      `),
    };
  },
};

const WORDS = ['Fizz', 'Buzz', 'Ping', 'Pong', 'Tick', 'Tock', 'Zip', 'Zap', 'Foo', 'Bar'];

const fizzWords: Family = {
  id: 'fizz-words',
  tier: 'easy',
  style: 'stdin',
  make(rng) {
    const a = rng.intBetween(2, 6);
    let b = rng.intBetween(2, 7);
    if (b === a) b = a + 1;
    const [wa, wb] = rng.shuffle([...WORDS]).slice(0, 2) as [string, string];
    const line = (i: number): string =>
      i % a === 0 && i % b === 0 ? wa + wb : i % a === 0 ? wa : i % b === 0 ? wb : String(i);
    const ns = [
      1,
      a * b,
      ...rng
        .shuffle(Array.from({ length: 49 }, (_, i) => i + 2))
        .filter((n) => n !== a * b)
        .slice(0, 8),
    ];
    return {
      title: `${wa}${wb} with ${a} and ${b}`,
      statement: `Print the numbers from 1 to n, one a line, but print "${wa}" instead of multiples of ${a}, "${wb}" instead of multiples of ${b}, and "${wa}${wb}" instead of multiples of both.\n\nInput: one integer n (1 <= n <= 50).\nOutput: n lines.`,
      tests: ns.map((n) => ({
        input: `${n}\n`,
        output: Array.from({ length: n }, (_, i) => line(i + 1)).join('\n') + '\n',
      })),
      reference: dedent(`
        n = int(input())
        for i in range(1, n + 1):
            if i % ${a} == 0 and i % ${b} == 0:
                print('${wa}${wb}')
            elif i % ${a} == 0:
                print('${wa}')
            elif i % ${b} == 0:
                print('${wb}')
            else:
                print(i)
      `),
    };
  },
};

const STATS = {
  spread: {
    text: 'the largest number minus the smallest',
    ts: (a: number[]) => Math.max(...a) - Math.min(...a),
    py: 'max(a) - min(a)',
  },
  evens: {
    text: 'how many of the numbers are even',
    ts: (a: number[]) => a.filter((x) => x % 2 === 0).length,
    py: 'sum(1 for x in a if x % 2 == 0)',
  },
  squares: {
    text: 'the sum of the squares of the numbers',
    ts: (a: number[]) => a.reduce((s, x) => s + x * x, 0),
    py: 'sum(x * x for x in a)',
  },
  aboveFirst: {
    text: 'how many numbers are strictly greater than the first one',
    ts: (a: number[]) => a.filter((x) => x > a[0]!).length,
    py: 'sum(1 for x in a if x > a[0])',
  },
  absSum: {
    text: 'the sum of the absolute values of the numbers',
    ts: (a: number[]) => a.reduce((t, x) => t + Math.abs(x), 0),
    py: 'sum(abs(x) for x in a)',
  },
  distinct: { text: 'how many different values occur', ts: (a: number[]) => new Set(a).size, py: 'len(set(a))' },
} as const;

const arrayStat: Family = {
  id: 'array-stat',
  tier: 'easy',
  style: 'stdin',
  make(rng) {
    const key = rng.choice(Object.keys(STATS) as (keyof typeof STATS)[]);
    const stat = STATS[key];
    const cases = [[5], [2, 2, 2], ...Array.from({ length: 8 }, () => ints(rng, rng.intBetween(1, 25), -50, 50))];
    return {
      title: `Array statistic: ${stat.text}`,
      statement: `Read n integers and print ${stat.text}.\n\nInput: n (1 <= n <= 25) on the first line, the n integers (each between -50 and 50) on the second.\nOutput: one integer.`,
      tests: cases.map((a) => ({ input: arrayInput(a), output: `${stat.ts(a)}\n` })),
      reference: dedent(`
        n = int(input())
        a = list(map(int, input().split()))
        print(${stat.py})
      `),
    };
  },
};

const RUNS = {
  increasing: {
    text: 'each number is strictly greater than the one before it',
    title: 'Longest strictly increasing stretch',
    ts: (x: number, y: number) => y > x,
    py: '>',
    hi: 30,
  },
  decreasing: {
    text: 'each number is strictly smaller than the one before it',
    title: 'Longest strictly decreasing stretch',
    ts: (x: number, y: number) => y < x,
    py: '<',
    hi: 30,
  },
  equal: {
    text: 'all numbers are equal',
    title: 'Longest block of equal neighbours',
    ts: (x: number, y: number) => y === x,
    py: '==',
    hi: 3,
  },
  nonDecreasing: {
    text: 'no number is smaller than the one before it',
    title: 'Longest non-decreasing stretch',
    ts: (x: number, y: number) => y >= x,
    py: '>=',
    hi: 12,
  },
} as const;

const longestRun: Family = {
  id: 'longest-run',
  tier: 'medium',
  style: 'stdin',
  make(rng) {
    const run = RUNS[rng.choice(Object.keys(RUNS) as (keyof typeof RUNS)[])];
    const answer = (a: number[]): number => {
      let best = 1;
      let cur = 1;
      for (let i = 1; i < a.length; i++) {
        cur = run.ts(a[i - 1]!, a[i]!) ? cur + 1 : 1;
        best = Math.max(best, cur);
      }
      return best;
    };
    const cases = [
      [7],
      [1, 2, 3, 4],
      [4, 4, 4, 1],
      ...Array.from({ length: 8 }, () => ints(rng, rng.intBetween(1, 40), 0, run.hi)),
    ];
    return {
      title: run.title,
      statement: `Given a sequence of n integers, find the length of the longest contiguous stretch in which ${run.text}.\n\nInput: n (1 <= n <= 40), then the n integers on one line.\nOutput: the length.`,
      tests: cases.map((a) => ({ input: arrayInput(a), output: `${answer(a)}\n` })),
      reference: dedent(`
        n = int(input())
        a = list(map(int, input().split()))
        best = cur = 1
        for i in range(1, n):
            cur = cur + 1 if a[i] ${run.py} a[i - 1] else 1
            best = max(best, cur)
        print(best)
      `),
    };
  },
};

const PAIRS = {
  sum: {
    title: 'Pairs with a given sum',
    text: 'a[i] + a[j] equals T',
    ts: (x: number, y: number, t: number) => x + y === t,
    py: 'a[i] + a[j] == t',
    tHi: 30,
  },
  diff: {
    title: 'Pairs at a given distance',
    text: 'the absolute difference of a[i] and a[j] equals T',
    ts: (x: number, y: number, t: number) => Math.abs(x - y) === t,
    py: 'abs(a[i] - a[j]) == t',
    tHi: 10,
  },
  atMost: {
    title: 'Pairs with a small sum',
    text: 'a[i] + a[j] is at most T',
    ts: (x: number, y: number, t: number) => x + y <= t,
    py: 'a[i] + a[j] <= t',
    tHi: 30,
  },
} as const;

const pairCount: Family = {
  id: 'pair-count',
  tier: 'medium',
  style: 'stdin',
  make(rng) {
    const pair = PAIRS[rng.choice(Object.keys(PAIRS) as (keyof typeof PAIRS)[])];
    const answer = (a: number[], t: number): number => {
      let c = 0;
      for (let i = 0; i < a.length; i++) for (let j = i + 1; j < a.length; j++) if (pair.ts(a[i]!, a[j]!, t)) c++;
      return c;
    };
    const cases: [number[], number][] = [
      [[1], 2],
      [[3, 3, 3], 6],
    ];
    for (let k = 0; k < 8; k++) cases.push([ints(rng, rng.intBetween(2, 60), 0, 20), rng.intBetween(0, pair.tHi)]);
    return {
      title: pair.title,
      statement: `Count the pairs of positions i < j such that ${pair.text}.\n\nInput: the first line holds n and T; the second the n integers a[1..n] (n <= 60, values between 0 and 20).\nOutput: the number of pairs.`,
      tests: cases.map(([a, t]) => ({ input: `${a.length} ${t}\n${a.join(' ')}\n`, output: `${answer(a, t)}\n` })),
      reference: dedent(`
        n, t = map(int, input().split())
        a = list(map(int, input().split()))
        count = 0
        for i in range(n):
            for j in range(i + 1, n):
                if ${pair.py}:
                    count += 1
        print(count)
      `),
    };
  },
};

const BRACKETS = ['()', '[]', '{}', '<>'];

const balanced: Family = {
  id: 'balanced',
  tier: 'medium',
  style: 'stdin',
  make(rng) {
    const kinds = rng.shuffle([...BRACKETS]).slice(0, rng.intBetween(2, 3));
    const opens = kinds.map((k) => k[0]!).join('');
    const closes = kinds.map((k) => k[1]!).join('');
    const check = (s: string): boolean => {
      const stack: string[] = [];
      for (const c of s) {
        if (opens.includes(c)) stack.push(c);
        else if (stack.pop() !== opens[closes.indexOf(c)]) return false;
      }
      return stack.length === 0;
    };
    const wellFormed = (depth: number): string => {
      let s = '';
      while (rng.random() < 0.6 && s.length < 20) {
        const k = rng.choice(kinds);
        s += k[0] + (depth < 4 ? wellFormed(depth + 1) : '') + k[1];
      }
      return s;
    };
    const mutate = (s: string): string => {
      if (s.length === 0) return rng.choice(kinds)[1]!;
      const i = rng.int(s.length);
      const all = opens + closes;
      return s.slice(0, i) + all[rng.int(all.length)] + s.slice(i + 1);
    };
    const strings = [
      kinds[0]!,
      kinds[0]![1]! + kinds[0]![0]!,
      ...Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? wellFormed(0) || kinds[1]! : mutate(wellFormed(0)))),
    ];
    return {
      title: `Balanced ${kinds.join(' ')}`,
      statement: `A string over the brackets ${kinds.join(' ')} is balanced when every opening bracket is closed by the matching closing bracket in the right order. Decide whether the given string is balanced.\n\nInput: one non-empty line of bracket characters.\nOutput: YES or NO.`,
      tests: strings.map((s) => ({ input: `${s}\n`, output: check(s) ? 'YES\n' : 'NO\n' })),
      reference: dedent(`
        s = input().strip()
        pairs = {${kinds.map((k) => `'${k[1]}': '${k[0]}'`).join(', ')}}
        stack = []
        ok = True
        for c in s:
            if c in pairs:
                if not stack or stack.pop() != pairs[c]:
                    ok = False
                    break
            else:
                stack.append(c)
        print('YES' if ok and not stack else 'NO')
      `),
    };
  },
};

const lis: Family = {
  id: 'lis',
  tier: 'hard',
  style: 'stdin',
  make(rng) {
    const strict = rng.random() < 0.5;
    const down = rng.random() < 0.3;
    const before = (x: number, y: number): boolean => (down ? (strict ? x > y : x >= y) : strict ? x < y : x <= y);
    const answer = (a: number[]): number => {
      const best = a.map(() => 1);
      for (let i = 0; i < a.length; i++)
        for (let j = 0; j < i; j++) if (before(a[j]!, a[i]!)) best[i] = Math.max(best[i]!, best[j]! + 1);
      return Math.max(...best);
    };
    const kind = down
      ? strict
        ? 'strictly decreasing'
        : 'non-increasing'
      : strict
        ? 'strictly increasing'
        : 'non-decreasing';
    const cases = [
      [4],
      [5, 4, 3],
      [2, 2, 2, 2],
      ...Array.from({ length: 8 }, () => ints(rng, rng.intBetween(1, 150), 0, rng.intBetween(5, 100))),
    ];
    return {
      title: `Longest ${down ? (strict ? 'decreasing' : 'non-increasing') : strict ? 'increasing' : 'non-decreasing'} subsequence`,
      statement: `Delete as few numbers as you like from the sequence (keeping the order of the rest) so that what remains is ${kind}. Print the length of the longest such remainder.\n\nInput: n (1 <= n <= 150), then the n integers.\nOutput: one integer.`,
      tests: cases.map((a) => ({ input: arrayInput(a), output: `${answer(a)}\n` })),
      reference: dedent(`
        import bisect
        n = int(input())
        a = list(map(int, input().split()))${down ? '\n        a = [-x for x in a]' : ''}
        tails = []
        for x in a:
            i = bisect.${strict ? 'bisect_left' : 'bisect_right'}(tails, x)
            if i == len(tails):
                tails.append(x)
            else:
                tails[i] = x
        print(len(tails))
      `),
    };
  },
};

const knapsack: Family = {
  id: 'knapsack',
  tier: 'hard',
  style: 'stdin',
  make(rng) {
    const thing = rng.choice(['crate', 'parcel', 'gem', 'book', 'tool']);
    const cases: TestCase[] = [];
    for (let k = 0; k < 10; k++) {
      const n = rng.intBetween(1, 14);
      const cap = rng.intBetween(k === 0 ? 0 : 1, 100);
      const items = Array.from({ length: n }, () => [rng.intBetween(1, 40), rng.intBetween(1, 60)] as const);
      const best = new Array<number>(cap + 1).fill(0);
      for (const [w, v] of items) for (let c = cap; c >= w; c--) best[c] = Math.max(best[c]!, best[c - w]! + v);
      cases.push({
        input: `${n} ${cap}\n${items.map(([w, v]) => `${w} ${v}`).join('\n')}\n`,
        output: `${best[cap]}\n`,
      });
    }
    return {
      title: `Pack the ${thing}s`,
      statement: `Each ${thing} has a weight and a value. Choose some of them (each at most once) with total weight at most W and the largest total value. Print that value.\n\nInput: n and W (1 <= n <= 14, 0 <= W <= 100), then n lines "weight value".\nOutput: the best total value.`,
      tests: cases,
      reference: dedent(`
        n, cap = map(int, input().split())
        best = [0] * (cap + 1)
        for _ in range(n):
            w, v = map(int, input().split())
            for c in range(cap, w - 1, -1):
                best[c] = max(best[c], best[c - w] + v)
        print(best[cap])
      `),
    };
  },
};

/** The stdin-style families, easy to hard. */
export const STDIN_FAMILIES: readonly Family[] = [
  filteredSum,
  caesar,
  fizzWords,
  arrayStat,
  longestRun,
  pairCount,
  balanced,
  islands,
  gridPath,
  lis,
  knapsack,
];
