// The trajectory viewer: a training step's rollouts (or an eval file) as groups -> episodes -> turns, with each turn's
// observation, reasoning, actions and reward, and the advantage shown as colour on the generated text; search by env,
// seed and outcome.
import { api, type EpisodeRecord } from '../api.js';
import { errorBox, fmt, h, problemsBox, routeHref } from '../dom.js';
import { agentCallView, type MessageView } from './agent-call.js';
import type { Page } from './page.js';

/** Background colour of an advantage: green for positive, red for negative, white at 0; |a| >= scale is full colour. */
export function advantageColor(a: number | null | undefined, scale: number): string {
  if (a === null || a === undefined || !Number.isFinite(a) || scale <= 0) return 'transparent';
  const t = Math.min(1, Math.abs(a) / scale);
  return a >= 0 ? `rgba(44, 160, 44, ${0.1 + 0.5 * t})` : `rgba(214, 39, 40, ${0.1 + 0.5 * t})`;
}

type Turn = EpisodeRecord['turns'][number];

function generatedText(turn: Turn, scale: number): HTMLElement {
  const pre = h('pre', { class: 'response' });
  if (turn.token_text && turn.token_advantages && turn.token_text.length === turn.token_advantages.length) {
    turn.token_text.forEach((piece, i) => {
      const a = turn.token_advantages![i];
      pre.append(h('span', { style: { background: advantageColor(a, scale) }, title: `advantage ${fmt(a)}` }, piece));
    });
  } else {
    // Older records, or a turn not trained on: one colour, the turn's mean advantage.
    pre.append(
      h(
        'span',
        {
          style: { background: advantageColor(turn.advantage, scale) },
          title: `turn advantage ${fmt(turn.advantage)} (mean over the turn's tokens)`,
        },
        turn.response,
      ),
    );
  }
  return pre;
}

function messageBox(m: MessageView, cls: string): HTMLElement {
  return h(
    'div',
    { class: `msg ${cls} role-${m.role}` },
    h('div', { class: 'label' }, m.answers === undefined ? m.role : `tool result of ${m.answers}`),
    m.text ? h('pre', {}, m.text) : null,
    m.toolCalls.map((c) => h('pre', { class: 'tool-call', title: c.id }, `→ ${c.name}(${c.args})`)),
  );
}

/** An agent program's turn: the request's new messages, and the reply with its trained tokens coloured. */
function agentTurnView(t: Turn, previous: Turn | undefined, scale: number): HTMLElement {
  const v = agentCallView(t.call!, previous?.call);
  return h(
    'div',
    { class: 'cols' },
    h(
      'div',
      { class: 'request' },
      h(
        'div',
        { class: 'label' },
        `request: ${v.tools === null ? 'no tools' : `tools ${v.tools.join(', ')}`}${v.earlier ? `; ${v.earlier} earlier messages as in turn ${t.turn}` : ''}`,
      ),
      v.messages.map((m) => messageBox(m, 'sent')),
    ),
    h(
      'div',
      { class: 'reply' },
      h('div', { class: 'label' }, 'sampled and trained (colour = advantage)'),
      generatedText(t, scale),
      h('div', { class: 'label' }, 'reply the program got'),
      messageBox(v.reply, 'got'),
      v.reply.toolCalls.length === 0 && !v.reply.text ? h('pre', {}, '(empty reply)') : null,
    ),
  );
}

/**
 * A visual env's observation images, pixelated as drawn. Only PNG data: URLs are shown: a record naming any other URL
 * would make the page fetch it.
 */
export function observationImages(t: Pick<Turn, 'observation_images'>): HTMLElement | null {
  const urls = (t.observation_images ?? []).filter((u) => u.startsWith('data:image/png;base64,'));
  if (urls.length === 0) return null;
  return h(
    'div',
    { class: 'observation-images' },
    urls.map((src, i) =>
      h('img', { src, alt: `observation image ${i + 1}`, style: { imageRendering: 'pixelated', width: '192px' } }),
    ),
  );
}

