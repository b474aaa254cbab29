// The gradient-analysis panel of the collapse page (RAGEN-2; `trainer.gradAnalysis`, docs/training.md): per
// reward-std bucket, the task gradient norm per token over steps, and the latest analysis as a table.
import type { RunDetail } from '../api.js';
import { PALETTE, type Line } from '../chart.js';
import { fmt, h } from '../dom.js';
import { series } from './curves.js';

type View = 'grad_analysis' | 'grad_analysis/prefilter';

/** The buckets a view logged in the run, `bucket_1`, `bucket_2`, ... by number, then `all`. */
export function gradBuckets(run: RunDetail, view: View): string[] {
  const re =
    view === 'grad_analysis'
      ? /^grad_analysis\/((?:bucket_\d+)|all)\/task$/
      : /^grad_analysis\/prefilter\/((?:bucket_\d+)|all)\/task$/;
  const names = new Set<string>();
  for (const r of run.metrics)
    for (const k of Object.keys(r)) {
      const m = re.exec(k);
      if (m) names.add(m[1]!);
    }
  const rank = (b: string) => (b === 'all' ? Number.POSITIVE_INFINITY : Number(b.slice('bucket_'.length)));
  return [...names].sort((a, b) => rank(a) - rank(b));
}

/** The view to show: before the filter when logged (every group has a bucket), else after it. */
export function gradView(run: RunDetail): View | null {
  if (gradBuckets(run, 'grad_analysis/prefilter').length > 0) return 'grad_analysis/prefilter';
  return gradBuckets(run, 'grad_analysis').length > 0 ? 'grad_analysis' : null;
}

/** One line per bucket of `per_token/task` (the `all` line dashed). */
export function gradLines(run: RunDetail): Line[] {
  const view = gradView(run);
  if (!view) return [];
  return gradBuckets(run, view).map((b, i) => ({
    label: b,
    points: series(run, `${view}/${b}/per_token/task`),
    color: b === 'all' ? '#555' : PALETTE[i % PALETTE.length]!,
    ...(b === 'all' ? { dash: [4, 4] } : {}),
  }));
}

/** The latest analysed step as a table: one row per bucket. */
export function gradTable(run: RunDetail): HTMLElement {
  const box = h('div', { id: 'grad-analysis' }, h('h2', {}, 'Gradient analysis by reward-std bucket'));
  const view = gradView(run);
  if (!view) {
    box.append(
      h(
        'p',
        { class: 'muted', id: 'no-grad-analysis' },
        'Not logged in this run: set trainer.gradAnalysis.every (or probe a checkpoint with `ragen probe-grads`).',
      ),
    );
    return box;
  }
  const buckets = gradBuckets(run, view);
  const last = [...run.metrics].reverse().find((r) => buckets.some((b) => `${view}/${b}/task` in r))!;
  const cell = (b: string, name: string) => h('td', { class: 'num' }, fmt(last[`${view}/${b}/${name}`]));
  box.append(
    h(
      'p',
      { class: 'muted' },
      `Step ${last['step']}, ${view === 'grad_analysis' ? 'after the filter' : 'before the filter (every group)'}; gradient norms of each loss term, bucket_1 = lowest in-group reward std.`,
    ),
    h(
      'table',
      {},
      h(
        'tr',
        {},
        ['bucket', 'reward std', 'samples', 'task', 'entropy', 'kl', 'task / token'].map((t) => h('th', {}, t)),
      ),
      buckets
        .filter((b) => `${view}/${b}/task` in last)
        .map((b) =>
          h(
            'tr',
            { 'data-bucket': b },
            h('td', {}, b),
            h(
              'td',
              { class: 'num' },
              `${fmt(last[`${view}/${b}/reward_std_min`])} – ${fmt(last[`${view}/${b}/reward_std_max`])}`,
            ),
            cell(b, 'sample_count'),
            cell(b, 'task'),
            cell(b, 'entropy'),
            cell(b, 'kl'),
            cell(b, 'per_token/task'),
          ),
        ),
    ),
  );
  return box;
}
