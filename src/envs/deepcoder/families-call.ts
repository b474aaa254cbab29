// Problem families in the function-call style (LiveCodeBench's "functional" tests): the model completes a
// method of `class Solution`, which is called with each test's arguments; `str(result)` is compared.
import type { Rng } from '../../util/index.js';
import { dedent, ints, pyStr, word, type Family, type ProblemDraft } from './problem.js';

/** The draft of a call-style problem from its cases: each case's arguments and the oracle's result. */
function callDraft(
  fields: { title: string; statement: string; functionName: string; params: string; returns: string; body: string },
  cases: unknown[][],
  oracle: (...args: any[]) => unknown,
): ProblemDraft {
  const signature = `def ${fields.functionName}(self, ${fields.params}) -> ${fields.returns}:`;
  return {
    title: fields.title,
    statement: fields.statement,
    functionName: fields.functionName,
    signature,
    tests: cases.map((args) => ({ input: JSON.stringify(args), output: pyStr(oracle(...args)) })),
    reference: `class Solution:\n    ${signature}\n${dedent(fields.body).replace(/^(?=.)/gm, '        ')}`,
  };
}

let primes: Uint8Array | undefined;
/** primes[n] = 1 when n is prime, for n <= 70000 (the largest hi of count-primes). */
function primeTable(): Uint8Array {
  if (primes) return primes;
  primes = new Uint8Array(70_001).fill(1);
  primes[0] = primes[1] = 0;
  for (let p = 2; p * p <= 70_000; p++) if (primes[p]) for (let m = p * p; m <= 70_000; m += p) primes[m] = 0;
  return primes;
}

const pick = (rng: Rng, names: string[]): string => rng.choice(names);

const digitPowerSum: Family = {
  id: 'digit-power-sum',
  tier: 'easy',
  style: 'call',
  make(rng) {
    const p = rng.intBetween(1, 4);
    const name = pick(rng, ['digit_power_sum', 'powered_digits', 'sum_digit_powers']);
    const cases = [[0], [9], [10], ...ints(rng, 7, 1, 1_000_000).map((n) => [n])];
    return callDraft(
      {
        title: `Sum of digits to the power ${p}`,
        statement: `Write \`${name}(n)\`: given a non-negative integer n (at most 1000000), return the sum of its decimal digits, each raised to the power ${p}.`,
        functionName: name,
        params: 'n: int',
        returns: 'int',
        body: `return sum(int(d) ** ${p} for d in str(n))`,
      },
      cases,
      (n: number) => [...String(n)].reduce((s, d) => s + Number(d) ** p, 0),
    );
  },
};

const rotate: Family = {
  id: 'rotate',
  tier: 'easy',
  style: 'call',
  make(rng) {
    const right = rng.random() < 0.5;
    const name = pick(rng, ['rotate', 'rotate_list', 'shift_items']);
    const cases: unknown[][] = [
      [[], 3],
      [[1], 5],
      [[1, 2, 3], 3],
    ];
    for (let k = 0; k < 7; k++) cases.push([ints(rng, rng.intBetween(1, 12), -9, 9), rng.intBetween(0, 30)]);
    return callDraft(
      {
        title: `Rotate a list to the ${right ? 'right' : 'left'}`,
        statement: `Write \`${name}(nums, k)\`: return a new list with the items of nums rotated k places to the ${right ? 'right (the last item moves to the front)' : 'left (the first item moves to the back)'}. k may exceed the length; an empty list stays empty.`,
        functionName: name,
        params: 'nums: list[int], k: int',
        returns: 'list[int]',
        body: `
          if not nums:
              return []
          k %= len(nums)
          return ${right ? 'nums[len(nums) - k:] + nums[:len(nums) - k]' : 'nums[k:] + nums[:k]'}
        `,
      },
      cases,
      (nums: number[], k: number) => {
        if (nums.length === 0) return [];
        const s = right ? (nums.length - (k % nums.length)) % nums.length : k % nums.length;
        return [...nums.slice(s), ...nums.slice(0, s)];
      },
    );
  },
};

const CLASSES = {
  vowels: { text: 'lowercase vowels (a, e, i, o, u)', ts: (c: string) => 'aeiou'.includes(c), py: "c in 'aeiou'" },
  upper: { text: 'uppercase letters', ts: (c: string) => c >= 'A' && c <= 'Z', py: "'A' <= c <= 'Z'" },
  digits: { text: 'decimal digits', ts: (c: string) => c >= '0' && c <= '9', py: "'0' <= c <= '9'" },
  consonants: {
    text: 'lowercase consonants (lowercase letters other than a, e, i, o, u)',
    ts: (c: string) => c >= 'a' && c <= 'z' && !'aeiou'.includes(c),
    py: "'a' <= c <= 'z' and c not in 'aeiou'",
  },
} as const;

