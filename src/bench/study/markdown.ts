// The RAGEN-2 study as a markdown section for docs/benchmarks.md: one row per config (mean ± sd over finished seeds)
// and one row per run (its curve's landmarks: when success fell, when each warning first fired, when MI halved).
import {
  earliestWarning,
  endMeans,
  END_WINDOW,
  WARNING_KINDS,
  type Spread,
  type StudyRun,
  type StudySummary,
} from './summary.js';

const pct = (x: number | null | undefined) =>
  x === null || x === undefined || !Number.isFinite(x) ? '-' : `${(100 * x).toFixed(1)}%`;
const num = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(3));

/** `mean ± sd (min–max)` in percent (points for a change). */
export function fmtSpread(s: Spread | null, signed = false): string {
  if (!s) return '-';
  const p = (x: number) => `${signed && x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;
  return `${p(s.mean)}${signed ? ' pts' : '%'}${s.sd === null ? '' : ` ± ${(100 * s.sd).toFixed(1)}`} (${p(s.min)} to ${p(s.max)}, n=${s.n})`;
}

function firstLast(series: { step: number; mean: number }[]): string {
  const m = endMeans(series, (p) => p.mean);
  return m ? `${num(m.early)} → ${num(m.late)}` : '-';
}

function warningsOf(run: StudyRun): string {
  const fired = WARNING_KINDS.filter((k) => run.firstWarning[k] !== null).map((k) => `${k} @${run.firstWarning[k]}`);
  return fired.length ? fired.join(', ') : 'none';
}

/** Did a warning fire strictly before success fell? `-` when success did not fall. */
function warnedFirst(run: StudyRun): string {
  if (run.successFell === null) return '-';
  const w = earliestWarning(run);
  return w !== null && w.step < run.successFell ? `yes (${run.successFell - w.step} steps ahead)` : 'no';
}

/** The markdown section; `meta` is the date/machine line. */
export function studyMarkdown(s: StudySummary, meta: string, command: string, figures = 'ragen2'): string {
  const runs = s.configs.flatMap((c) => c.runs);
  const done = runs.filter((r) => r.after !== null);
  const status =
    runs.length === 0
      ? 'No runs yet.'
      : `Runs finished: ${done.length} of ${runs.length} started (${runs.map((r) => `${r.config} seed ${r.seed}: ${r.after !== null ? 'finished' : `${r.status}, step ${r.stepsDone}/${r.stepsPlanned ?? '?'}`}`).join('; ')}).`;
  const configRows = s.configs.map((c) => {
    const fell = c.runs.filter((r) => r.successFell !== null);
    const warned = fell.filter((r) => {
      const w = earliestWarning(r);
      return w !== null && w.step < r.successFell!;
    });
    return `| ${c.name} | ${c.finished}/${c.runs.length} | ${fmtSpread(c.before)} | ${fmtSpread(c.after)} | ${fmtSpread(c.change, true)} | ${firstLast(c.mi)} | ${firstLast(c.hzx)} | ${c.runs.filter((r) => r.miHalved !== null).length}/${c.runs.length} | ${fell.length}/${c.runs.length} | ${warned.length}/${fell.length} |`;
  });
  const runRows = runs.map(
    (r) =>
      `| ${r.config} | ${r.seed} | ${r.status} | ${r.stepsDone}/${r.stepsPlanned ?? '?'} | ${pct(r.before)} | ${pct(r.after)} | ${pct(Math.max(...r.val.map((p) => p.success)))} | ${r.successFell ?? '-'} | ${warningsOf(r)} | ${warnedFirst(r)} | ${r.miHalved ?? '-'} | ${r.endRegime ?? '-'} |`,
  );
  return [
    '## RAGEN-2 on our own runs: `ragen bench ragen2`',
    '',
    `${meta} Command: \`${command}\`. ${status}`,
    '',
    `Val success: \`val/success\` on the fixed validation seeds of \`env.val\` (64 seeds of the validation env in the presets); "after" is the last validation of a finished run. Spread: ± sample sd over seeds, (min to max). "Success fell": the first validation at least ${(100 * s.drop).toFixed(0)} points below the best validation before it. "MI halved": the first collapse-diagnostic step where Î(X;Z) (\`collapse/mi_estimate\`) is at most half its step-1 value. Î and Ĥ(Z|X) "first → last": the seed mean averaged over the diagnostics of steps 1-${END_WINDOW} and of the last ${END_WINDOW} steps (one diagnostic scores 64 pairs and is noisy). End regime: the quadrant of the last ${END_WINDOW} steps' mean against the first ${END_WINDOW} steps' (Î up or down, Ĥ(Z|X) up or down), RAGEN-2's four regimes as the dashboard's collapse view names them.`,
    '',
    '| config | finished | val success before | after | change | Î(X;Z), steps 1-10 → last 10 | Ĥ(Z|X), steps 1-10 → last 10 | runs with MI halved | runs where success fell | of those, a warning fired first |',
    '|---|---:|---|---|---|---|---|---:|---:|---:|',
    ...configRows,
    '',
    '| config | seed | status | steps | before | after | best val | success fell at | early warnings (first step) | warned first | MI halved at | end regime |',
    '|---|---:|---|---:|---:|---:|---:|---:|---|---|---:|---|',
    ...runRows,
    '',
    `![Validation success per config](${figures}/success.png)`,
    `![Î(X;Z) and Ĥ(Z|X) per config](${figures}/collapse.png)`,
    `![The two-axis regime picture](${figures}/regimes.png)`,
    ...(s.problems.length ? ['', 'Problems reading the runs:', '', ...s.problems.map((p) => `- ${p}`)] : []),
  ].join('\n');
}
