// The dashboard's view of run directories (DESIGN.md's layout): finding runs under the folders given on the command
// line, one summary row per run, and a run's details. Reads files only; anything wrong becomes a `problems` sentence.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describeMetric } from './names.js';
import { runPaths } from './run-dir.js';
import { readJsonl } from './jsonl.js';

/** A run's state as the dashboard judges it from its files. */
export type RunStatus = 'running' | 'finished' | 'early-stopped' | 'stopped' | 'empty';

/** One row of the runs table. */
export interface RunSummary {
  /** `<root index>/<folder name>`: how requests name the run. */
  id: string;
  name: string;
  path: string;
  /** config `name`, else the training env tags joined by `+` (the run directory's env part). */
  label: string;
  envs: string[];
  algo: string | null;
  /** `top_p 0.9`, `top_k 0.25`, ... or `none` (top_p 1 keeps every group). */
  filter: string | null;
  seed: number | null;
  lastStep: number | null;
  totalSteps: number | null;
  valBefore: number | null;
  valAfter: number | null;
  status: RunStatus;
  /** Last change of metrics.jsonl (ms since epoch), or null. */
  updated: number | null;
  problems: string[];
}

/** Everything one run's pages need except rollouts and eval files, which are fetched on demand. */
export interface RunDetail {
  summary: RunSummary;
  config: Record<string, unknown> | null;
  /** metrics.jsonl records; non-finite values are null. */
  metrics: Record<string, number | null>[];
  /** Meaning of each metric key seen (for tooltips). */
  descriptions: Record<string, string>;
  /** Keys no entry of src/metrics/names.ts describes. */
  unknownMetrics: string[];
  rolloutSteps: number[];
  evalFiles: string[];
  /** Steps with a complete policy checkpoint (config.json + model.safetensors + tokenizer.json). */
  checkpoints: number[];
  problems: string[];
}

/** A run is a folder with config.yaml or metrics.jsonl. */
export function isRunDir(dir: string): boolean {
  return existsSync(join(dir, 'config.yaml')) || existsSync(join(dir, 'metrics.jsonl'));
}

/** Seconds since the last metrics line within which an unfinished run counts as running. */
export const LIVE_SECONDS = 180;

/** The folders given to `ragen dashboard`: each is a run directory or a folder of them. */
export class RunIndex {
  readonly roots: string[];

  constructor(roots: readonly string[]) {
    this.roots = roots.map((r) => resolve(r));
  }

  /** Every run's id and folder, without reading its files (cheap: the event stream polls it). */
  entries(): { id: string; path: string }[] {
    return this.roots.flatMap((root, i) =>
      this.runNames(root).map((name) => ({ id: `${i}/${name}`, path: isRunDir(root) ? root : join(root, name) })),
    );
  }

  /** Every run's summary, newest first; rescanned on each call so new runs appear. */
  list(): RunSummary[] {
    return this.entries()
      .map((e) => summarize(e.id, e.path))
      .sort((a, b) => (b.updated ?? 0) - (a.updated ?? 0));
  }

  /**
   * The folder of run `id`, or null when the id does not name a listed run. Ids are checked against the listing
   * (never joined blindly), so `..`, slashes and absolute paths cannot leave the given folders.
   */
  resolve(id: string): string | null {
    const m = /^(\d+)\/([^/\\]+)$/.exec(id);
    if (!m) return null;
    const root = this.roots[Number(m[1])];
    const name = m[2]!;
    if (root === undefined || name === '.' || name === '..') return null;
    if (!this.runNames(root).includes(name)) return null;
    return isRunDir(root) ? root : join(root, name);
  }

  private runNames(root: string): string[] {
    if (!existsSync(root)) return [];
    if (isRunDir(root)) return [basename(root)];
    try {
      return readdirSync(root, { withFileTypes: true })
        .filter((d) => d.isDirectory() && isRunDir(join(root, d.name)))
        .map((d) => d.name);
    } catch {
      return []; // an unreadable folder lists no runs; `ragen dashboard` checked the roots at start
    }
  }
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const get = (obj: unknown, ...keys: string[]): unknown =>
  keys.reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), obj);

/** config.yaml as a plain object, or a problem. */
export function readRunConfig(dir: string): { config: Record<string, unknown> | null; problems: string[] } {
  const file = runPaths(dir).config;
  if (!existsSync(file))
    return { config: null, problems: ['config.yaml is missing: algorithm, filter and seed are unknown.'] };
  try {
    const config = parseYaml(readFileSync(file, 'utf8')) as unknown;
    if (!config || typeof config !== 'object')
      return { config: null, problems: ['config.yaml is not a YAML mapping.'] };
    return { config: config as Record<string, unknown>, problems: [] };
  } catch (err) {
    return { config: null, problems: [`config.yaml does not parse: ${(err as Error).message.split('\n')[0]}`] };
  }
}