const countClass: Family = {
  id: 'count-class',
  tier: 'easy',
  style: 'call',
  make(rng) {
    const key = rng.choice(Object.keys(CLASSES) as (keyof typeof CLASSES)[]);
    const cls = CLASSES[key];
    const name = `count_${key}`;
    const alphabet = 'abcdeiouxyzABCEIZ0123456789 -';
    const cases = [
      [''],
      ['aEiOu 09'],
      ...Array.from({ length: 8 }, () => [word(rng, rng.intBetween(1, 30), alphabet)]),
    ];
    return callDraft(
      {
        title: `Count the ${key}`,
        statement: `Write \`${name}(s)\`: return how many characters of the string s are ${cls.text}.`,
        functionName: name,
        params: 's: str',
        returns: 'int',
        body: `return sum(1 for c in s if ${cls.py})`,
      },
      cases,
      (s: string) => [...s].filter(cls.ts).length,
    );
  },
};

const twoSum: Family = {
  id: 'two-sum',
  tier: 'medium',
  style: 'call',
  make(rng) {
    const diff = rng.random() < 0.4;
    const name = pick(
      rng,
      diff ? ['pair_with_gap', 'find_gap', 'gap_indices'] : ['two_sum', 'find_pair', 'pair_indices'],
    );
    const cases: unknown[][] = [
      [[1, 2], 3],
      [[5], 10],
      [[3, 3, 3], 6],
      [[4, 1], -3],
    ];
    for (let k = 0; k < 8; k++) cases.push([ints(rng, rng.intBetween(2, 40), -20, 20), rng.intBetween(-30, 30)]);
    const rel = diff ? 'nums[j] - nums[i] == target' : 'nums[i] + nums[j] == target';
    return callDraft(
      {
        title: diff ? 'First pair with a given gap' : 'First pair with a given sum',
        statement: `Write \`${name}(nums, target)\`: return [i, j] with i < j and ${rel}, choosing the smallest such j and, for that j, the smallest i. Return [-1, -1] if no pair exists.`,
        functionName: name,
        params: 'nums: list[int], target: int',
        returns: 'list[int]',
        body: `
          first = {}
          for j, x in enumerate(nums):
              want = ${diff ? 'x - target' : 'target - x'}
              if want in first:
                  return [first[want], j]
              first.setdefault(x, j)
          return [-1, -1]
        `,
      },
      cases,
      (nums: number[], target: number) => {
        for (let j = 0; j < nums.length; j++)
          for (let i = 0; i < j; i++) if ((diff ? nums[j]! - nums[i]! : nums[i]! + nums[j]!) === target) return [i, j];
        return [-1, -1];
      },
    );
  },
};

const runLength: Family = {
  id: 'run-length',
  tier: 'medium',
  style: 'call',
  make(rng) {
    const countFirst = rng.random() < 0.5;
    const dropOnes = rng.random() < 0.5;
    const name = pick(rng, ['compress', 'run_length', 'encode_runs']);
    const emit = countFirst ? 'str(n) + s[i]' : 's[i] + str(n)';
    const piece = (ch: string, n: number): string =>
      dropOnes && n === 1 ? ch : countFirst ? `${n}${ch}` : `${ch}${n}`;
    const runs = (): string =>
      Array.from({ length: rng.intBetween(1, 8) }, () =>
        rng.choice(['a', 'b', 'c', 'x']).repeat(rng.intBetween(1, 12)),
      ).join('');
    const cases = [[''], ['a'], ['aaaaaaaaaaaa'], ...Array.from({ length: 7 }, () => [runs()])];
    return callDraft(
      {
        title: 'Run-length encoding',
        statement: `Write \`${name}(s)\`: replace every maximal run of one repeated character in s by ${countFirst ? 'its length followed by the character' : 'the character followed by its length'} (so "aaab" becomes "${piece('a', 3)}${piece('b', 1)}")${dropOnes ? ', writing a run of length 1 as the bare character' : ''}. The empty string encodes to the empty string.`,
        functionName: name,
        params: 's: str',
        returns: 'str',
        body: [
          'out = []',
          'i = 0',
          'while i < len(s):',
          '    j = i',
          '    while j < len(s) and s[j] == s[i]:',
          '        j += 1',
          '    n = j - i',
          ...(dropOnes
            ? ['    if n == 1:', '        out.append(s[i])', '    else:', `        out.append(${emit})`]
            : [`    out.append(${emit})`]),
          '    i = j',
          "return ''.join(out)",
        ].join('\n'),
      },
      cases,
      (s: string) => {
        let out = '';
        for (let i = 0; i < s.length;) {
          let j = i;
          while (j < s.length && s[j] === s[i]) j++;
          out += piece(s[i]!, j - i);
          i = j;
        }
        return out;
      },
    );
  },
};

