// The runs table: one row per run directory (preset/name, algorithm, filter, seed, steps, validation success before
// and after, status), text and column filters, and a selection to compare runs' curves.
import { api, type RunSummary } from '../api.js';
import { fmt, h, routeHref } from '../dom.js';
import type { Page } from './page.js';

/** Header labels and the summary field each sorts by ('' = not sortable). */
const COLUMNS: [string, keyof RunSummary | ''][] = [
  ['', ''],
  ['run', 'name'],
  ['name / envs', 'label'],
  ['algorithm', 'algo'],
  ['filter', 'filter'],
  ['seed', 'seed'],
  ['steps', 'lastStep'],
  ['val before', 'valBefore'],
  ['val after', 'valAfter'],
  ['status', 'status'],
  ['pages', ''],
  ['', ''],
];

/** Runs ordered by a field (`-field`: descending); missing values last; '' keeps the server's order (newest first). */
function sortRuns(runs: readonly RunSummary[], by: string): RunSummary[] {
  if (!by) return [...runs];
  const desc = by.startsWith('-');
  const key = (desc ? by.slice(1) : by) as keyof RunSummary;
  return [...runs].sort((a, b) => {
    const [x, y] = [a[key], b[key]];
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return desc ? -c : c;
  });
}

export async function runsPage(): Promise<Page> {
  const el = h('section', { class: 'runs-page' });
  const selected = new Set<string>();
  const text = h('input', { type: 'search', placeholder: 'filter: name, env, algorithm...', id: 'run-filter' });
  const statusSel = h('select', { id: 'status-filter' }, h('option', { value: '' }, 'any status'));
  const algoSel = h('select', { id: 'algo-filter' }, h('option', { value: '' }, 'any algorithm'));
  const compare = h('a', { class: 'button', id: 'compare' }, 'Compare selected');
  const table = h('table', { class: 'runs' });
  const info = h('p', { class: 'muted' });
  el.append(h('h1', {}, 'Runs'), h('div', { class: 'toolbar' }, text, statusSel, algoSel, compare), info, table);
  let runs: RunSummary[] = [];
  let sortBy = '';

  const options = (sel: HTMLSelectElement, values: string[]) => {
    const keep = sel.value;
    sel.replaceChildren(sel.options[0]!, ...values.map((v) => h('option', { value: v }, v)));
    sel.value = values.includes(keep) ? keep : '';
  };

  const draw = () => {
    const q = text.value.trim().toLowerCase();
    const shown = sortRuns(runs, sortBy).filter(
      (r) =>
        (!statusSel.value || r.status === statusSel.value) &&
        (!algoSel.value || r.algo === algoSel.value) &&
        (!q || [r.name, r.label, r.algo, r.filter, r.status, ...r.envs].some((v) => v?.toLowerCase().includes(q))),
    );
    compare.setAttribute('href', routeHref('curves', { runs: [...selected].join(',') }));
    compare.classList.toggle('disabled', selected.size === 0);
    table.replaceChildren(
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          COLUMNS.map(([c, key]) =>
            h(
              'th',
              key
                ? {
                    class: 'sortable',
                    title: 'sort',
                    onclick: () => {
                      sortBy = sortBy === key ? `-${key}` : key;
                      draw();
                    },
                  }
                : {},
              c,
              key && sortBy === key ? ' ▲' : key && sortBy === `-${key}` ? ' ▼' : '',
            ),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        shown.map((r) =>
          h(
            'tr',
            { 'data-run': r.id, class: `status-${r.status}` },
            h(
              'td',
              {},
              h('input', {
                type: 'checkbox',
                checked: selected.has(r.id),
                onchange: (e: Event) => {
                  if ((e.target as HTMLInputElement).checked) selected.add(r.id);
                  else selected.delete(r.id);
                  draw();
                },
              }),
            ),
            h('td', {}, h('a', { href: routeHref('curves', { runs: r.id }), title: r.path }, r.name)),
            h('td', {}, r.label),
            h('td', {}, r.algo ?? '-'),
            h('td', {}, r.filter ?? '-'),
            h('td', {}, r.seed ?? '-'),
            h('td', {}, `${r.lastStep ?? '-'} / ${r.totalSteps ?? '?'}`),
            h('td', { class: 'num' }, fmt(r.valBefore, 'pct')),
            h('td', { class: 'num' }, fmt(r.valAfter, 'pct')),
            h('td', {}, h('span', { class: `badge ${r.status}` }, r.status)),
            h(
              'td',
              { class: 'links' },
              (['collapse', 'trajectories', 'eval', 'play'] as const).map((p) =>
                h('a', { href: routeHref(p, { run: r.id }) }, p),
              ),
            ),
            h(
              'td',
              {},
              r.problems.length
                ? h(
                    'span',
                    { class: 'warn', title: r.problems.join('\n') },
                    `⚠ ${r.problems.length} problem${r.problems.length > 1 ? 's' : ''}`,
                  )
                : '',
            ),
          ),
        ),
      ),
    );
    info.textContent = `${shown.length} of ${runs.length} runs`;
  };

  const refresh = async () => {
    const res = await api.runs();
    runs = res.runs;
    options(statusSel, [...new Set(runs.map((r) => r.status))].sort());
    options(algoSel, [...new Set(runs.map((r) => r.algo).filter((a): a is string => a !== null))].sort());
    draw();
    if (runs.length === 0)
      info.textContent = `No runs yet under ${res.roots.join(', ')}: start one with \`ragen train\`; it will appear here.`;
  };
  for (const control of [text, statusSel, algoSel]) control.addEventListener('input', draw);
  await refresh();
  return { el, runs: [], refresh };
}
