// Evaluation results of a run: its `ragen eval --out` files under eval/ (success and pass@k per env tag, from the
// episodes), and the training-time validation per tag from metrics.jsonl.
import { api } from '../api.js';
import { errorBox, fmt, h, problemsBox, routeHref } from '../dom.js';
import type { Page } from './page.js';

export async function evalPage(params: URLSearchParams): Promise<Page> {
  const id = params.get('run') ?? params.get('runs')?.split(',')[0] ?? '';
  const el = h('section', { class: 'eval-page' }, h('h1', {}, 'Evaluation'));
  if (!id) {
    el.append(errorBox('No run selected: open a run from the Runs table first.'));
    return { el, runs: [] };
  }
  const body = h('div', {});
  el.append(body);
  const refresh = async () => {
    const run = await api.run(id);
    const parts: (HTMLElement | string)[] = [
      h('p', { class: 'muted' }, run.summary.name),
      problemsBox(run.problems) ?? '',
    ];
    // Training-time validation: the latest step that logged val/<tag>/success, with its pass@k.
    const valRows = run.metrics.filter((r) => Object.keys(r).some((k) => /^val\/[^/]+\/success$/.test(k)));
    const lastVal = valRows.at(-1);
    const firstVal = valRows[0];
    if (lastVal) {
      const tags = Object.keys(lastVal)
        .filter((k) => /^val\/[^/]+\/success$/.test(k))
        .map((k) => k.split('/')[1]!);
      const passKey = (r: Record<string, number | null>, tag: string) =>
        Object.keys(r).find((k) => k.startsWith(`val/${tag}/pass@`));
      parts.push(
        h('h2', {}, `Validation during training (step ${firstVal!['step']} -> ${lastVal['step']})`),
        h(
          'table',
          { id: 'val-table' },
          h(
            'tr',
            {},
            ['env', 'success before', 'success after', 'pass@k after', 'episodes'].map((c) => h('th', {}, c)),
          ),
          tags.map((t) => {
            const pk = passKey(lastVal, t);
            return h(
              'tr',
              {},
              h('td', {}, t),
              h('td', { class: 'num' }, fmt(firstVal![`val/${t}/success`], 'pct')),
              h('td', { class: 'num' }, fmt(lastVal[`val/${t}/success`], 'pct')),
              h('td', { class: 'num' }, pk ? `${fmt(lastVal[pk], 'pct')} (${pk.split('/')[2]})` : '-'),
              h('td', { class: 'num' }, fmt(lastVal[`val/${t}/episodes`])),
            );
          }),
        ),
      );
    }
    parts.push(h('h2', {}, 'ragen eval files (eval/*.jsonl)'));
    if (run.evalFiles.length === 0)
      parts.push(
        h(
          'p',
          { class: 'muted', id: 'no-eval' },
          `None yet. Write one with: ragen eval --run ${run.summary.path} --out ${run.summary.path}/eval/val.jsonl`,
        ),
      );
    for (const f of run.evalFiles) {
      try {
        const res = await api.evalFile(id, f);
        parts.push(
          h('h3', {}, `eval/${f} `, h('a', { href: routeHref('trajectories', { run: id, file: f }) }, '(episodes)')),
          problemsBox(res.problems) ?? '',
          h(
            'table',
            { class: 'eval-table', 'data-file': f },
            h(
              'tr',
              {},
              ['env', 'episodes', 'groups', 'success', 'pass@k', 'mean score', 'actions'].map((c) => h('th', {}, c)),
            ),
            res.summary.map((t) =>
              h(
                'tr',
                {},
                h('td', {}, t.env),
                h('td', { class: 'num' }, t.episodes),
                h('td', { class: 'num' }, t.groups),
                h('td', { class: 'num' }, fmt(t.success, 'pct')),
                h('td', { class: 'num' }, `${fmt(t.passAtK, 'pct')} (pass@${t.k})`),
                h('td', { class: 'num' }, fmt(t.score)),
                h('td', { class: 'num' }, fmt(t.numActions)),
              ),
            ),
          ),
        );
      } catch (err) {
        parts.push(errorBox(`eval/${f}: ${(err as Error).message}`));
      }
    }
    body.replaceChildren(...parts);
  };
  await refresh();
  return { el, runs: [id], refresh };
}
