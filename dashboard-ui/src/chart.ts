// Line charts of metric series with uPlot: several runs on one chart, EMA smoothing (TensorBoard's debiased EMA),
// vertical markers (early warnings) on the step axis, a one-row key above the plot (which colour and dash is which
// metric), the hovered step's values in one line, a log-scale toggle, and CSV export of the logged values.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { download, seriesCsv } from './csv.js';
import { h } from './dom.js';
import { smooth } from './smooth.js';

export { smooth };

/** One line: a label and (step, value) points; null values are gaps. */
export interface Line {
  label: string;
  /** The metric it draws, for the chart's key (lines of several runs share it); default: the label. */
  key?: string;
  points: [number, number | null][];
  color: string;
  dash?: number[];
}

/** A vertical marker at a step. */
export interface Marker {
  step: number;
  label: string;
  color: string;
}

export const PALETTE = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#9467bd',
  '#ff7f0e',
  '#17becf',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
];

/** An axis tick: short, and never `-0` for small values (KL is often ~1e-7). */
function tick(v: number | null): string {
  if (v === null) return ''; // uPlot leaves out some splits of a log axis this way
  if (v === 0) return '0';
  const a = Math.abs(v);
  return a >= 1e4 || a < 1e-3 ? v.toExponential(1) : String(Number(v.toPrecision(3)));
}

/** Log-axis labels at 1, 2 and 5 times a power of ten (uPlot labels only the powers, too few for a short range). */
function logTicks(_u: uPlot, splits: number[]): (number | null)[] {
  return splits.map((v) => {
    const lead = Math.round(v / 10 ** Math.floor(Math.log10(v) + 1e-9));
    return lead === 1 || lead === 2 || lead === 5 ? v : null;
  });
}

/** Lines on one shared step axis (uPlot wants aligned columns); on a log scale values <= 0 become gaps. */
function align(lines: readonly Line[], weight: number, log: boolean): uPlot.AlignedData {
  const steps = [...new Set(lines.flatMap((l) => l.points.map((p) => p[0])))].sort((a, b) => a - b);
  const cols = lines.map((l) => {
    const byStep = new Map(l.points);
    const raw = steps.map((s) => byStep.get(s) ?? null);
    return smooth(log ? raw.map((v) => (v !== null && v > 0 ? v : null)) : raw, weight);
  });
  return [steps, ...cols] as uPlot.AlignedData;
}

/** A short sample of a line's stroke, for the key. */
function strokeSample(color: string, dash: number[] | undefined): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', '28');
  svg.setAttribute('height', '8');
  const line = document.createElementNS(ns, 'line');
  for (const [k, v] of Object.entries({ x1: 0, y1: 4, x2: 28, y2: 4, stroke: color, 'stroke-width': 2 }))
    line.setAttribute(k, String(v));
  if (dash) line.setAttribute('stroke-dasharray', dash.join(' '));
  svg.append(line);
  return svg;
}

/**
 * The key's entries: one per metric; its colour when all its lines share one (else the run colours tell them apart).
 */
export function keyEntries(lines: readonly Line[]): { key: string; color: string | null; dash?: number[] }[] {
  const out = new Map<string, { key: string; color: string | null; dash?: number[] }>();
  for (const l of lines) {
    const k = l.key ?? l.label;
    const e = out.get(k);
    if (!e) out.set(k, { key: k, color: l.color, ...(l.dash ? { dash: l.dash } : {}) });
    else if (e.color !== l.color) e.color = null;
  }
  return [...out.values()];
}

function markerPlugin(markers: () => readonly Marker[]): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u: uPlot) => {
          const ctx = u.ctx;
          ctx.save();
          for (const m of markers()) {
            const x = Math.round(u.valToPos(m.step, 'x', true));
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
            ctx.strokeStyle = m.color;
            ctx.setLineDash([4, 3]);
            ctx.lineWidth = 1.5 * devicePixelRatio;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.fillStyle = m.color;
            ctx.font = `${10 * devicePixelRatio}px sans-serif`;
            ctx.fillText(m.label, x + 3, u.bbox.top + 12 * devicePixelRatio);
          }
          ctx.restore();
        },
      ],
    },
  };
}

/** A chart that can be fed new data (live runs) without being rebuilt. */
export class Chart {
  readonly el: HTMLElement;
  private plot: uPlot | null = null;
  private lines: Line[] = [];
  private markers: Marker[] = [];
  private weight = 0;
  private log = false;
  private readonly body: HTMLElement;
  private readonly key: HTMLElement;
  private readonly readout: HTMLElement;
  private readonly logBox: HTMLInputElement;
  private readonly resize: ResizeObserver;

