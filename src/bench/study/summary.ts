// The RAGEN-2 study's numbers from its run directories: per run the validation curve, the collapse diagnostics
// (Î(X;Z), Ĥ(Z|X)), when each early warning first fired and when validation success first fell; per config the
// mean and spread over seeds. Reads files only, so it summarises whatever has finished (or is still running).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonl, summarize as summarizeRun, type RunStatus } from '../../metrics/index.js';

/** The early warnings the trainer logs (`early_warning/<kind>` is 1 while one fires). */
export const WARNING_KINDS = ['reward_std_collapse', 'entropy_drop', 'grad_norm_spike', 'mi_collapse'] as const;
export type WarningKind = (typeof WARNING_KINDS)[number];

/** One collapse-diagnostic step. */
export interface CollapsePoint {
  step: number;
  /** `collapse/mi_estimate`. */
  mi: number;
  /** `collapse/conditional_entropy`. */
  hzx: number;
}

/** One run of the study, read from its directory. */
export interface StudyRun {
  config: string;
  seed: number;
  dir: string;
  status: RunStatus;
  stepsDone: number;
  stepsPlanned: number | null;
  /** `val/success` (mean over val envs) per validation, step 0 = before training. */
  val: { step: number; success: number }[];
  before: number | null;
  /** The last validation after step 0 of a finished run; null while a run is unfinished. */
  after: number | null;
  collapse: CollapsePoint[];
  /** First step at which each warning fired, null if it never did. */
  firstWarning: Record<WarningKind, number | null>;
  /** First validation at which success is `drop` or more below the best earlier validation (step 0 included). */
  successFell: number | null;
  /** First diagnostic step at which Î(X;Z) is at most half its first value (null when it never is, or starts <= 0). */
  miHalved: number | null;
  /**
   * RAGEN-2's quadrant of the mean over the last 10 steps' diagnostics against the mean over steps 1-10 (single
   * diagnostics are noisy).
   */
  endRegime: string | null;
}

/** Mean and spread of one quantity over seeds. */
export interface Spread {
  n: number;
  mean: number;
  /** Sample standard deviation (n − 1); null for a single run. */
  sd: number | null;
  min: number;
  max: number;
}

/** A series aggregated over seeds, step by step. */
export type SpreadSeries = ({ step: number } & Spread)[];

/** One configuration over its seeds. */
export interface ConfigSummary {
  name: string;
  runs: StudyRun[];
  /** Over finished runs only. */
  finished: number;
  before: Spread | null;
  after: Spread | null;
  change: Spread | null;
  val: SpreadSeries;
  mi: SpreadSeries;
  hzx: SpreadSeries;
}

/** The whole study as read now. */
export interface StudySummary {
  runsDir: string;
  /** Validation drop (absolute success) that counts as "success fell". */
  drop: number;
  configs: ConfigSummary[];
  problems: string[];
}

const RUN_DIR = /^(.+)__seed(-?\d+)$/;

/** Mean, sample sd, min and max; null for no values. */
export function spread(xs: number[]): Spread | null {
  const v = xs.filter(Number.isFinite);
  if (v.length === 0) return null;
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  const sd = v.length > 1 ? Math.sqrt(v.reduce((a, x) => a + (x - mean) ** 2, 0) / (v.length - 1)) : null;
  return { n: v.length, mean, sd, min: Math.min(...v), max: Math.max(...v) };
}

/** Aggregate per-run series by step (a step present in some runs only is aggregated over those). */
export function spreadSeries(series: { step: number; value: number }[][]): SpreadSeries {
  const byStep = new Map<number, number[]>();
  for (const s of series)
    for (const p of s) if (Number.isFinite(p.value)) byStep.set(p.step, [...(byStep.get(p.step) ?? []), p.value]);
  return [...byStep.entries()].sort((a, b) => a[0] - b[0]).map(([step, xs]) => ({ step, ...spread(xs)! }));
}

/** First validation (after step 0) that is at least `drop` below the best validation before it. */
export function firstFall(val: { step: number; success: number }[], drop: number): number | null {
  let peak = -Infinity;
  for (const p of val) {
    if (p.step > 0 && p.success <= peak - drop + 1e-12) return p.step;
    peak = Math.max(peak, p.success);
  }
  return null;
}

/**
 * RAGEN-2's four regimes: Î(X;Z) (cross-input distinguishability) and Ĥ(Z|X) (within-input diversity) against a base
 * point.
 */
export function regimeOf(p: { mi: number; hzx: number }, base: { mi: number; hzx: number }): string {
  if (p.mi >= base.mi) return p.hzx >= base.hzx ? 'diverse, input-grounded' : 'compressed, input-grounded';
  return p.hzx >= base.hzx ? 'template collapse' : 'low-entropy collapse';
}

/** Steps averaged at each end of a run for its regime and for the tables' first/last values. */
export const END_WINDOW = 10;

/**
 * Mean of `value` over points with step <= END_WINDOW and over the last END_WINDOW steps (null if they overlap or are
 * empty).
 */
