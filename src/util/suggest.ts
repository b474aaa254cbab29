// "Did you mean ...?" suggestions by edit distance, for unknown ids and config keys.

/** Levenshtein distance, case-insensitive. */
export function editDistance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** The candidate nearest to `name`, or undefined when nothing is reasonably close. */
export function nearest(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDist = Infinity;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  if (best === undefined) return undefined;
  const limit = Math.max(2, Math.floor(Math.max(name.length, best.length) / 3));
  return bestDist <= limit ? best : undefined;
}

/** " Did you mean `x`?" or "" — to append to an error message. */
export function didYouMean(name: string, candidates: Iterable<string>): string {
  const n = nearest(name, candidates);
  return n === undefined ? '' : ` Did you mean \`${n}\`?`;
}