const PRIME_ASKS = {
  count: {
    name: ['count_primes', 'primes_between', 'prime_count'],
    title: 'Count the primes in a range',
    text: 'how many prime numbers p satisfy lo <= p <= hi',
    returns: 'sum(sieve[lo:hi + 1])',
    empty: '0',
  },
  sum: {
    name: ['sum_primes', 'prime_sum', 'add_primes'],
    title: 'Add up the primes in a range',
    text: 'the sum of the prime numbers p with lo <= p <= hi (0 if there are none)',
    returns: 'sum(p for p in range(lo, hi + 1) if sieve[p])',
    empty: '0',
  },
  largest: {
    name: ['largest_prime', 'max_prime', 'top_prime'],
    title: 'The largest prime in a range',
    text: 'the largest prime number p with lo <= p <= hi, or -1 if there is none',
    returns: 'max((p for p in range(lo, hi + 1) if sieve[p]), default=-1)',
    empty: '-1',
  },
} as const;

const countPrimes: Family = {
  id: 'count-primes',
  tier: 'medium',
  style: 'call',
  make(rng) {
    const key = rng.choice(Object.keys(PRIME_ASKS) as (keyof typeof PRIME_ASKS)[]);
    const ask = PRIME_ASKS[key];
    const name = pick(rng, [...ask.name]);
    const cases: unknown[][] = [
      [0, 1],
      [2, 2],
      [24, 28],
      [1, 100],
    ];
    for (let k = 0; k < 6; k++) {
      const lo = rng.intBetween(0, 50_000);
      cases.push([lo, lo + rng.intBetween(0, 20_000)]);
    }
    const isPrime = primeTable();
    return callDraft(
      {
        title: ask.title,
        statement: `Write \`${name}(lo, hi)\`: return ${ask.text} (0 <= lo <= hi <= 70000).`,
        functionName: name,
        params: 'lo: int, hi: int',
        returns: 'int',
        body: `
          if hi < 2:
              return ${ask.empty}
          sieve = bytearray([1]) * (hi + 1)
          sieve[0] = sieve[1] = 0
          for p in range(2, int(hi ** 0.5) + 1):
              if sieve[p]:
                  sieve[p * p::p] = bytearray(len(range(p * p, hi + 1, p)))
          return ${ask.returns}
        `,
      },
      cases,
      (lo: number, hi: number) => {
        let count = 0;
        let sum = 0;
        let largest = -1;
        for (let n = lo; n <= hi; n++) {
          if (!isPrime[n]) continue;
          count++;
          sum += n;
          largest = n;
        }
        return key === 'count' ? count : key === 'sum' ? sum : largest;
      },
    );
  },
};

const editDistance: Family = {
  id: 'edit-distance',
  tier: 'hard',
  style: 'call',
  make(rng) {
    const [ins, del, sub] = [rng.intBetween(1, 3), rng.intBetween(1, 3), rng.intBetween(1, 4)];
    const name = pick(rng, ['edit_cost', 'min_edit_cost', 'transform_cost']);
    const cases = [
      ['', ''],
      ['abc', ''],
      ['', 'ab'],
      ['kitten', 'sitting'],
      ...Array.from({ length: 6 }, () => [
        word(rng, rng.intBetween(0, 12), 'abcd'),
        word(rng, rng.intBetween(0, 12), 'abcd'),
      ]),
    ];
    return callDraft(
      {
        title: 'Weighted edit distance',
        statement: `Write \`${name}(a, b)\`: the cheapest way to turn string a into string b, where inserting a character costs ${ins}, deleting one costs ${del} and replacing one by another costs ${sub}. Return the total cost.`,
        functionName: name,
        params: 'a: str, b: str',
        returns: 'int',
        body: `
          prev = [j * ${ins} for j in range(len(b) + 1)]
          for i in range(1, len(a) + 1):
              cur = [i * ${del}] + [0] * len(b)
              for j in range(1, len(b) + 1):
                  same = prev[j - 1] + (0 if a[i - 1] == b[j - 1] else ${sub})
                  cur[j] = min(same, prev[j] + ${del}, cur[j - 1] + ${ins})
              prev = cur
          return prev[len(b)]
        `,
      },
      cases,
      (a: string, b: string) => {
        const d = Array.from({ length: a.length + 1 }, (_, i) =>
          Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j * ins : j === 0 ? i * del : 0)),
        );
        for (let i = 1; i <= a.length; i++) {
          for (let j = 1; j <= b.length; j++) {
            d[i]![j] = Math.min(
              d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : sub),
              d[i - 1]![j]! + del,
              d[i]![j - 1]! + ins,
            );
          }
        }
        return d[a.length]![b.length]!;
      },
    );
  },
};