export function endMeans<T extends { step: number }>(
  points: T[],
  value: (p: T) => number,
): { early: number; late: number } | null {
  if (points.length === 0) return null;
  const last = points.at(-1)!.step;
  const early = points.filter((p) => p.step <= END_WINDOW);
  const late = points.filter((p) => p.step > Math.max(END_WINDOW, last - END_WINDOW));
  if (early.length === 0 || late.length === 0) return null;
  const mean = (ps: T[]) => ps.reduce((a, p) => a + value(p), 0) / ps.length;
  return { early: mean(early), late: mean(late) };
}

function endRegime(collapse: CollapsePoint[]): string | null {
  const mi = endMeans(collapse, (p) => p.mi);
  const hzx = endMeans(collapse, (p) => p.hzx);
  return mi && hzx ? regimeOf({ mi: mi.late, hzx: hzx.late }, { mi: mi.early, hzx: hzx.early }) : null;
}

/** Read one run directory named `<config>__seed<N>`. */
export function readStudyRun(
  dir: string,
  config: string,
  seed: number,
  drop: number,
): { run: StudyRun; problems: string[] } {
  const s = summarizeRun('study', dir);
  const { records } = readJsonl<Record<string, number>>(join(dir, 'metrics.jsonl'), 'metrics.jsonl', {
    nullAsNaN: true,
  });
  const val = records
    .filter((r) => Number.isFinite(r['val/success']))
    .map((r) => ({ step: r.step!, success: r['val/success']! }));
  const collapse = records
    .filter((r) => Number.isFinite(r['collapse/mi_estimate']) && Number.isFinite(r['collapse/conditional_entropy']))
    .map((r) => ({ step: r.step!, mi: r['collapse/mi_estimate']!, hzx: r['collapse/conditional_entropy']! }));
  const firstWarning = Object.fromEntries(
    WARNING_KINDS.map((k) => [k, records.find((r) => r[`early_warning/${k}`] === 1)?.step ?? null]),
  ) as Record<WarningKind, number | null>;
  const finished = s.status === 'finished' || s.status === 'early-stopped';
  const lastVal = val.at(-1);
  const first = collapse[0];
  const halved = first && first.mi > 0 ? collapse.find((p) => p.mi <= 0.5 * first.mi) : undefined;
  const run: StudyRun = {
    config,
    seed,
    dir,
    status: s.status,
    stepsDone: s.lastStep ?? 0,
    stepsPlanned: s.totalSteps,
    val,
    before: val[0]?.step === 0 ? val[0].success : null,
    after: finished && lastVal && lastVal.step > 0 ? lastVal.success : null,
    collapse,
    firstWarning,
    successFell: firstFall(val, drop),
    miHalved: halved?.step ?? null,
    endRegime: endRegime(collapse),
  };
  return { run, problems: s.problems.map((p) => `${dir}: ${p}`) };
}

/** Summarise every `<config>__seed<N>` directory under `runsDir`, configs in `order` first (then by name). */
export function summarizeStudy(runsDir: string, opts: { drop?: number; order?: string[] } = {}): StudySummary {
  const drop = opts.drop ?? 0.1;
  const problems: string[] = [];
  const runs: StudyRun[] = [];
  if (!existsSync(runsDir)) problems.push(`${runsDir} does not exist: no study runs yet.`);
  else {
    for (const d of readdirSync(runsDir, { withFileTypes: true })) {
      const m = d.isDirectory() ? RUN_DIR.exec(d.name) : null;
      if (!m) continue;
      const r = readStudyRun(join(runsDir, d.name), m[1]!, Number(m[2]), drop);
      runs.push(r.run);
      problems.push(...r.problems);
    }
  }
  const order = opts.order ?? [];
  const names = [...new Set(runs.map((r) => r.config))].sort(
    (a, b) => rank(order, a) - rank(order, b) || a.localeCompare(b),
  );
  const configs = names.map((name): ConfigSummary => {
    const rs = runs.filter((r) => r.config === name).sort((a, b) => a.seed - b.seed);
    const done = rs.filter((r) => r.after !== null);
    return {
      name,
      runs: rs,
      finished: done.length,
      before: spread(rs.map((r) => r.before ?? Number.NaN)),
      after: spread(done.map((r) => r.after!)),
      change: spread(done.filter((r) => r.before !== null).map((r) => r.after! - r.before!)),
      val: spreadSeries(rs.map((r) => r.val.map((p) => ({ step: p.step, value: p.success })))),
      mi: spreadSeries(rs.map((r) => r.collapse.map((p) => ({ step: p.step, value: p.mi })))),
      hzx: spreadSeries(rs.map((r) => r.collapse.map((p) => ({ step: p.step, value: p.hzx })))),
    };
  });
  return { runsDir, drop, configs, problems };
}

function rank(order: string[], name: string): number {
  const i = order.indexOf(name);
  return i < 0 ? order.length : i;
}

/** The first warning of a run (any kind) and its step, or null. */
export function earliestWarning(run: StudyRun): { kind: WarningKind; step: number } | null {
  let best: { kind: WarningKind; step: number } | null = null;
  for (const k of WARNING_KINDS) {
    const s = run.firstWarning[k];
    if (s !== null && (best === null || s < best.step)) best = { kind: k, step: s };
  }
  return best;
}
