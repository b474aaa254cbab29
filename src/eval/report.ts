// An evaluation's report (`ragen eval --json`) and its fixed-width table.
import type { RolloutBatch } from '../agent/index.js';

/** The `--json` output. */
export interface EvalReport {
  policy: string;
  envs: string[];
  groups: number;
  groupSize: number;
  seed: number;
  episodes: number;
  seconds: number;
  metrics: RolloutBatch['metrics'];
  /** Tokens the endpoint reported (--policy openai): summed over episodes, and the retries it took. */
  usage?: { promptTokens: number; completionTokens: number; requests: number; retries: number };
  /** The tags that are agent programs (their episodes take no env actions: the action columns do not apply). */
  agents?: string[];
}

/** The report as a fixed-width table, one row per env tag. */
export function formatTable(r: EvalReport): string {
  const passKey = `pass@${r.groupSize}`;
  const cols: [string, string, (v: number) => string][] = [
    ['success', 'success', pct],
    [passKey, passKey, pct],
    ['actions', 'num_actions', fix(2)],
    ['valid', 'action_valid_ratio', pct],
    ['effective', 'action_effective_ratio', pct],
    ['return', 'episodic_return', fix(3)],
    ['resp_tokens', 'response_length', fix(1)],
    ['format_err', 'format_error_rate', pct],
    ['ctx_trunc', 'context_truncations', fix(2)],
  ];
  const header = ['env', ...cols.map((c) => c[0])];
  const envOnly = new Set(['action_valid_ratio', 'action_effective_ratio']); // an agent program's episodes take no env actions
  const rows = Object.entries(r.metrics).map(([tag, m]) => [
    tag,
    ...cols.map(([, key, f]) => (r.agents?.includes(tag) && envOnly.has(key) ? '-' : f(m[key] ?? 0))),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [
    `policy ${r.policy}: ${r.episodes} episodes (groups of ${r.groupSize}), seeds from ${r.seed}, ${r.seconds.toFixed(1)} s`,
    line(header),
    ...rows.map(line),
    ...(r.usage
      ? [
          `usage: ${r.usage.promptTokens} prompt + ${r.usage.completionTokens} completion tokens in ${r.usage.requests} requests (${(r.usage.promptTokens / Math.max(1, r.episodes)).toFixed(0)} + ${(r.usage.completionTokens / Math.max(1, r.episodes)).toFixed(0)} per episode), ${r.usage.retries} retries`,
        ]
      : []),
  ].join('\n');
}

function pct(v: number): string {
  return `${(100 * v).toFixed(1)}%`;
}

function fix(d: number): (v: number) => string {
  return (v) => v.toFixed(d);
}
