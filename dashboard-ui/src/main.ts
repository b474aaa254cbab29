// The dashboard page: a hash router over the pages (runs, curves, collapse, trajectories, eval, play), the top
// navigation, and live updates: the server's event stream says which runs changed and the shown page refreshes.
import './style.css';
import { errorBox, h, routeParams } from './dom.js';
import { runsPage } from './pages/runs.js';
import { curvesPage } from './pages/curves.js';
import { collapsePage } from './pages/collapse.js';
import { trajectoriesPage } from './pages/trajectories.js';
import { evalPage } from './pages/eval.js';
import type { Page } from './pages/page.js';
import { onProgress, progressText, resetProgress } from './progress.js';

type PageFactory = (params: URLSearchParams) => Promise<Page>;

const PAGES: Record<string, [string, PageFactory]> = {
  runs: ['Runs', runsPage],
  curves: ['Curves', curvesPage],
  collapse: ['Collapse', collapsePage],
  trajectories: ['Trajectories', trajectoriesPage],
  eval: ['Eval', evalPage],
  play: ['Play', async (p) => (await import('./pages/play.js')).playPage(p)],
};

const main = h('main', { id: 'page' });
const nav = h('nav', {});
const status = h('span', { class: 'live', id: 'live' }, 'connecting...');
document.getElementById('boot')?.remove();
document.body.append(h('header', {}, h('span', { class: 'brand' }, 'ragen observatory'), nav, status), main);

let current: Page | null = null;
let rendering = 0;

function pageName(): string {
  const m = /^#\/([a-z]+)/.exec(location.hash);
  return m && PAGES[m[1]!] ? m[1]! : 'runs';
}

/** The run ids of the current route, carried over when switching pages. */
function selectedRuns(params: URLSearchParams): string[] {
  return (params.get('runs') ?? params.get('run') ?? '').split(',').filter((s) => s !== '');
}

function renderNav(): void {
  const params = routeParams();
  const runs = selectedRuns(params);
  const name = pageName();
  nav.replaceChildren(
    ...Object.entries(PAGES).map(([key, [label]]) => {
      const q =
        key === 'runs'
          ? ''
          : key === 'curves'
            ? runs.length
              ? `?runs=${encodeURIComponent(runs.join(','))}`
              : ''
            : runs[0]
              ? `?run=${encodeURIComponent(runs[0])}`
              : '';
      return h('a', { href: `#/${key}${q}`, class: key === name ? 'active' : undefined }, label);
    }),
  );
}

async function render(): Promise<void> {
  const token = ++rendering;
  renderNav();
  const name = pageName();
  current?.destroy?.();
  current = null;
  const stopProgress = showProgress(name);
  let page: Page;
  try {
    page = await PAGES[name]![1](routeParams());
  } catch (err) {
    if (token === rendering) main.replaceChildren(errorBox((err as Error).message));
    return;
  } finally {
    stopProgress();
  }
  if (token !== rendering) return page.destroy?.();
  current = page;
  main.replaceChildren(page.el);
  main.dataset['page'] = name;
}

/** The loading line of page `name`: a spinner, what it waits for and how far it got (src/progress.ts), kept current. */
function showProgress(name: string): () => void {
  resetProgress();
  const t0 = performance.now();
  const text = h('span', { id: 'loading-text' });
  const update = () => (text.textContent = `${PAGES[name]![0]} page: ${progressText((performance.now() - t0) / 1000)}`);
  update();
  main.replaceChildren(
    h(
      'p',
      { class: 'loading', id: 'loading', role: 'status' },
      h('span', { class: 'spinner', 'aria-hidden': 'true' }),
      text,
    ),
  );
  const unsubscribe = onProgress(update);
  const timer = setInterval(update, 100);
  return () => {
    unsubscribe();
    clearInterval(timer);
  };
}

window.addEventListener('hashchange', () => void render());
void render();

// Live updates: `change` names runs whose files changed, `runs` means runs appeared or vanished.
const events = new EventSource('/api/events');
events.addEventListener('open', () => (status.textContent = 'live'));
events.addEventListener('error', () => (status.textContent = 'reconnecting...'));
const onEvent = (ids: string[]) => {
  const page = current;
  if (!page?.refresh) return;
  if (page.runs.length > 0 && !ids.some((id) => page.runs.includes(id))) return;
  page.refresh().catch((err: Error) => console.error('refresh failed', err));
};
events.addEventListener('change', (e) => onEvent(JSON.parse((e as MessageEvent<string>).data) as string[]));
events.addEventListener('runs', (e) => {
  if (pageName() === 'runs') onEvent(JSON.parse((e as MessageEvent<string>).data) as string[]);
});
