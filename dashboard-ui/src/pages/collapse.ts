// The collapse view of one run (RAGEN-2): MI Î(X;Z) and Ĥ(Z|X) over steps, the two-axis picture of reasoning regimes
// (cross-input distinguishability vs within-input diversity), the early warnings marked on the timeline, and the
// gradient analysis by reward-std bucket when the run logged it.
import { api, type RunDetail } from '../api.js';
import { Chart, type Line, type Marker } from '../chart.js';
import { errorBox, fmt, h, problemsBox } from '../dom.js';
import type { Page } from './page.js';
import { series } from './curves.js';
import { gradLines, gradTable } from './grad-analysis.js';

const WARNINGS: [string, string, string][] = [
  ['early_warning/reward_std_collapse', 'reward-std collapse', '#d62728'],
  ['early_warning/entropy_drop', 'entropy drop', '#ff7f0e'],
  ['early_warning/grad_norm_spike', 'grad-norm spike', '#9467bd'],
  ['early_warning/mi_collapse', 'MI collapse', '#8c564b'],
];

/** Steps where a warning flag turns on (0 or absent before, 1 now). */
export function warningMarkers(run: RunDetail): Marker[] {
  const out: Marker[] = [];
  for (const [key, label, color] of WARNINGS) {
    let on = false;
    for (const r of run.metrics) {
      if (!(key in r)) continue;
      const now = r[key] === 1;
      if (now && !on) out.push({ step: r['step']!, label, color });
      on = now;
    }
  }
  return out.sort((a, b) => a.step - b.step);
}

/** The four regimes of the two-axis picture, named by where a step sits against the run's first diagnostic step. */
export function regimeOf(mi: number, hzx: number, baseMi: number, baseH: number): string {
  if (mi >= baseMi) return hzx >= baseH ? 'diverse and input-grounded' : 'compressed but input-grounded';
  return hzx >= baseH ? 'template collapse: diverse-looking, input-agnostic' : 'low-entropy collapse (echo trap)';
}

