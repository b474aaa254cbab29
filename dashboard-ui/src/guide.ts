// The metrics guide (docs/reading-a-run.md) inside the dashboard: each chart's "guide" opens the guide's section on
// that signal, parsed from the same Markdown the docs show (bundled as text), so the page and the doc cannot differ.
import guideText from '../../docs/reading-a-run.md';
import { h } from './dom.js';
import { GUIDE_FILE, guideSections, type GuideSection } from './guide-sections.js';

export { CHART_GUIDE } from './guide-sections.js';

let sections: Map<string, GuideSection> | undefined;

/** `text` with its `code` spans as <code> elements and *emphasis* as <em> (text nodes only: nothing is parsed as HTML). */
function inline(text: string): (string | HTMLElement)[] {
  return text.split(/(`[^`]+`|\*[^*`\s][^*`]*\*)/).map((part) => {
    if (/^`.+`$/.test(part)) return h('code', {}, part.slice(1, -1));
    if (/^\*.+\*$/.test(part)) return h('em', {}, part.slice(1, -1));
    return part;
  });
}

/** A "guide" toggle showing the guide's section `id`, or nothing when the guide has no such section. */
export function guideLink(id: string | undefined): HTMLElement | '' {
  sections ??= guideSections(guideText);
  const section = id === undefined ? undefined : sections.get(id);
  if (!section) return '';
  const list = h('ul', {}, ...section.blocks.filter((b) => b.kind === 'li').map((b) => h('li', {}, ...inline(b.text))));
  return h(
    'details',
    { class: 'guide', 'data-guide': id },
    h('summary', { title: `what this chart means and what to change: ${GUIDE_FILE}#${id}` }, 'guide'),
    h(
      'div',
      { class: 'guide-body' },
      h('strong', {}, ...inline(section.title)),
      ...section.blocks.filter((b) => b.kind === 'p').map((b) => h('p', {}, ...inline(b.text))),
      list,
      h('p', { class: 'guide-source' }, `From ${GUIDE_FILE}#${id}`),
    ),
  );
}
