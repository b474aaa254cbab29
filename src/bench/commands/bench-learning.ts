// `ragen bench learning`: learning evidence. Trains presets and records validation success before and after,
// the validation curve, the filter's kept ratio and the step time, as JSON and as a markdown section for
// docs/benchmarks.md. A benchmark, not a test: each run takes minutes.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { readMetricsFile, timestamp } from '../../metrics/index.js';
import { checkFlagOverrides, checkRunConfig, listPresets, loadConfig, type RagenConfig } from '../../config/index.js';
import { train } from '../../train/index.js';
import { ConfigError, didYouMean, parsePositiveInt, RagenError, UsageError } from '../../util/index.js';
import {
  FRAMEWORK_RUNS,
  GATEWAY_RUNS,
  gatewayMarkdown,
  measureGatewayOverhead,
  type GatewayOverhead,
} from './bench-learning-gateway.js';

/** One benchmark run: a name, the presets merged for it and its own overrides (after the command's). */
export interface LearningRunSpec {
  name: string;
  presets: string[];
  overrides?: string[];
}

/**
 * The issue's evidence: PPO on Sokoban and FrozenLake, GRPO, Bandit, and top-p 0.9 filtering (sokoban-ppo's) beside
 * none.
 */
export const DEFAULT_RUNS: LearningRunSpec[] = [
  { name: 'sokoban-ppo', presets: ['sokoban-ppo'] },
  { name: 'frozenlake-ppo', presets: ['frozenlake-ppo'] },
  { name: 'sokoban-grpo', presets: ['sokoban-grpo'] },
  { name: 'bandit-ppo', presets: ['bandit-ppo'] },
  { name: 'sokoban-ppo+no-filter', presets: ['sokoban-ppo', 'filter/none'] },
];

/** What one run measured. */
export interface LearningRunResult {
  name: string;
  presets: string[];
  model: string;
  algo: string;
  filter: string;
  runDir: string;
  stepsPlanned: number;
  stepsDone: number;
  earlyStop: string | null;
  seconds: number;
  meanStepSeconds: number;
  meanKeptRatio: number;
  /** Training episodes per second of rollout time (`timing_s/gen`), mean over steps. */
  episodesPerS: number;
  /** `val/<tag>/success` before training and at the last validation. */
  before: Record<string, number>;
  after: Record<string, number>;
  /** Per validation: step and `val/success` (mean over tags). */
  valCurve: { step: number; success: number }[];
  /** Per training step: the filter's kept ratio and the step's wall time. */
  steps: { step: number; keptRatio: number; seconds: number; trainSuccess: number }[];
}

/** The `--out` JSON. */
export interface LearningReport {
  date: string;
  node: string;
  cpu: string;
  loadAverage: number;
  overrides: string[];
  runs: LearningRunResult[];
  /** With the gateway comparison (`--runs gateway`): one chat call through the gateway against the engine. */
  gatewayOverhead?: GatewayOverhead;
}

interface LearningOptions {
  runs?: string;
  steps?: number;
  out?: string;
  runsDir: string;
}

export function register(bench: Command): void {
  bench
    .command('learning')
    .description(
      'Train presets and report validation success before/after with curves, kept ratio and step time (JSON + a markdown section for docs/benchmarks.md).',
    )
    .argument('[overrides...]', 'config overrides applied to every run, e.g. trainer.valEvery=5')
    .option(
      '--runs <list>',
      `comma-separated runs: names of the defaults (${DEFAULT_RUNS.map((r) => r.name).join(', ')}), \`gateway\` (the AI SDK guess-number agent through the gateway beside GuessNumber in the built-in loop, 3 seeds each), \`frameworks\` (gateway's runs plus the same agent written with the OpenAI Agents SDK and LangChain.js) or presets and key=value overrides joined by + (e.g. sokoban-ppo+filter/top-k-0.25, sokoban-ppo+model.engine=torch)`,
    )
    .option(
      '--steps <n>',
      "training steps per run (trainer.steps; default: each preset's)",
      parsePositiveInt('--steps'),
    )
    .option('--out <file.json>', 'write the report here [<runs-dir>/report-<time>.json]')
    .option('--runs-dir <dir>', 'parent of the run directories', 'runs/bench-learning')
    .addHelpText(
      'after',
      '\nExamples:\n  $ ragen bench learning\n  $ ragen bench learning --runs sokoban-ppo,sokoban-ppo+top-p-0.9 --steps 30 trainer.valEvery=5\n  $ ragen bench learning --runs bandit-ppo --out bench-bandit.json\n  $ ragen bench learning --runs gateway\n  $ ragen bench learning --runs frameworks --steps 20 env.train.0.groupSize=4',
    )
    .action(async (overrides: string[], opts: LearningOptions) => {
      const report = await benchLearning(overrides, opts);
      console.log(`\n${learningMarkdown(report)}`);
    });
}

