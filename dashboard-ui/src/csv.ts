// A chart's series as CSV: one row per step, one column per line, the logged (unsmoothed) values; empty cells where a
// line has no value at that step. RFC 4180 quoting, so run names with commas survive a spreadsheet.

/** A field quoted when it holds a comma, a quote or a line break. */
function field(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** `step,<label 1>,<label 2>...` then the values, steps ascending. */
export function seriesCsv(
  lines: readonly { label: string; points: readonly (readonly [number, number | null])[] }[],
): string {
  const steps = [...new Set(lines.flatMap((l) => l.points.map((p) => p[0])))].sort((a, b) => a - b);
  const maps = lines.map((l) => new Map(l.points));
  const rows = [['step', ...lines.map((l) => l.label)].map(field).join(',')];
  for (const s of steps)
    rows.push([String(s), ...maps.map((m) => ((m.get(s) ?? null) === null ? '' : String(m.get(s))))].join(','));
  return `${rows.join('\n')}\n`;
}

/** Offer `text` as a file download named `name`. */
export function download(name: string, text: string, type = 'text/csv'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
