// Episode files for the dashboard: a training step's rollouts/step-N.jsonl and `ragen eval --out` files under eval/
// (both src/agent/trajectories.ts records), checked line by line, and an eval file's success and pass@k per env tag.
import { join } from 'node:path';
import type { EpisodeRecord } from '../agent/index.js';
import { runPaths } from '../metrics/index.js';
import { readJsonl } from '../metrics/index.js';

/** Episode records of one file, and what was wrong with it. */
export interface EpisodeFile {
  episodes: EpisodeRecord[];
  problems: string[];
}

/** Whether a parsed line has the fields the viewer shows. */
function episodeProblem(r: Record<string, unknown>): string | undefined {
  for (const [k, t] of [
    ['env', 'string'],
    ['seed', 'number'],
    ['group', 'number'],
    ['success', 'boolean'],
  ] as const) {
    if (typeof r[k] !== t) return `\`${k}\` should be a ${t}, got ${JSON.stringify(r[k])}`;
  }
  if (!Array.isArray(r['turns'])) return '`turns` is not a list';
  return undefined;
}

function readEpisodes(file: string, source: string): EpisodeFile {
  const { records, problems } = readJsonl<Record<string, unknown>>(file, source);
  const episodes: EpisodeRecord[] = [];
  records.forEach((r, i) => {
    const p = episodeProblem(r);
    if (p) problems.push(`${source}: episode ${i + 1} is not an episode record (${p}); skipped.`);
    else episodes.push(r as unknown as EpisodeRecord);
  });
  return { episodes, problems };
}

/** rollouts/step-N.jsonl of the run in `dir`. */
export function readRollouts(dir: string, step: number): EpisodeFile {
  return readEpisodes(join(runPaths(dir).rollouts, `step-${step}.jsonl`), `rollouts/step-${step}.jsonl`);
}

/**
 * eval/<file> of the run in `dir`; `file` must be a plain `*.jsonl` name (checked by the caller against the listing).
 */
export function readEvalFile(dir: string, file: string): EpisodeFile {
  return readEpisodes(join(runPaths(dir).eval, file), `eval/${file}`);
}

/** Per env tag: episodes, success rate, pass@k (k = the group size seen), mean score and actions. */
export interface TagResult {
  env: string;
  episodes: number;
  groups: number;
  /** Episodes per group (the k of pass@k); the smallest group when sizes differ. */
  k: number;
  success: number;
  passAtK: number;
  score: number;
  numActions: number;
}

/**
 * Success per tag and pass@k over an eval file's episodes. A group is the episodes sharing (env, seed, group): they
 * start from the same state, so pass@k is the fraction of groups with at least one success (as `ragen eval` reports).
 */
export function evalSummary(episodes: readonly EpisodeRecord[]): TagResult[] {
  const byTag = new Map<string, EpisodeRecord[]>();
  for (const e of episodes) byTag.set(e.env, [...(byTag.get(e.env) ?? []), e]);
  return [...byTag].map(([env, eps]) => {
    const groups = new Map<string, EpisodeRecord[]>();
    for (const e of eps) {
      const key = `${e.seed}/${e.group}`;
      groups.set(key, [...(groups.get(key) ?? []), e]);
    }
    const mean = (f: (e: EpisodeRecord) => number) => eps.reduce((a, e) => a + f(e), 0) / eps.length;
    return {
      env,
      episodes: eps.length,
      groups: groups.size,
      k: Math.min(...[...groups.values()].map((g) => g.length)),
      success: mean((e) => (e.success ? 1 : 0)),
      passAtK: [...groups.values()].filter((g) => g.some((e) => e.success)).length / groups.size,
      score: mean((e) => e.score ?? e.total_reward ?? 0),
      numActions: mean((e) => e.num_actions ?? 0),
    };
  });
}