/** Resolve `--runs` into specs. */
export function learningRuns(list: string | undefined): LearningRunSpec[] {
  if (!list) return DEFAULT_RUNS;
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .flatMap((name) => {
      if (name === 'gateway') return GATEWAY_RUNS;
      if (name === 'frameworks') return FRAMEWORK_RUNS;
      const parts = name.split('+');
      const known = DEFAULT_RUNS.find((r) => r.name === name) ?? FRAMEWORK_RUNS.find((r) => r.name === name);
      if (known) return known;
      const presets = listPresets();
      for (const part of parts.filter((p) => !p.includes('='))) {
        if (!presets.includes(part) && !existsSync(part) && !existsSync(`${part}.yaml`)) {
          const names = [...DEFAULT_RUNS, ...FRAMEWORK_RUNS].map((r) => r.name);
          throw new UsageError(
            `Unknown --runs entry \`${part}\`: neither a run name (${DEFAULT_RUNS.map((r) => r.name).join(', ')}, gateway, frameworks, or one of theirs) nor a preset or YAML file.${didYouMean(part, [...names, 'gateway', 'frameworks', ...presets])}`,
          );
        }
      }
      return { name, presets: parts.filter((p) => !p.includes('=')), overrides: parts.filter((p) => p.includes('=')) };
    });
}

/** Check every run's config first (a missing model fails in seconds, not after an hour), then train them in turn. */
export async function benchLearning(overrides: readonly string[], opts: LearningOptions): Promise<LearningReport> {
  const stamp = timestamp(new Date());
  const specs = learningRuns(opts.runs);
  const configs: RagenConfig[] = [];
  const problems: string[] = [];
  for (const spec of specs) {
    try {
      const flags = [
        ...(opts.steps ? [{ flag: '--steps', key: 'trainer.steps', value: opts.steps }] : []),
        { flag: '--runs-dir', key: 'logging.runDir' },
      ];
      checkFlagOverrides(flags, [...overrides, ...(spec.overrides ?? [])]);
      const config = loadConfig({
        config: spec.presets,
        overrides: [
          ...overrides,
          ...(opts.steps ? [`trainer.steps=${opts.steps}`] : []),
          ...(spec.overrides ?? []),
          `logging.runDir=${join(opts.runsDir, `${spec.name.replace(/[^\w.+-]+/g, '-')}__${stamp}`)}`,
        ],
      });
      checkRunConfig(config);
      configs.push(config);
    } catch (err) {
      if (!(err instanceof RagenError)) throw err;
      problems.push(`run \`${spec.name}\`: ${err.message}`);
    }
  }
  if (problems.length) {
    const modelHint = problems.some((p) => p.includes('`model.path`'))
      ? '\nThe presets train the shipped base models under models/; build them with `ragen sft` (docs/models.md) or pass model.path=<dir>.'
      : '';
    const gatewayHint = problems.some((p) => p.includes('guess-number-tiny'))
      ? '\nThe guessnumber presets start from models/guess-number-tiny: make it with `npx tsx examples/agents/guess-number-ai-sdk/sft.ts` (docs/agents.md).'
      : '';
    throw new ConfigError(`bench learning cannot start:\n${problems.join('\n')}${modelHint}${gatewayHint}`);
  }
  const report: LearningReport = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${os.cpus()[0]?.model ?? 'unknown'} x ${os.cpus().length}`,
    loadAverage: os.loadavg()[0]!,
    overrides: [...overrides],
    runs: [],
  };
  for (const [i, spec] of specs.entries()) {
    const config = configs[i]!;
    console.error(`[${i + 1}/${specs.length}] ${spec.name}: ${config.trainer.steps} steps`);
    const t0 = performance.now();
    const r = await train({ config });
    report.runs.push(
      summarize(spec, config, r.runDir, r.lastStep, r.earlyStop?.reason ?? null, (performance.now() - t0) / 1000),
    );
    const out = opts.out ?? join(opts.runsDir, `report-${stamp}.json`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`); // after every run, so a long benchmark keeps what it has
    console.error(`report: ${out}`);
  }
  const gatewayRun = specs.findIndex((s) =>
    FRAMEWORK_RUNS.some((g) => g.name === s.name && !g.name.includes('-builtin-')),
  );
  if (gatewayRun >= 0) {
    console.error('gateway overhead per call...');
    report.gatewayOverhead = await measureGatewayOverhead(configs[gatewayRun]!.model.path);
    writeFileSync(opts.out ?? join(opts.runsDir, `report-${stamp}.json`), `${JSON.stringify(report, null, 2)}\n`);
  }
  return report;
}

