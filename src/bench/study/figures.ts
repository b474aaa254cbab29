// The study's three figures as SVG: validation success per config (mean over seeds, min-max band, each run's first
// early warning marked), Î(X;Z) and Ĥ(Z|X) over steps per config, and RAGEN-2's two-axis regime picture.
import { earliestWarning, type ConfigSummary, type SpreadSeries, type StudySummary } from './summary.js';
import { legend, panel, plotArea, scale, svgDocument, type PanelSpec, type PlotSeries } from './svg.js';

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

/** The colour of config i (same in every figure). */
export const configColor = (i: number): string => COLORS[i % COLORS.length]!;

/** Mean line with a min-max band. */
function bandSeries(c: ConfigSummary, i: number, s: SpreadSeries, factor = 1): PlotSeries {
  return {
    label: c.name,
    color: configColor(i),
    dots: true,
    points: s.map((p) => ({ x: p.step, y: factor * p.mean, lo: factor * p.min, hi: factor * p.max })),
  };
}

function seedsNote(c: ConfigSummary): string {
  return `${c.name}: ${c.runs.length} seed${c.runs.length === 1 ? '' : 's'}`;
}

/** A figure's SVG and its file name (without extension). */
export interface Figure {
  name: string;
  width: number;
  height: number;
  svg: string;
}

/** Validation success (%) per config over steps; triangles mark each run's first early warning. */
export function successFigure(s: StudySummary): Figure {
  const W = 900,
    H = 440;
  const markers = s.configs.flatMap((c, i) =>
    c.runs
      .map((r) => ({ r, w: earliestWarning(r) }))
      .filter((x) => x.w !== null)
      .map(({ r, w }) => ({
        x: w!.step,
        color: configColor(i),
        title: `${c.name} seed ${r.seed}: ${w!.kind} at step ${w!.step}`,
      })),
  );
  const spec: PanelSpec = {
    x: 0,
    y: 30,
    width: W,
    height: H - 60,
    title: 'Validation success (mean over seeds, band = min to max)',
    xLabel: 'training step',
    yLabel: 'val success (%)',
    series: s.configs.map((c, i) => bandSeries(c, i, c.val, 100)),
    markers,
    yFormat: (v) => `${v}`,
  };
  const notes = `▼ a run's first early warning (early_warning/*). ${s.configs.map(seedsNote).join('; ')}.`;
  const body = [
    legend(
      s.configs.map((c, i) => ({ label: c.name, color: configColor(i) })),
      60,
      16,
    ),
    panel(spec),
    `<text x="60" y="${H - 6}" class="note">${escapeText(notes)}</text>`,
  ];
  return { name: 'success', width: W, height: H, svg: svgDocument(W, H, body.join('\n')) };
}

/** Î(X;Z) and Ĥ(Z|X) over steps, side by side. */
export function collapseFigure(s: StudySummary): Figure {
  const W = 1000,
    H = 420;
  const half = W / 2;
  const mi: PanelSpec = {
    x: 0,
    y: 30,
    width: half,
    height: H - 50,
    title: 'Î(X;Z): reasoning-prompt mutual information',
    xLabel: 'training step',
    yLabel: 'collapse/mi_estimate (nats)',
    series: s.configs.map((c, i) => bandSeries(c, i, c.mi)),
  };
  const hz: PanelSpec = {
    x: half,
    y: 30,
    width: half,
    height: H - 50,
    title: 'Ĥ(Z|X): reasoning entropy given its prompt',
    xLabel: 'training step',
    yLabel: 'collapse/conditional_entropy (nats/token)',
    series: s.configs.map((c, i) => bandSeries(c, i, c.hzx)),
  };
  const body = [
    legend(
      s.configs.map((c, i) => ({ label: c.name, color: configColor(i) })),
      60,
      16,
    ),
    panel(mi),
    panel(hz),
  ];
  return { name: 'collapse', width: W, height: H, svg: svgDocument(W, H, body.join('\n')) };
}

/**
 * A config's seed-mean (Ĥ(Z|X), Î) averaged over 10-step bins (steps 1-10, 11-20, ...: one diagnostic is noisy),
 * labelled by the bin's last step.
 */
export function binned(c: ConfigSummary, width = 10): { x: number; y: number; step: number }[] {
  const hz = new Map(c.hzx.map((p) => [p.step, p.mean]));
  const bins = new Map<number, { x: number[]; y: number[] }>();
  for (const p of c.mi) {
    if (!hz.has(p.step)) continue;
    const key = Math.max(1, Math.ceil(p.step / width)) * width;
    const b = bins.get(key) ?? { x: [], y: [] };
    b.x.push(hz.get(p.step)!);
    b.y.push(p.mean);
    bins.set(key, b);
  }
  const mean = (xs: number[]) => xs.reduce((a, v) => a + v, 0) / xs.length;
  return [...bins.entries()].sort((a, b) => a[0] - b[0]).map(([step, b]) => ({ x: mean(b.x), y: mean(b.y), step }));
}