  constructor(
    readonly title: string,
    description = '',
  ) {
    this.body = h('div', { class: 'chart-body' });
    this.key = h('div', { class: 'chart-key' });
    this.readout = h('div', { class: 'chart-readout' });
    this.logBox = h('input', {
      type: 'checkbox',
      class: 'log-scale',
      onchange: () => this.setLog(this.logBox.checked),
    });
    const csv = h(
      'button',
      {
        type: 'button',
        class: 'csv',
        title: 'the logged values (unsmoothed), one column per line',
        onclick: () => this.downloadCsv(),
      },
      'CSV',
    );
    const tools = h(
      'span',
      { class: 'chart-tools' },
      h('label', { title: 'log scale (values <= 0 are left out)' }, this.logBox, 'log'),
      csv,
    );
    this.el = h(
      'figure',
      { class: 'chart', 'data-title': title, 'data-scale': 'linear' },
      h('figcaption', {}, h('span', { title: description }, title), tools),
      this.key,
      this.body,
      this.readout,
    );
    // Charts are built before the page is in the document; they take their cell's width once it has one.
    this.resize = new ResizeObserver(() => {
      const width = this.body.clientWidth;
      if (this.plot && width > 0 && Math.abs(width - this.plot.width) > 4) this.plot.setSize({ width, height: 220 });
    });
    this.resize.observe(this.body);
  }

  /** Replace the data (same lines: data only; other lines: the plot is rebuilt). */
  update(lines: Line[], markers: Marker[] = [], weight = this.weight, rebuild = false): void {
    const sameShape =
      !rebuild &&
      this.plot !== null &&
      lines.length === this.lines.length &&
      lines.every((l, i) => l.label === this.lines[i]!.label);
    this.lines = lines;
    this.markers = markers;
    this.weight = weight;
    const data = align(lines, weight, this.log);
    if (sameShape) {
      this.plot!.setData(data);
      return;
    }
    this.key.replaceChildren(
      ...keyEntries(lines).map((e) =>
        h(
          'span',
          { class: 'key-item', 'data-key': e.key, 'data-dash': (e.dash ?? []).join(' ') },
          strokeSample(e.color ?? '#444', e.dash),
          e.key,
        ),
      ),
    );
    this.plot?.destroy();
    this.body.replaceChildren();
    if (lines.every((l) => l.points.every((p) => p[1] === null))) {
      this.body.append(h('p', { class: 'empty' }, 'no data logged for this metric'));
      this.plot = null;
      return;
    }
    const width = Math.max(280, this.body.clientWidth || 440);
    this.plot = new uPlot(
      {
        width,
        height: 220,
        // The built-in legend (one row per line under the plot) is replaced by the key above and the readout below.
        legend: { show: false },
        scales: { x: { time: false }, y: this.log ? { distr: 3 } : {} },
        axes: [
          { label: 'step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] },
          { values: (_u, splits) => splits.map(tick), size: 60, ...(this.log ? { filter: logTicks } : {}) },
        ],
        series: [
          { label: 'step' },
          ...lines.map((l) => ({
            label: l.label,
            stroke: l.color,
            width: 1.5,
            spanGaps: true,
            points: { show: l.points.length < 40 },
            ...(l.dash ? { dash: l.dash } : {}),
          })),
        ],
        plugins: [markerPlugin(() => this.markers)],
        hooks: { setCursor: [(u: uPlot) => this.showReadout(u)] },
      },
      data,
      this.body,
    );
    (this.el as HTMLElement & { plot?: uPlot }).plot = this.plot; // for the browser tests
  }

  /** The hovered step's value of every line, in one line of text under the plot. */
  private showReadout(u: uPlot): void {
    const i = u.cursor.idx;
    if (i === null || i === undefined) {
      this.readout.textContent = '';
      return;
    }
    const parts = this.lines.map((l, j) => {
      const v = u.data[j + 1]![i];
      return `${l.label} ${v === null || v === undefined ? '-' : tick(v)}`;
    });
    this.readout.textContent = `step ${u.data[0][i]}: ${parts.join(' · ')}`;
  }

  /** Switch the y axis between linear and log (values <= 0 are left out on a log scale). */
  setLog(on: boolean): void {
    this.log = on;
    this.logBox.checked = on;
    this.el.dataset['scale'] = on ? 'log' : 'linear';
    this.update(this.lines, this.markers, this.weight, true);
  }

  /** Download the lines' logged values as `<title>.csv`. */
  downloadCsv(): void {
    download(`${this.title.replace(/[^\w.-]+/g, '_')}.csv`, seriesCsv(this.lines));
  }

  /** Smoothing weight in [0, 1). */
  setSmoothing(weight: number): void {
    this.update(this.lines, this.markers, weight);
  }

  destroy(): void {
    this.resize.disconnect();
    this.plot?.destroy();
  }
}
