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

/**
 * The candidates to suggest for `name`, best first: the nearest by edit distance when it is reasonably close, else up
 * to three that contain `name`, case-insensitively (`Sokoban` -> `SimpleSokoban`, ...), nearest first; empty when
 * nothing fits.
 */
export function suggestions(name: string, candidates: Iterable<string>): string[] {
  const all = [...new Set(candidates)];
  let best: string | undefined;
  let bestDist = Infinity;
  for (const c of all) {
    const d = editDistance(name, c);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  if (best === undefined) return [];
  const limit = Math.max(2, Math.floor(Math.max(name.length, best.length) / 3));
  if (bestDist <= limit) return [best];
  const lower = name.toLowerCase();
  if (lower.length < 3) return [];
  // only longer names that contain it: the other way round would offer `model` for `model.dtype`
  const containing = all.filter((c) => c.toLowerCase().includes(lower));
  return containing.sort((a, b) => editDistance(name, a) - editDistance(name, b) || a.localeCompare(b)).slice(0, 3);
}

/** The candidate nearest to `name`, or undefined when nothing is reasonably close (see `suggestions`). */
export function nearest(name: string, candidates: Iterable<string>): string | undefined {
  return suggestions(name, candidates)[0];
}

/** " Did you mean `x`?" (or "`x`, `y` or `z`") or "" — to append to an error message. */
export function didYouMean(name: string, candidates: Iterable<string>): string {
  const s = suggestions(name, candidates).map((c) => `\`${c}\``);
  if (s.length === 0) return '';
  return ` Did you mean ${s.length === 1 ? s[0] : `${s.slice(0, -1).join(', ')} or ${s.at(-1)}`}?`;
}
