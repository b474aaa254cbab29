// Line charts of metric series with uPlot: several runs on one chart, EMA smoothing (TensorBoard's debiased EMA),
// and vertical markers (early warnings) on the step axis.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from './dom.js';
import { smooth } from './smooth.js';

export { smooth };

/** One line: a label and (step, value) points; null values are gaps. */
export interface Line {
  label: string;
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

export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22'];

/** An axis tick: short, and never `-0` for small values (KL is often ~1e-7). */
function tick(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  return a >= 1e4 || a < 1e-3 ? v.toExponential(1) : String(Number(v.toPrecision(3)));
}

/** Lines on one shared step axis (uPlot wants aligned columns). */
function align(lines: readonly Line[], weight: number): uPlot.AlignedData {
  const steps = [...new Set(lines.flatMap((l) => l.points.map((p) => p[0])))].sort((a, b) => a - b);
  const cols = lines.map((l) => {
    const byStep = new Map(l.points);
    return smooth(steps.map((s) => byStep.get(s) ?? null), weight);
  });
  return [steps, ...cols] as uPlot.AlignedData;
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
  private readonly body: HTMLElement;
  private readonly resize: ResizeObserver;

  constructor(readonly title: string, description = '') {
    this.body = h('div', { class: 'chart-body' });
    this.el = h('figure', { class: 'chart', 'data-title': title }, h('figcaption', { title: description }, title), this.body);
    // Charts are built before the page is in the document; they take their cell's width once it has one.
    this.resize = new ResizeObserver(() => {
      const width = this.body.clientWidth;
      if (this.plot && width > 0 && Math.abs(width - this.plot.width) > 4) this.plot.setSize({ width, height: 220 });
    });
    this.resize.observe(this.body);
  }

  /** Replace the data (same lines: data only; other lines: the plot is rebuilt). */
  update(lines: Line[], markers: Marker[] = [], weight = this.weight): void {
    const sameShape = this.plot !== null && lines.length === this.lines.length && lines.every((l, i) => l.label === this.lines[i]!.label);
    this.lines = lines;
    this.markers = markers;
    this.weight = weight;
    const data = align(lines, weight);
    if (sameShape) {
      this.plot!.setData(data);
      return;
    }
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
        scales: { x: { time: false } },
        axes: [{ label: 'step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] }, { values: (_u, splits) => splits.map(tick), size: 60 }],
        series: [{ label: 'step' }, ...lines.map((l) => ({ label: l.label, stroke: l.color, width: 1.5, spanGaps: true, points: { show: l.points.length < 40 }, ...(l.dash ? { dash: l.dash } : {}) }))],
        plugins: [markerPlugin(() => this.markers)],
      },
      data,
      this.body,
    );
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
