// Tiny DOM helpers for the dashboard page: element creation, formatting, and the problems box every page shows.

type Child = Node | string | number | null | undefined | false;

/** `h('div', {class: 'x'}, child...)`: an element with attributes (on* keys become listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, unknown> = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat())
    if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
  return el;
}

/** A number for a table cell: '-' for null, percentages for rates. */
export function fmt(v: number | null | undefined, kind: 'pct' | 'num' = 'num'): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '-';
  if (kind === 'pct') return `${(100 * v).toFixed(1)}%`;
  if (Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 1000 || v === 0 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(3) : v.toPrecision(3);
}

/** The box listing what is wrong with the files behind a page (nothing when all is well). */
export function problemsBox(problems: readonly string[]): HTMLElement | null {
  if (problems.length === 0) return null;
  return h(
    'div',
    { class: 'problems', role: 'alert' },
    h('strong', {}, 'Problems with this run directory:'),
    h(
      'ul',
      {},
      problems.map((p) => h('li', {}, p)),
    ),
  );
}

/** An error message in place of a page's content. */
export function errorBox(message: string): HTMLElement {
  return h('div', { class: 'problems error', role: 'alert' }, message);
}

/** Query parameters of the current hash route (`#/page?a=1`). */
export function routeParams(): URLSearchParams {
  const hash = location.hash.slice(1);
  const q = hash.indexOf('?');
  return new URLSearchParams(q >= 0 ? hash.slice(q + 1) : '');
}

/** `#/page?...` for links. */
export function routeHref(page: string, params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return `#/${page}${s ? `?${s}` : ''}`;
}
