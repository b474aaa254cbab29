// Training curves of one or more runs on shared charts (success, reward, entropy, KL, grad norm, kept ratio, timings,
// plus any logged metric on demand), with EMA smoothing; live runs update in place. Several runs: colours are runs
// (the chips), dashes are metrics (each chart's key), and a table lists the config keys where the runs differ.
import { api, type RunDetail } from '../api.js';
import { Chart, PALETTE, type Line } from '../chart.js';
import { configDiff } from '../config-diff.js';
import { errorBox, h, problemsBox } from '../dom.js';
import type { Page } from './page.js';

/** The standard charts: a title and the metric keys drawn on it. */
export const CURVE_GROUPS: [string, string[]][] = [
  ['Success', ['train/success', 'val/success']],
  ['Reward', ['train/reward_mean', 'rollout/in_group_reward_std']],
  ['Entropy', ['actor/entropy']],
  ['KL', ['actor/ppo_kl', 'actor/kl_loss']],
  ['Grad norm', ['actor/grad_norm', 'critic/grad_norm']],
  ['Kept ratio', ['rollout/filter_kept_ratio']],
  ['Timings (s)', ['timing_s/step', 'timing_s/gen', 'timing_s/update_actor', 'timing_s/val']],
];

const DASHES: (number[] | undefined)[] = [undefined, [6, 4], [2, 3], [10, 3, 2, 3]];

/** The (step, value) points of `key` in a run's metrics. */
export function series(run: RunDetail, key: string): [number, number | null][] {
  return run.metrics.filter((r) => key in r && typeof r['step'] === 'number').map((r) => [r['step']!, r[key] ?? null]);
}

/** Lines of `keys` for every run: colours tell runs apart (keys when there is one run), dashes tell keys apart. */
export function linesOf(runs: readonly RunDetail[], keys: readonly string[]): Line[] {
  const out: Line[] = [];
  runs.forEach((run, ri) =>
    keys.forEach((key, ki) => {
      const points = series(run, key);
      if (points.length === 0) return;
      const label = runs.length > 1 ? `${run.summary.name} · ${key}` : key;
      const dash = runs.length > 1 ? DASHES[ki % DASHES.length] : undefined;
      out.push({
        label,
        key,
        points,
        color: PALETTE[(runs.length > 1 ? ri : ki) % PALETTE.length]!,
        ...(dash ? { dash } : {}),
      });
    }),
  );
  return out;
}

export async function curvesPage(params: URLSearchParams): Promise<Page> {
  const ids = (params.get('runs') ?? params.get('run') ?? '').split(',').filter((s) => s !== '');
  const el = h('section', { class: 'curves-page' }, h('h1', {}, 'Curves'));
  if (ids.length === 0) {
    el.append(
      errorBox('No run selected: tick runs in the Runs table and press "Compare selected", or click a run name.'),
    );
    return { el, runs: [] };
  }
  const slider = h('input', { type: 'range', min: 0, max: 0.99, step: 0.01, value: 0.6, id: 'smoothing' });
  const sliderValue = h('span', {}, '0.60');
  const extraSel = h('select', { id: 'add-metric' });
  const problems = h('div', {});
  const legend = h('div', { class: 'run-legend' });
  const diff = h('div', {});
  const grid = h('div', { class: 'chart-grid' });
  el.append(
    h(
      'div',
      { class: 'toolbar' },
      h('label', {}, 'smoothing ', slider, ' ', sliderValue),
      h('label', {}, 'add a chart ', extraSel),
    ),
    legend,
    problems,
    diff,
    grid,
  );
  const charts = new Map<string, [Chart, string[]]>();
  let runs: RunDetail[] = [];

  const weight = () => Number(slider.value);
  const addChart = (title: string, keys: string[], description: string) => {
    const chart = new Chart(title, description);
    charts.set(title, [chart, keys]);
    grid.append(chart.el);
    chart.update(linesOf(runs, keys), [], weight());
  };

  const refresh = async () => {
    runs = await Promise.all(ids.map((id) => api.run(id)));
    legend.replaceChildren(
      ...runs.map((r, i) =>
        h(
          'span',
          { class: 'run-chip', style: { borderColor: runs.length > 1 ? PALETTE[i % PALETTE.length] : '#999' } },
          `${r.summary.name} (${r.summary.status}, step ${r.summary.lastStep ?? '-'})`,
        ),
      ),
    );
    if (runs.length > 1) {
      const open = diff.querySelector('details')?.open ?? true; // a live refresh keeps the table folded if it was
      diff.replaceChildren(configTable(runs, open));
    }
    problems.replaceChildren(
      problemsBox(runs.flatMap((r) => r.problems.map((p) => (runs.length > 1 ? `${r.summary.name}: ${p}` : p)))) ?? '',
    );
    const keys = [...new Set(runs.flatMap((r) => [...Object.keys(r.descriptions), ...r.unknownMetrics]))].sort();
    const descriptions = Object.assign({}, ...runs.map((r) => r.descriptions)) as Record<string, string>;
    if (extraSel.options.length !== keys.length + 1) {
      extraSel.replaceChildren(
        h('option', { value: '' }, `(${keys.length} metrics)`),
        ...keys.map((k) => h('option', { value: k, title: descriptions[k] ?? 'not in src/metrics/names.ts' }, k)),
      );
    }
    if (charts.size === 0)
      for (const [title, ks] of CURVE_GROUPS)
        addChart(title, ks, ks.map((k) => `${k}: ${descriptions[k] ?? ''}`).join('\n'));
    else for (const [chart, ks] of charts.values()) chart.update(linesOf(runs, ks), [], weight());
  };

  slider.addEventListener('input', () => {
    sliderValue.textContent = weight().toFixed(2);
    for (const [chart] of charts.values()) chart.setSmoothing(weight());
  });
  extraSel.addEventListener('change', () => {
    const k = extraSel.value;
    if (k && !charts.has(k))
      addChart(k, [k], runs.find((r) => r.descriptions[k])?.descriptions[k] ?? 'not in src/metrics/names.ts');
    extraSel.value = '';
  });
  await refresh();
  return { el, runs: ids, refresh, destroy: () => charts.forEach(([c]) => c.destroy()) };
}

/** The config keys where the runs differ, one column per run (its colour on top); identical keys are counted. */
export function configTable(runs: readonly RunDetail[], open = true): HTMLElement {
  const { rows, same } = configDiff(runs.map((r) => r.config));
  const missing = runs.filter((r) => r.config === null).map((r) => r.summary.name);
  const head = h(
    'tr',
    {},
    h('th', {}, 'config key'),
    runs.map((r, i) => h('th', { style: { borderTop: `4px solid ${PALETTE[i % PALETTE.length]}` } }, r.summary.name)),
  );
  const body = rows.map((row) =>
    h(
      'tr',
      { 'data-key': row.key },
      h('td', {}, row.key),
      row.values.map((v) => h('td', { class: v === undefined ? 'muted' : '' }, v ?? '-')),
    ),
  );
  const note = `${rows.length} key${rows.length === 1 ? '' : 's'} differ, ${same} are the same${missing.length ? `; no config.yaml: ${missing.join(', ')}` : ''}`;
  return h(
    'details',
    { class: 'config-diff', open },
    h('summary', {}, `Config differences (${note})`),
    rows.length
      ? h('table', { id: 'config-diff' }, h('thead', {}, head), h('tbody', {}, body))
      : h('p', { class: 'muted' }, 'The configs are identical.'),
  );
}