function filterLabel(config: Record<string, unknown> | null): string | null {
  const strategy = get(config, 'algo', 'filter', 'strategy');
  const value = get(config, 'algo', 'filter', 'value');
  if (typeof strategy !== 'string') return null;
  if (strategy === 'top_p' && value === 1) return 'none';
  return `${strategy} ${String(value)}`;
}

/** The row of one run directory. */
export function summarize(id: string, dir: string, now = Date.now()): RunSummary {
  const { config, problems } = readRunConfig(dir);
  const metricsFile = runPaths(dir).metrics;
  const { records, problems: metricProblems } = readJsonl<Record<string, number>>(metricsFile, 'metrics.jsonl', {
    nullAsNaN: true,
  });
  problems.push(...metricProblems);
  const train = get(config, 'env', 'train');
  const envs = Array.isArray(train) ? train.map((t) => String(get(t, 'tag'))) : [];
  const steps = records.map((r) => r.step).filter((s): s is number => typeof s === 'number');
  const lastStep = steps.length > 0 ? Math.max(...steps) : null;
  const totalSteps = num(get(config, 'trainer', 'steps'));
  const vals = records.filter((r) => Number.isFinite(r['val/success']));
  const valBefore = vals.find((r) => r.step === 0)?.['val/success'] ?? null;
  const lastVal = vals.at(-1);
  const valAfter = lastVal && lastVal.step !== 0 ? lastVal['val/success']! : null;
  const updated = existsSync(metricsFile) ? statSync(metricsFile).mtimeMs : null;
  const earlyStopped = records.some((r) => Object.keys(r).some((k) => k.startsWith('early_stopped/') && r[k] === 1));
  let status: RunStatus;
  if (earlyStopped) status = 'early-stopped';
  else if (lastStep !== null && totalSteps !== null && lastStep >= totalSteps) status = 'finished';
  else if (updated !== null && now - updated < LIVE_SECONDS * 1000) status = 'running';
  else status = lastStep === null ? 'empty' : 'stopped';
  const name = get(config, 'name');
  return {
    id,
    name: basename(dir),
    path: dir,
    label: typeof name === 'string' ? name : envs.join('+'),
    envs,
    algo:
      typeof get(config, 'algo', 'advEstimator') === 'string' ? (get(config, 'algo', 'advEstimator') as string) : null,
    filter: filterLabel(config),
    seed: num(get(config, 'seed', 'train')),
    lastStep,
    totalSteps,
    valBefore,
    valAfter,
    status,
    updated,
    problems,
  };
}

/** `step-N` entries of a folder, sorted, filtered by `ok`. */
function stepsIn(dir: string, re: RegExp, ok: (name: string) => boolean = () => true): number[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((f) => ({ f, m: re.exec(f) }))
    .filter((x) => x.m !== null && ok(x.f))
    .map((x) => Number(x.m![1]))
    .sort((a, b) => a - b);
}

/** The complete details of run `id` in `dir`. */
export function runDetail(id: string, dir: string): RunDetail {
  const summary = summarize(id, dir);
  const paths = runPaths(dir);
  const { config } = readRunConfig(dir);
  const { records } = readJsonl<Record<string, number>>(paths.metrics, 'metrics.jsonl', { nullAsNaN: true });
  const keys = new Set<string>();
  for (const r of records) for (const k of Object.keys(r)) if (k !== 'step' && k !== 'time') keys.add(k);
  const descriptions: Record<string, string> = {};
  const unknownMetrics: string[] = [];
  for (const k of [...keys].sort()) {
    const d = describeMetric(k);
    if (d === undefined) unknownMetrics.push(k);
    else descriptions[k] = d;
  }
  const problems = [...summary.problems];
  if (unknownMetrics.length > 0)
    problems.push(
      `metrics.jsonl has ${unknownMetrics.length} metric key(s) the dashboard does not know (${unknownMetrics.slice(0, 5).join(', ')}${unknownMetrics.length > 5 ? ', ...' : ''}); they are plotted without a description.`,
    );
  const evalFiles = existsSync(paths.eval)
    ? readdirSync(paths.eval)
        .filter((f) => f.endsWith('.jsonl'))
        .sort()
    : [];
  const complete = (name: string) =>
    ['config.json', 'model.safetensors', 'tokenizer.json'].every((f) => existsSync(join(paths.checkpoints, name, f)));
  return {
    summary,
    config,
    metrics: records.map((r) =>
      Object.fromEntries(
        Object.entries(r).map(([k, v]) => [k, typeof v === 'number' && Number.isFinite(v) ? v : null]),
      ),
    ),
    descriptions,
    unknownMetrics,
    rolloutSteps: stepsIn(paths.rollouts, /^step-(\d+)\.jsonl$/),
    evalFiles,
    checkpoints: stepsIn(paths.checkpoints, /^step-(\d+)$/, complete),
    problems,
  };
}