/**
 * RAGEN-2's two axes: x = Ĥ(Z|X) (within-input diversity), y = Î(X;Z) (cross-input distinguishability), each config's
 * seed-mean path over 10-step bins (open circle = steps 1-10, filled = the last bin; each point labelled by its bin's
 * last step). The dashed lines cross at the mean of the
 * configs' first points (all start from the same model), splitting the four regimes.
 */
export function regimeFigure(s: StudySummary): Figure {
  const W = 760,
    H = 560;
  const paths = s.configs.map((c, i) => ({ c, i, pts: binned(c) }));
  const firsts = paths.filter((p) => p.pts.length > 0).map((p) => p.pts[0]!);
  const base = firsts.length
    ? { x: firsts.reduce((a, p) => a + p.x, 0) / firsts.length, y: firsts.reduce((a, p) => a + p.y, 0) / firsts.length }
    : null;
  const spec: PanelSpec = {
    x: 0,
    y: 30,
    width: W,
    height: H - 50,
    title: 'Reasoning regimes (RAGEN-2): Î(X;Z) against Ĥ(Z|X)',
    xLabel: 'Ĥ(Z|X): within-input diversity (nats/token)',
    yLabel: 'Î(X;Z): cross-input distinguishability (nats)',
    series: paths.map(({ c, i, pts }) => ({
      label: c.name,
      color: configColor(i),
      dots: true,
      points: pts.map((p) => ({ x: p.x, y: p.y })),
    })),
  };
  const all = paths.flatMap((p) => p.pts);
  const pad = (vals: number[]): [number, number] => {
    const lo = Math.min(...vals),
      hi = Math.max(...vals);
    const d = hi - lo || Math.abs(hi) || 1;
    return [lo - 0.12 * d, hi + 0.12 * d];
  };
  const body: string[] = [
    legend(
      s.configs.map((c, i) => ({ label: c.name, color: configColor(i) })),
      60,
      16,
    ),
  ];
  if (all.length === 0) {
    body.push(
      panel(spec),
      `<text x="${W / 2}" y="${H / 2}" text-anchor="middle" class="note">No collapse diagnostics logged yet.</text>`,
    );
    return { name: 'regimes', width: W, height: H, svg: svgDocument(W, H, body.join('\n')) };
  }
  const xd = pad(all.map((p) => p.x));
  const yd = pad(all.map((p) => p.y));
  spec.xDomain = xd;
  spec.yDomain = yd;
  body.push(panel(spec));
  const a = plotArea(spec);
  const X = (v: number) => scale(v, xd, [a.x0, a.x1]);
  const Y = (v: number) => scale(v, yd, [a.y0, a.y1]);
  if (base) {
    body.push(
      `<line x1="${X(base.x)}" x2="${X(base.x)}" y1="${a.y1}" y2="${a.y0}" stroke="#999" stroke-dasharray="5 4"/>`,
      `<line x1="${a.x0}" x2="${a.x1}" y1="${Y(base.y)}" y2="${Y(base.y)}" stroke="#999" stroke-dasharray="5 4"/>`,
    );
  }
  body.push(
    `<text x="${a.x1 - 6}" y="${a.y1 + 16}" text-anchor="end" class="quad">diverse, input-grounded</text>`,
    `<text x="${a.x0 + 6}" y="${a.y1 + 16}" class="quad">compressed, input-grounded</text>`,
    `<text x="${a.x1 - 6}" y="${a.y0 - 8}" text-anchor="end" class="quad bad">template collapse</text>`,
    `<text x="${a.x0 + 6}" y="${a.y0 - 8}" class="quad bad">low-entropy collapse</text>`,
  );
  for (const { i, pts } of paths) {
    if (pts.length === 0) continue;
    const first = pts[0]!,
      last = pts.at(-1)!;
    for (const p of pts)
      body.push(`<text x="${X(p.x) + 6}" y="${Y(p.y) - 6}" class="tick" fill="${configColor(i)}">${p.step}</text>`);
    body.push(
      `<circle cx="${X(first.x)}" cy="${Y(first.y)}" r="6" fill="#fff" stroke="${configColor(i)}" stroke-width="2"><title>step ${first.step}</title></circle>`,
    );
    body.push(
      `<circle cx="${X(last.x)}" cy="${Y(last.y)}" r="6" fill="${configColor(i)}" stroke="#333"><title>step ${last.step}</title></circle>`,
    );
  }
  body.push(
    `<text x="60" y="${H - 4}" class="note">Seed means over 10-step bins, labelled by the bin's last step: open = steps 1-10, filled = last; dashed: their mean start.</text>`,
  );
  return { name: 'regimes', width: W, height: H, svg: svgDocument(W, H, body.join('\n')) };
}

function escapeText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** All three figures. */
export function studyFigures(s: StudySummary): Figure[] {
  return [successFigure(s), collapseFigure(s), regimeFigure(s)];
}
