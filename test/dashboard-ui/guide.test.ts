// The dashboard's guide links: every standard chart and the collapse page's two parts have a section of the metrics
// guide, and the sections read out of the real docs/reading-a-run.md are the text under their headings.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART_GUIDE, CURVE_GROUPS, GUIDE_FILE, guideSections } from '../../dashboard-ui/src/guide-sections.js';

const guide = readFileSync(join(import.meta.dirname, '..', '..', GUIDE_FILE), 'utf8');

describe('the metrics guide in the dashboard', () => {
  it('has a section, with text, for every standard chart and for the collapse page', () => {
    const sections = guideSections(guide);
    for (const title of [...CURVE_GROUPS.map(([t]) => t), 'Collapse', 'Early warnings']) {
      const id = CHART_GUIDE[title];
      expect(id, `${title} has no guide section`).toBeDefined();
      const section = sections.get(id!);
      expect(section, `${GUIDE_FILE} has no <a id="${id}">`).toBeDefined();
      expect(section!.blocks.map((b) => b.text).join(' ').length, id).toBeGreaterThan(100);
    }
  });

  it('reads a section up to the next heading: paragraphs and list items, images left out', () => {
    const md = `intro\n\n<a id="a"></a>\n## Alpha\n\n![fig](x.png)\n\nFirst para\ncontinued.\n\n- one\n  two\n- three\n\n## Plain\n\nnot part of a\n`;
    expect(guideSections(md).get('a')).toEqual({
      title: 'Alpha',
      blocks: [
        { kind: 'p', text: 'First para continued.' },
        { kind: 'li', text: 'one two' },
        { kind: 'li', text: 'three' },
      ],
    });
  });
});
