// The metrics guide's sections (docs/reading-a-run.md), parsed from its Markdown, and the standard charts they
// explain: pure, so tests read the real file.

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

/** Where the guide lives in the package. */
export const GUIDE_FILE = 'docs/reading-a-run.md';

/** The guide's section (its `<a id>`) for each standard chart, by the chart's title. */
export const CHART_GUIDE: Record<string, string> = {
  Success: 'success',
  Reward: 'reward',
  Entropy: 'entropy',
  KL: 'kl',
  'Grad norm': 'grad-norm',
  'Kept ratio': 'kept',
  'Timings (s)': 'timing',
  Collapse: 'collapse',
  'Early warnings': 'warnings',
};

/** A section of the guide: its heading and its blocks (paragraphs and list items), images left out. */
export interface GuideSection {
  title: string;
  blocks: { kind: 'p' | 'li'; text: string }[];
}

/** Every `<a id="x"></a>` + `## Title` section of the guide's Markdown, by id. */
export function guideSections(markdown: string): Map<string, GuideSection> {
  const out = new Map<string, GuideSection>();
  const parts = markdown.split(/^<a id="([\w-]+)"><\/a>\n/m);
  for (let i = 1; i < parts.length; i += 2) {
    const [heading, ...rest] = parts[i + 1]!.split('\n');
    const body = rest.join('\n').split(/^## /m)[0]!; // up to the next heading without an anchor
    const blocks: GuideSection['blocks'] = [];
    for (const chunk of body.split(/\n\s*\n/)) {
      const lines = chunk.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('!['));
      if (lines.length === 0) continue;
      if (lines[0]!.startsWith('- ')) {
        const items = lines.join('\n').split(/^- /m).filter(Boolean);
        for (const item of items) blocks.push({ kind: 'li', text: item.replace(/\s+/g, ' ').trim() });
      } else blocks.push({ kind: 'p', text: lines.join(' ').replace(/\s+/g, ' ').trim() });
    }
    out.set(parts[i]!, { title: heading!.replace(/^##\s*/, ''), blocks });
  }
  return out;
}