function summarize(
  spec: LearningRunSpec,
  config: RagenConfig,
  runDir: string,
  stepsDone: number,
  earlyStop: string | null,
  seconds: number,
): LearningRunResult {
  const records = readMetricsFile(join(runDir, 'metrics.jsonl'));
  const perTag = (r: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(r)
        .filter(([k]) => /^val\/[^/]+\/success$/.test(k))
        .map(([k, v]) => [k.split('/')[1]!, v]),
    );
  const vals = records.filter((r) => r['val/success'] !== undefined);
  const trained = records.filter((r) => r.step > 0);
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
  const f = config.algo.filter;
  const episodesPerStep = config.env.train.reduce((a, e) => a + e.groups * e.groupSize, 0);
  return {
    name: spec.name,
    presets: spec.presets,
    model: config.model.path,
    algo: config.algo.advEstimator,
    filter:
      f.strategy === 'top_p' && f.value >= 1 && f.includeZero
        ? 'none'
        : `${f.strategy} ${f.value}${f.strategy === 'top_p' ? ` (${f.topPMode})` : ''}`,
    runDir,
    stepsPlanned: config.trainer.steps,
    stepsDone,
    earlyStop,
    seconds,
    meanStepSeconds: mean(trained.map((r) => r['timing_s/step']!).filter((x) => x !== undefined)),
    meanKeptRatio: mean(trained.map((r) => r['rollout/filter_kept_ratio']!).filter((x) => x !== undefined)),
    episodesPerS: mean(trained.map((r) => episodesPerStep / r['timing_s/gen']!).filter((x) => Number.isFinite(x))),
    before: vals[0]?.step === 0 ? perTag(vals[0]) : {},
    after: vals.length && vals[vals.length - 1]!.step > 0 ? perTag(vals[vals.length - 1]!) : {},
    valCurve: vals.map((r) => ({ step: r.step, success: r['val/success']! })),
    steps: trained.map((r) => ({
      step: r.step,
      keptRatio: r['rollout/filter_kept_ratio'] ?? Number.NaN,
      seconds: r['timing_s/step'] ?? Number.NaN,
      trainSuccess: r['train/success'] ?? Number.NaN,
    })),
  };
}

const pct = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '-' : `${(100 * x).toFixed(1)}%`);

/** The markdown section for docs/benchmarks.md. */
export function learningMarkdown(r: LearningReport): string {
  const rows = r.runs.flatMap((run) =>
    Object.keys({ ...run.before, ...run.after }).map((tag) => {
      const b = run.before[tag];
      const a = run.after[tag];
      const change =
        b !== undefined && a !== undefined ? `${a - b >= 0 ? '+' : ''}${(100 * (a - b)).toFixed(1)} pts` : '-';
      return `| ${run.name} | ${tag} | ${run.algo} | ${run.filter} | ${run.stepsDone}/${run.stepsPlanned} | ${pct(b)} | ${pct(a)} | ${change} | ${run.meanKeptRatio.toFixed(2)} | ${run.meanStepSeconds.toFixed(1)} |`;
    }),
  );
  const curves = r.runs.map(
    (run) =>
      `- ${run.name}: ${run.valCurve.map((p) => `${p.step}: ${pct(p.success)}`).join(', ')}${run.earlyStop ? ` (early stop: ${run.earlyStop})` : ''}`,
  );
  return [
    '## Learning: `ragen bench learning`',
    '',
    `Date ${r.date.slice(0, 10)}. ${r.cpu}, Node ${r.node}, 1-minute load average ${r.loadAverage.toFixed(2)} at the start.${r.overrides.length ? ` Overrides: \`${r.overrides.join(' ')}\`.` : ''}`,
    '',
    '| run | val env | algo | filter | steps | val success before | after | change | mean kept ratio | s/step |',
    '|---|---|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    'Validation success (mean over val envs) by step:',
    '',
    ...curves,
    ...gatewayMarkdown(r.runs, r.gatewayOverhead),
  ].join('\n');
}
