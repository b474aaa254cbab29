// Rollout metrics per env tag (RAGEN's get_rollout_states, inventory section 2.1): success, pass@k over
// the group, actions, validity and effectiveness, returns, response length, format errors, truncations.
import type { Episode, LoopTurn } from './episode.js';

/** Metric name -> value for one env tag. Keys: see `computeMetrics`. */
export type TagMetrics = Record<string, number>;

const mean = (xs: readonly number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

/**
 * Per-tag means over episodes:
 * `success`, `pass@k` (k = groupSize: the share of groups with at least one success),
 * `num_actions` (executed), `num_turns`, `action_valid_ratio` and `action_effective_ratio` (over the
 * attempted actions of the episode; 0 when none), `episodic_return` (env rewards), `score` (with
 * format penalties), `response_length` (sampled tokens per turn), `format_error_rate` (turns whose
 * response did not parse), `context_truncations` (turns dropped from the context, including the
 * turn an episode ending `context_full` could not prompt), `episodes`, and
 * `info/<key>` for every numeric field of the final info (envs' own metrics).
 */
export function computeMetrics(episodes: readonly Episode[], groupSize: number): Record<string, TagMetrics> {
  const byTag = new Map<string, Episode[]>();
  for (const e of episodes) {
    if (!byTag.has(e.tag)) byTag.set(e.tag, []);
    byTag.get(e.tag)!.push(e);
  }
  const out: Record<string, TagMetrics> = {};
  for (const [tag, eps] of byTag) {
    const groups = new Map<number, boolean>();
    for (const e of eps) groups.set(e.group, (groups.get(e.group) ?? false) || e.success);
    const ratio = (e: Episode, pick: (a: LoopTurn['actions'][number]) => boolean): number => {
      const tried = e.turns.flatMap((t) => t.loop?.actions.filter((a) => !a.skipped) ?? []);
      return tried.length === 0 ? 0 : tried.filter(pick).length / tried.length;
    };
    const m: TagMetrics = {
      episodes: eps.length,
      success: mean(eps.map((e) => (e.success ? 1 : 0))),
      [`pass@${groupSize}`]: mean([...groups.values()].map((s) => (s ? 1 : 0))),
      num_actions: mean(eps.map((e) => e.numActions)),
      num_turns: mean(eps.map((e) => e.turns.length)),
      action_valid_ratio: mean(eps.map((e) => ratio(e, (a) => a.valid))),
      action_effective_ratio: mean(eps.map((e) => ratio(e, (a) => a.effective))),
      episodic_return: mean(eps.map((e) => e.envReturn)),
      score: mean(eps.map((e) => e.score)),
      response_length: mean(eps.map((e) => mean(e.turns.map((t) => t.tokens.length)))),
      format_error_rate: mean(eps.map((e) => mean(e.turns.map((t) => (t.formatError !== undefined ? 1 : 0))))),
      context_truncations: mean(eps.map((e) => e.loop?.contextTruncations ?? 0)),
    };
    const infoKeys = new Set<string>();
    for (const e of eps) {
      const info = e.turns[e.turns.length - 1]?.info;
      if (info)
        for (const [k, v] of Object.entries(info)) if (typeof v === 'number' && Number.isFinite(v)) infoKeys.add(k);
    }
    for (const k of [...infoKeys].sort()) {
      m[`info/${k}`] = mean(
        eps
          .map((e) => e.turns[e.turns.length - 1]?.info[k])
          .filter((v): v is number => typeof v === 'number' && Number.isFinite(v)),
      );
    }
    out[tag] = m;
  }
  return out;
}