function builtinTurnView(t: Turn, scale: number): HTMLElement {
  return h(
    'div',
    { class: 'cols' },
    h(
      'div',
      {},
      h('div', { class: 'label' }, 'observation'),
      h('pre', { class: 'observation' }, t.observation),
      observationImages(t),
    ),
    h(
      'div',
      {},
      h('div', { class: 'label' }, 'generated (colour = advantage)'),
      generatedText(t, scale),
      h('div', { class: 'label' }, 'reasoning'),
      h('pre', { class: 'think' }, t.think || '(none)'),
      h('div', { class: 'label' }, 'actions'),
      h('pre', { class: 'actions' }, t.actions?.length ? t.actions.join(' || ') : '(no valid action)'),
    ),
  );
}

function episodeView(e: EpisodeRecord, scale: number): HTMLElement {
  return h(
    'article',
    { class: 'episode', id: 'episode-view', 'data-episode': e.custom_id },
    h(
      'h3',
      {},
      `${e.custom_id}: ${e.success ? 'success' : 'failure'}, reward ${fmt(e.total_reward)}, score ${fmt(e.score)}, ${e.turns.some((t) => t.call) ? `${e.turns.length} calls` : `${e.num_actions} actions`}, ended ${e.end_reason}${e.kept === false ? ' (group dropped by the filter)' : ''}`,
    ),
    e.turns.map((t, i) =>
      h(
        'div',
        { class: 'turn', 'data-turn': t.turn },
        h(
          'h4',
          {},
          `Turn ${t.turn + 1}: reward ${fmt(t.reward)}${t.penalty ? `, penalty ${fmt(t.penalty)}` : ''}, advantage ${fmt(t.advantage)}, ${t.tokens} tokens${t.format_error ? `, format error: ${t.format_error}` : ''}`,
        ),
        t.call ? agentTurnView(t, e.turns[i - 1], scale) : builtinTurnView(t, scale),
      ),
    ),
  );
}