const minCoins: Family = {
  id: 'min-coins',
  tier: 'hard',
  style: 'call',
  make(rng) {
    const ways = rng.random() < 0.4;
    const name = pick(
      rng,
      ways ? ['coin_ways', 'count_change', 'change_ways'] : ['min_coins', 'fewest_coins', 'coin_change'],
    );
    const cases: unknown[][] = [
      [[1], 0],
      [[2], 3],
      [[1, 5, 10, 25], 63],
    ];
    for (let k = 0; k < 7; k++)
      cases.push([[...new Set(ints(rng, rng.intBetween(1, 5), 2, 30))], rng.intBetween(0, 300)]);
    return callDraft(
      {
        title: ways ? 'Ways to make change' : 'Fewest coins',
        statement: ways
          ? `Write \`${name}(coins, amount)\`: with unlimited coins of the given distinct positive values, return in how many ways they can add up to exactly amount (0 <= amount <= 300), modulo 1000000007. Order does not matter (1+2 and 2+1 are one way); amount 0 has one way.`
          : `Write \`${name}(coins, amount)\`: with unlimited coins of the given positive values, return the fewest coins that add up to exactly amount (0 <= amount <= 300), or -1 if it cannot be done.`,
        functionName: name,
        params: 'coins: list[int], amount: int',
        returns: 'int',
        body: ways
          ? `
          ways = [1] + [0] * amount
          for c in coins:
              for a in range(c, amount + 1):
                  ways[a] = (ways[a] + ways[a - c]) % 1000000007
          return ways[amount]
        `
          : `
          best = [0] + [-1] * amount
          for a in range(1, amount + 1):
              options = [best[a - c] for c in coins if c <= a and best[a - c] >= 0]
              best[a] = min(options) + 1 if options else -1
          return best[amount]
        `,
      },
      cases,
      (coins: number[], amount: number) => {
        if (ways) {
          const w = [1, ...new Array<number>(amount).fill(0)];
          for (const c of coins) for (let a = c; a <= amount; a++) w[a] = (w[a]! + w[a - c]!) % 1_000_000_007;
          return w[amount];
        }
        const best = [0, ...new Array<number>(amount).fill(Infinity)];
        for (let a = 1; a <= amount; a++)
          for (const c of coins) if (c <= a) best[a] = Math.min(best[a]!, best[a - c]! + 1);
        return Number.isFinite(best[amount]!) ? best[amount] : -1;
      },
    );
  },
};

const gridPaths: Family = {
  id: 'grid-paths',
  tier: 'hard',
  style: 'call',
  make(rng) {
    const rock = rng.choice(['#', 'R', 'x']);
    const name = pick(rng, ['count_paths', 'monotone_paths', 'lattice_paths']);
    const cases: unknown[][] = [[['.']], [['..', '..']], [[`.${rock}`, `${rock}.`]]];
    for (let k = 0; k < 7; k++) {
      const r = rng.intBetween(1, 10);
      const c = rng.intBetween(1, 10);
      const g = Array.from({ length: r }, () => Array.from({ length: c }, () => (rng.random() < 0.2 ? rock : '.')));
      g[0]![0] = '.';
      cases.push([g.map((row) => row.join(''))]);
    }
    return callDraft(
      {
        title: 'Paths around the rocks',
        statement: `Write \`${name}(grid)\`: grid is a list of equal-length strings of '.' (free) and '${rock}' (rock). Count the paths from the top-left cell to the bottom-right cell that only move right or down and never enter a rock (0 if either corner is a rock).`,
        functionName: name,
        params: 'grid: list[str]',
        returns: 'int',
        body: `
          rows, cols = len(grid), len(grid[0])
          ways = [[0] * cols for _ in range(rows)]
          for i in range(rows):
              for j in range(cols):
                  if grid[i][j] == '${rock}':
                      continue
                  if i == 0 and j == 0:
                      ways[i][j] = 1
                  else:
                      ways[i][j] = (ways[i - 1][j] if i else 0) + (ways[i][j - 1] if j else 0)
          return ways[rows - 1][cols - 1]
        `,
      },
      cases,
      (g: string[]) => {
        const ways = g.map((row) => [...row].map(() => 0));
        for (let i = 0; i < g.length; i++) {
          for (let j = 0; j < g[0]!.length; j++) {
            if (g[i]![j] === rock) continue;
            ways[i]![j] = i === 0 && j === 0 ? 1 : (i ? ways[i - 1]![j]! : 0) + (j ? ways[i]![j - 1]! : 0);
          }
        }
        return ways.at(-1)!.at(-1)!;
      },
    );
  },
};

/** The call-style families, easy to hard. */
export const CALL_FAMILIES: readonly Family[] = [
  digitPowerSum,
  rotate,
  countClass,
  twoSum,
  runLength,
  countPrimes,
  editDistance,
  minCoins,
  gridPaths,
];