const SVG = 'http://www.w3.org/2000/svg';
function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** SVG scatter of (Ĥ(Z|X), Î) per diagnostic step, a path in step order, quadrant lines through the first step. */
function regimePicture(run: RunDetail): HTMLElement {
  const pts = run.metrics
    .filter(
      (r) =>
        Number.isFinite(r['collapse/mi_estimate']) &&
        Number.isFinite(r['collapse/conditional_entropy']) &&
        r['collapse/mi_estimate'] !== null,
    )
    .map((r) => ({ step: r['step']!, mi: r['collapse/mi_estimate']!, h: r['collapse/conditional_entropy']! }));
  const box = h(
    'figure',
    { class: 'regimes', id: 'regimes' },
    h(
      'figcaption',
      {},
      'Reasoning regimes (RAGEN-2): cross-input distinguishability Î(X;Z) against within-input diversity Ĥ(Z|X)',
    ),
  );
  if (pts.length === 0) {
    box.append(
      h(
        'p',
        { class: 'empty' },
        'No collapse diagnostics logged yet (trainer.collapse.every sets how often they run).',
      ),
    );
    return box;
  }
  const W = 520,
    H = 360,
    L = 60,
    B = 44,
    T = 14,
    R = 14;
  const xs = pts.map((p) => p.h),
    ys = pts.map((p) => p.mi);
  const pad = (lo: number, hi: number) => {
    const d = hi - lo || Math.abs(hi) || 1;
    return [lo - 0.15 * d, hi + 0.15 * d] as const;
  };
  const [x0, x1] = pad(Math.min(...xs), Math.max(...xs));
  const [y0, y1] = pad(Math.min(...ys), Math.max(...ys));
  const X = (v: number) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
  const Y = (v: number) => H - B - ((v - y0) / (y1 - y0)) * (H - B - T);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'regime-svg' });
  const base = pts[0]!;
  svg.append(
    s('rect', { x: L, y: T, width: W - L - R, height: H - B - T, fill: '#fafafa', stroke: '#ccc' }),
    s('line', { x1: X(base.h), x2: X(base.h), y1: T, y2: H - B, stroke: '#999', 'stroke-dasharray': '4 3' }),
    s('line', { x1: L, x2: W - R, y1: Y(base.mi), y2: Y(base.mi), stroke: '#999', 'stroke-dasharray': '4 3' }),
    s('text', { x: W - R - 4, y: T + 14, 'text-anchor': 'end', class: 'quad' }, 'diverse, input-grounded'),
    s('text', { x: L + 4, y: T + 14, class: 'quad' }, 'compressed, input-grounded'),
    s('text', { x: W - R - 4, y: H - B - 6, 'text-anchor': 'end', class: 'quad bad' }, 'template collapse'),
    s('text', { x: L + 4, y: H - B - 6, class: 'quad bad' }, 'low-entropy collapse'),
    s('text', { x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle' }, 'Ĥ(Z|X): within-input diversity (nats/token)'),
    s(
      'text',
      { x: 14, y: (T + H - B) / 2, transform: `rotate(-90 14 ${(T + H - B) / 2})`, 'text-anchor': 'middle' },
      'Î(X;Z): cross-input distinguishability',
    ),
    s('text', { x: L, y: H - B + 14, 'text-anchor': 'middle', class: 'tick' }, fmt(x0)),
    s('text', { x: W - R, y: H - B + 14, 'text-anchor': 'end', class: 'tick' }, fmt(x1)),
    s('text', { x: L - 4, y: H - B, 'text-anchor': 'end', class: 'tick' }, fmt(y0)),
    s('text', { x: L - 4, y: T + 8, 'text-anchor': 'end', class: 'tick' }, fmt(y1)),
    s('polyline', {
      points: pts.map((p) => `${X(p.h)},${Y(p.mi)}`).join(' '),
      fill: 'none',
      stroke: '#888',
      'stroke-width': 1,
    }),
  );
  pts.forEach((p, i) => {
    const t = pts.length > 1 ? i / (pts.length - 1) : 1;
    const c = s('circle', {
      cx: X(p.h),
      cy: Y(p.mi),
      r: 4,
      fill: `hsl(210, 80%, ${75 - 50 * t}%)`,
      stroke: '#333',
      'stroke-width': 0.5,
    });
    c.append(s('title', {}, `step ${p.step}: Î = ${fmt(p.mi)}, Ĥ(Z|X) = ${fmt(p.h)}`));
    svg.append(c);
  });
  const last = pts.at(-1)!;
  box.append(
    svg,
    h(
      'p',
      { id: 'regime-now' },
      `Step ${last.step}: ${regimeOf(last.mi, last.h, base.mi, base.h)} (quadrants split at step ${base.step}, the first diagnostic step; light to dark = early to late).`,
    ),
  );
  return box;
}

export async function collapsePage(params: URLSearchParams): Promise<Page> {
  const id = params.get('run') ?? params.get('runs')?.split(',')[0] ?? '';
  const el = h('section', { class: 'collapse-page' }, h('h1', {}, 'Collapse diagnostics'));
  if (!id) {
    el.append(errorBox('No run selected: open a run from the Runs table first.'));
    return { el, runs: [] };
  }
  const head = h('p', { class: 'muted' });
  const problems = h('div', {});
  const picture = h('div', {});
  const warnings = h('div', {});
  const grid = h('div', { class: 'chart-grid' });
  const grads = h('div', {});
  const gradChart = new Chart(
    'Task gradient norm per token, by reward-std bucket',
    'grad_analysis/<bucket>/per_token/task (before the filter when logged): trainer.gradAnalysis, docs/training.md',
  );
  el.append(
    head,
    problems,
    h('div', { class: 'collapse-top' }, picture, warnings),
    grid,
    h('div', { class: 'collapse-top' }, grads, gradChart.el),
  );
  const charts: [Chart, [string, number[]?][]][] = [
    [new Chart('Î(X;Z) mutual information'), [['collapse/mi_estimate'], ['collapse/mi_upper_bound', [4, 4]]]],
    [new Chart('Ĥ(Z|X) and Ĥ(Z)'), [['collapse/conditional_entropy'], ['collapse/reasoning_entropy', [4, 4]]]],
    [new Chart('MI z-score'), [['collapse/mi_zscore'], ['collapse/mi_zscore_ema', [4, 4]]]],
    [new Chart('Success'), [['train/success'], ['val/success', [4, 4]]]],
    [new Chart('In-group reward std'), [['rollout/in_group_reward_std']]],
    [new Chart('Entropy'), [['actor/entropy']]],
  ];
  for (const [c] of charts) grid.append(c.el);
  const colors = ['#1f77b4', '#d62728'];

  const refresh = async () => {
    const run = await api.run(id);
    head.textContent = `${run.summary.name}: ${run.summary.algo ?? '?'}, filter ${run.summary.filter ?? '?'}, step ${run.summary.lastStep ?? '-'} of ${run.summary.totalSteps ?? '?'} (${run.summary.status})`;
    problems.replaceChildren(problemsBox(run.problems) ?? '');
    picture.replaceChildren(regimePicture(run));
    const markers = warningMarkers(run);
    warnings.replaceChildren(
      h('h2', {}, 'Early warnings'),
      markers.length === 0
        ? h(
            'p',
            { class: 'muted', id: 'no-warnings' },
            'None fired. Each needs its baseline (10 steps) and window (5 steps) of history first.',
          )
        : h(
            'table',
            { id: 'warnings' },
            h('tr', {}, h('th', {}, 'step'), h('th', {}, 'warning')),
            markers.map((m) => h('tr', {}, h('td', {}, m.step), h('td', { style: { color: m.color } }, m.label))),
          ),
    );
    for (const [chart, keys] of charts) {
      const lines: Line[] = keys.map(([k, dash], i) => ({
        label: k,
        points: series(run, k),
        color: colors[i % colors.length]!,
        ...(dash ? { dash } : {}),
      }));
      chart.update(
        lines.filter((l) => l.points.length > 0),
        markers,
        0,
      );
    }
    grads.replaceChildren(gradTable(run));
    gradChart.update(gradLines(run), markers, 0);
  };
  await refresh();
  return { el, runs: [id], refresh, destroy: () => [...charts.map(([c]) => c), gradChart].forEach((c) => c.destroy()) };
}