export async function trajectoriesPage(params: URLSearchParams): Promise<Page> {
  const id = params.get('run') ?? params.get('runs')?.split(',')[0] ?? '';
  const el = h('section', { class: 'trajectories-page' }, h('h1', {}, 'Trajectories'));
  if (!id) {
    el.append(errorBox('No run selected: open a run from the Runs table first.'));
    return { el, runs: [] };
  }
  const run = await api.run(id);
  const evalFile = params.get('file');
  const steps = run.rolloutSteps;
  const step = params.has('step') ? Number(params.get('step')) : steps.at(-1);
  const stepSel = h(
    'select',
    { id: 'step-select' },
    steps.map((s) => h('option', { value: `step:${s}`, selected: !evalFile && s === step }, `step ${s}`)),
    run.evalFiles.map((f) => h('option', { value: `eval:${f}`, selected: evalFile === f }, `eval/${f}`)),
  );
  stepSel.addEventListener('change', () => {
    const [kind, v] = stepSel.value.split(/:(.*)/s) as [string, string];
    location.hash = routeHref('trajectories', kind === 'step' ? { run: id, step: v } : { run: id, file: v });
  });
  const envSel = h('select', { id: 'env-search' }, h('option', { value: '' }, 'any env'));
  const seedIn = h('input', { type: 'number', placeholder: 'seed', id: 'seed-search' });
  const outcomeSel = h(
    'select',
    { id: 'outcome-search' },
    h('option', { value: '' }, 'any outcome'),
    h('option', { value: 'success' }, 'success'),
    h('option', { value: 'failure' }, 'failure'),
  );
  const list = h('div', { class: 'group-list', id: 'group-list' });
  const detail = h('div', { class: 'episode-detail' });
  el.append(
    h('p', { class: 'muted' }, run.summary.name),
    h('div', { class: 'toolbar' }, stepSel, envSel, seedIn, outcomeSel),
  );
  if (steps.length === 0 && run.evalFiles.length === 0) {
    el.append(
      problemsBox(run.problems) ?? '',
      errorBox(
        'This run has no rollouts/step-N.jsonl and no eval/*.jsonl yet (logging.rolloutsEvery sets how often rollouts are saved).',
      ),
    );
    return { el, runs: [id] };
  }
  const file = evalFile ? await api.evalFile(id, evalFile) : await api.rollouts(id, step!);
  el.append(problemsBox(file.problems) ?? '', h('div', { class: 'traj-layout' }, list, detail));
  const episodes = file.episodes;
  envSel.append(...[...new Set(episodes.map((e) => e.env))].map((e) => h('option', { value: e }, e)));
  // One colour scale per file: the largest |advantage| of any token (or turn, for records without per-token values).
  const scale = Math.max(
    1e-6,
    ...episodes.flatMap((e) =>
      e.turns.flatMap((t) => [Math.abs(t.advantage ?? 0), ...(t.token_advantages ?? []).map(Math.abs)]),
    ),
  );
  let shown: EpisodeRecord | undefined;
  const swatch = (a: number) => h('span', { class: 'swatch', style: { background: advantageColor(a, scale) } }, fmt(a));
  el.insertBefore(
    h(
      'p',
      { class: 'legend', id: 'advantage-legend' },
      'advantage colour: ',
      swatch(-scale),
      ' ',
      swatch(-scale / 2),
      ' ',
      swatch(0),
      ' ',
      swatch(scale / 2),
      ' ',
      swatch(scale),
    ),
    el.lastElementChild,
  );

  const draw = () => {
    const seed = seedIn.value === '' ? null : Number(seedIn.value);
    const match = episodes.filter(
      (e) =>
        (!envSel.value || e.env === envSel.value) &&
        (seed === null || e.seed === seed) &&
        (!outcomeSel.value || (outcomeSel.value === 'success') === e.success),
    );
    const groups = new Map<string, EpisodeRecord[]>();
    for (const e of match) {
      const key = `${e.env} · seed ${e.seed} · group ${e.group}`;
      groups.set(key, [...(groups.get(key) ?? []), e]);
    }
    list.replaceChildren(
      h('p', { class: 'muted' }, `${match.length} of ${episodes.length} episodes in ${groups.size} groups`),
      ...[...groups].map(([key, eps]) =>
        h(
          'details',
          { open: groups.size <= 8, class: 'group' },
          h(
            'summary',
            {},
            `${key}: ${eps.filter((e) => e.success).length}/${eps.length} succeeded${eps[0]!.kept === false ? ', dropped' : ''}`,
          ),
          h(
            'ul',
            {},
            eps.map((e) =>
              h(
                'li',
                {},
                h(
                  'a',
                  {
                    href: '#',
                    'data-episode': e.custom_id,
                    class: e === shown ? 'active' : undefined,
                    onclick: (ev: Event) => {
                      ev.preventDefault();
                      shown = e;
                      detail.replaceChildren(episodeView(e, scale));
                      draw();
                    },
                  },
                  `member ${e.member}: ${e.success ? '✓' : '✗'} reward ${fmt(e.total_reward)}`,
                ),
              ),
            ),
          ),
        ),
      ),
    );
  };
  for (const c of [envSel, seedIn, outcomeSel]) c.addEventListener('input', draw);
  draw();
  shown = episodes[0];
  if (shown) detail.replaceChildren(episodeView(shown, scale));
  draw();
  // A live run: new steps join the step list; the episodes shown stay put until another step is picked.
  const refresh = async () => {
    const now = await api.run(id);
    const have = new Set([...stepSel.options].map((o) => o.value));
    const firstEval = [...stepSel.options].find((o) => o.value.startsWith('eval:')) ?? null;
    for (const s of now.rolloutSteps)
      if (!have.has(`step:${s}`)) stepSel.insertBefore(h('option', { value: `step:${s}` }, `step ${s}`), firstEval);
    for (const f of now.evalFiles)
      if (!have.has(`eval:${f}`)) stepSel.append(h('option', { value: `eval:${f}` }, `eval/${f}`));
  };
  return { el, runs: [id], refresh };
}
