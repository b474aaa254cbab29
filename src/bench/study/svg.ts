// A small SVG chart writer for the study's figures: panels with linear axes and "nice" ticks, lines, shaded bands
// (a spread over seeds), point markers and a legend. Strings only, so the figures can be checked and rasterised.

/** Round tick values covering [lo, hi] (steps of 1, 2 or 5 × 10^k, about `count` of them). */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw)!;
  const out: number[] = [];
  for (let t = Math.floor(lo / step + 1e-9) * step; t <= hi + step * 1e-9; t += step)
    out.push(Number(t.toPrecision(12)));
  return out;
}

/** Map v from [d0, d1] onto [r0, r1]. */
export function scale(v: number, [d0, d1]: readonly [number, number], [r0, r1]: readonly [number, number]): number {
  return d1 === d0 ? (r0 + r1) / 2 : r0 + ((v - d0) / (d1 - d0)) * (r1 - r0);
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const f = (x: number) => Number(x.toFixed(1));

/** One plotted series: a line (x, y) with an optional band [lo, hi] around it. */
export interface PlotSeries {
  label: string;
  color: string;
  points: { x: number; y: number; lo?: number; hi?: number }[];
  dash?: string;
  /** Draw a dot on every point. */
  dots?: boolean;
}

/** A marker: a small triangle on the x axis (e.g. a warning's step). */
export interface PlotMarker {
  x: number;
  color: string;
  title: string;
}

/** One panel. Domains default to the data's range (bands included), padded a little on y. */
export interface PanelSpec {
  x: number;
  y: number;
  width: number;
  height: number;
  title: string;
  xLabel: string;
  yLabel: string;
  series: PlotSeries[];
  markers?: PlotMarker[];
  xDomain?: [number, number];
  yDomain?: [number, number];
  /** Format of y tick labels. */
  yFormat?: (v: number) => string;
}

const M = { left: 56, right: 12, top: 26, bottom: 40 };

/** The panel's plot area in figure coordinates. */
export function plotArea(p: PanelSpec): { x0: number; x1: number; y0: number; y1: number } {
  return { x0: p.x + M.left, x1: p.x + p.width - M.right, y0: p.y + p.height - M.bottom, y1: p.y + M.top };
}

function domain(vals: number[], pad: number): [number, number] {
  const v = vals.filter(Number.isFinite);
  if (v.length === 0) return [0, 1];
  const lo = Math.min(...v),
    hi = Math.max(...v);
  const d = hi - lo || Math.abs(hi) || 1;
  return [lo - pad * d, hi + pad * d];
}

/** The SVG elements of one panel (no <svg> wrapper). */
export function panel(p: PanelSpec): string {
  const { x0, x1, y0, y1 } = plotArea(p);
  const xs = p.series.flatMap((s) => s.points.map((q) => q.x)).concat((p.markers ?? []).map((m) => m.x));
  const ys = p.series.flatMap((s) => s.points.flatMap((q) => [q.y, q.lo ?? q.y, q.hi ?? q.y]));
  const xd = p.xDomain ?? domain(xs, 0);
  const yd = p.yDomain ?? domain(ys, 0.08);
  const X = (v: number) => f(scale(v, xd, [x0, x1]));
  const Y = (v: number) => f(scale(v, yd, [y0, y1]));
  const fmtY = p.yFormat ?? ((v: number) => String(Number(v.toPrecision(3))));
  const out: string[] = [
    `<rect x="${x0}" y="${y1}" width="${x1 - x0}" height="${y0 - y1}" fill="#fcfcfc" stroke="#bbb"/>`,
  ];
  for (const t of niceTicks(xd[0], xd[1], 6).filter((t) => t >= xd[0] && t <= xd[1]))
    out.push(
      `<line x1="${X(t)}" x2="${X(t)}" y1="${y0}" y2="${y0 + 4}" stroke="#888"/><text x="${X(t)}" y="${y0 + 16}" text-anchor="middle" class="tick">${t}</text>`,
    );
  for (const t of niceTicks(yd[0], yd[1], 5).filter((t) => t >= yd[0] && t <= yd[1]))
    out.push(
      `<line x1="${x0}" x2="${x1}" y1="${Y(t)}" y2="${Y(t)}" stroke="#eee"/><text x="${x0 - 5}" y="${Y(t) + 4}" text-anchor="end" class="tick">${esc(fmtY(t))}</text>`,
    );
  out.push(`<text x="${(x0 + x1) / 2}" y="${p.y + 16}" text-anchor="middle" class="title">${esc(p.title)}</text>`);
  out.push(`<text x="${(x0 + x1) / 2}" y="${y0 + 33}" text-anchor="middle" class="label">${esc(p.xLabel)}</text>`);
  out.push(
    `<text x="${p.x + 14}" y="${(y0 + y1) / 2}" transform="rotate(-90 ${p.x + 14} ${(y0 + y1) / 2})" text-anchor="middle" class="label">${esc(p.yLabel)}</text>`,
  );
  for (const s of p.series) {
    const band = s.points.filter((q) => q.lo !== undefined && q.hi !== undefined);
    if (band.length > 1)
      out.push(
        `<polygon class="band" points="${[...band.map((q) => `${X(q.x)},${Y(q.hi!)}`), ...band.reverse().map((q) => `${X(q.x)},${Y(q.lo!)}`)].join(' ')}" fill="${s.color}" fill-opacity="0.15" stroke="none"/>`,
      );
  }
  for (const s of p.series) {
    const pts = s.points.map((q) => `${X(q.x)},${Y(q.y)}`).join(' ');
    out.push(
      `<polyline class="line" data-label="${esc(s.label)}" points="${pts}" fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`,
    );
    if (s.dots) for (const q of s.points) out.push(`<circle cx="${X(q.x)}" cy="${Y(q.y)}" r="2.5" fill="${s.color}"/>`);
  }
  for (const m of p.markers ?? [])
    out.push(
      `<path class="marker" d="M${X(m.x)},${y0 - 1} l-5,-9 h10 z" fill="${m.color}" stroke="#333" stroke-width="0.5"><title>${esc(m.title)}</title></path>`,
    );
  return out.join('\n');
}

/** A legend row of coloured swatches at (x, y). */
export function legend(items: { label: string; color: string; dash?: string }[], x: number, y: number): string {
  let cx = x;
  return items
    .map((it) => {
      const s = `<line x1="${cx}" x2="${cx + 22}" y1="${y}" y2="${y}" stroke="${it.color}" stroke-width="3"${it.dash ? ` stroke-dasharray="${it.dash}"` : ''}/><text x="${cx + 27}" y="${y + 4}" class="legend">${esc(it.label)}</text>`;
      cx += 40 + 7 * it.label.length;
      return s;
    })
    .join('\n');
}

/** A whole figure. */
export function svgDocument(width: number, height: number, body: string): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, sans-serif">`,
    '<style>.tick{font-size:11px;fill:#666}.title{font-size:14px;font-weight:600;fill:#222}.label{font-size:12px;fill:#333}.legend{font-size:12px;fill:#222}.note{font-size:11px;fill:#555}.quad{font-size:12px;fill:#2c7a2c;font-weight:600}.quad.bad{fill:#b22}</style>',
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    body,
    '</svg>',
  ].join('\n');
}
