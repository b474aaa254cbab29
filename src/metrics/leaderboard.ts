// The leaderboard `ragen leaderboard` builds from `ragen eval --out` files: one entry (a model, an API endpoint, a
// scripted policy) per file, per environment its success rate with a 95% Wilson interval, pass@k over its groups, and
// the tokens it generated per episode; a static HTML page and the same numbers as JSON, publishable as they are.
import { z } from 'zod';
import { RagenError } from '../util/index.js';
import { parseJsonl } from './jsonl.js';

/** The fields of an eval trajectory line (src/agent/trajectories.ts) the leaderboard reads. */
const EpisodeLine = z.looseObject({
  env: z.string().min(1),
  seed: z.number().int(),
  group: z.number().int().min(0),
  member: z.number().int().min(0),
  success: z.boolean(),
  n_tokens: z.number().min(0),
});
type EpisodeLine = z.infer<typeof EpisodeLine>;

/** One entry's results on one environment. */
export interface BoardCell {
  episodes: number;
  success: number;
  /** The 95% Wilson score interval of `success`. */
  ci: [number, number];
  /** Episodes per group (the k of pass@k), when every group has the same number. */
  k: number;
  /** Fraction of groups with at least one success. */
  passAtK: number;
  /** Mean tokens generated per episode. */
  tokens: number;
  /** The validation seeds it ran on, lowest and highest. */
  seeds: [number, number];
}

/** One row of the board. */
export interface BoardEntry {
  name: string;
  source: string;
  cells: Record<string, BoardCell>;
  /** Mean success over the board's environments (an env the entry lacks counts as missing: no mean then). */
  meanSuccess: number | null;
}

/** The whole board, as leaderboard.json holds it. */
export interface Board {
  envs: string[];
  entries: BoardEntry[];
  /** Envs whose entries ran on different seed ranges: their numbers are not directly comparable. */
  mismatchedSeeds: string[];
}

/** The 95% Wilson score interval of `successes` out of `n` (Wilson 1927; better than the normal one near 0 and 1). */
export function wilson(successes: number, n: number, z = 1.959964): [number, number] {
  if (n === 0) return [0, 1];
  const p = successes / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/** Parse one `ragen eval --out` file's text into its episode lines; a malformed line is an error naming it. */
export function parseEvalFile(text: string, source: string): EpisodeLine[] {
  const { records, problems } = parseJsonl(text, source);
  if (problems.length > 0) throw new RagenError(`${problems[0]} Re-run \`ragen eval --out\` to write it again.`);
  if (records.length === 0)
    throw new RagenError(`${source} holds no episodes: give a file written by \`ragen eval --out\`.`);
  return records.map((r, i) => {
    const parsed = EpisodeLine.safeParse(r);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new RagenError(
        `${source}: line ${i + 1} is not a \`ragen eval --out\` episode (\`${issue.path.join('.')}\`: ${issue.message}).`,
      );
    }
    return parsed.data;
  });
}

/** One environment's episodes of one entry, summarised. */
function cell(episodes: EpisodeLine[]): BoardCell {
  const wins = episodes.filter((e) => e.success).length;
  const groups = new Map<string, EpisodeLine[]>();
  for (const e of episodes) {
    const key = `${e.seed}/${e.group}`;
    groups.set(key, [...(groups.get(key) ?? []), e]);
  }
  const sizes = new Set([...groups.values()].map((g) => g.length));
  const seeds = episodes.map((e) => e.seed);
  return {
    episodes: episodes.length,
    success: wins / episodes.length,
    ci: wilson(wins, episodes.length),
    k: sizes.size === 1 ? [...sizes][0]! : 0,
    passAtK: [...groups.values()].filter((g) => g.some((e) => e.success)).length / groups.size,
    tokens: episodes.reduce((a, e) => a + e.n_tokens, 0) / episodes.length,
    seeds: [Math.min(...seeds), Math.max(...seeds)],
  };
}

/** The board of `entries` (each a name, its file and its episode lines), best mean success first. */
export function buildBoard(entries: { name: string; source: string; episodes: EpisodeLine[] }[]): Board {
  const envs = [...new Set(entries.flatMap((e) => e.episodes.map((x) => x.env)))].sort();
  const rows: BoardEntry[] = entries.map(({ name, source, episodes }) => {
    const cells: Record<string, BoardCell> = {};
    for (const env of envs) {
      const mine = episodes.filter((e) => e.env === env);
      if (mine.length > 0) cells[env] = cell(mine);
    }
    const have = envs.filter((env) => cells[env]);
    const meanSuccess =
      have.length === envs.length ? have.reduce((a, env) => a + cells[env]!.success, 0) / have.length : null;
    return { name, source, cells, meanSuccess };
  });
  rows.sort((a, b) => (b.meanSuccess ?? -1) - (a.meanSuccess ?? -1) || a.name.localeCompare(b.name));
  const mismatchedSeeds = envs.filter((env) => {
    const ranges = new Set(rows.flatMap((r) => (r.cells[env] ? [r.cells[env].seeds.join('-')] : [])));
    return ranges.size > 1;
  });
  return { envs, entries: rows, mismatchedSeeds };
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The board as one static HTML page (no scripts, no outside resources). */
export function boardHtml(board: Board, opts: { title: string; generated: string }): string {
  const head = board.envs.map((env) => `<th colspan="3">${esc(env)}</th>`).join('');
  const sub = board.envs.map(() => '<th>success (95% CI)</th><th>pass@k</th><th>tokens</th>').join('');
  const rows = board.entries
    .map((e, i) => {
      const cells = board.envs
        .map((env) => {
          const c = e.cells[env];
          if (!c) return '<td class="none" colspan="3">not evaluated</td>';
          const ci = `<span class="ci">${pct(c.ci[0])}-${pct(c.ci[1])}</span>`;
          const k = c.k > 0 ? `@${c.k} ` : '';
          return `<td>${pct(c.success)} ${ci}<div class="n">${c.episodes} episodes</div></td><td>${k}${pct(c.passAtK)}</td><td>${c.tokens.toFixed(1)}</td>`;
        })
        .join('');
      const mean = e.meanSuccess === null ? '-' : pct(e.meanSuccess);
      return `<tr><td>${i + 1}</td><td class="name">${esc(e.name)}<div class="n">${esc(e.source)}</div></td><td>${mean}</td>${cells}</tr>`;
    })
    .join('\n');
  const warn =
    board.mismatchedSeeds.length > 0
      ? `<p class="warn">Entries ran on different seeds for ${board.mismatchedSeeds.map(esc).join(', ')}: compare those columns with care.</p>`
      : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(opts.title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f3f3f3}td.name{text-align:left;font-weight:600}.n,.ci{color:#777;font-size:12px;font-weight:400}
td.none{color:#aaa;text-align:center}.warn{color:#a40}
</style></head><body>
<h1>${esc(opts.title)}</h1>
<p>Success rate per environment with its 95% Wilson interval, pass@k over each seed's group of k episodes, and tokens
generated per episode; entries ranked by mean success over the environments. Built by <code>ragen leaderboard</code>
from <code>ragen eval --out</code> files (${esc(opts.generated)}); the numbers are also in <a href="leaderboard.json">leaderboard.json</a>.</p>
${warn}
<table>
<thead><tr><th rowspan="2">#</th><th rowspan="2">entry</th><th rowspan="2">mean success</th>${head}</tr><tr>${sub}</tr></thead>
<tbody>
${rows}
</tbody></table>
</body></html>
`;
}
