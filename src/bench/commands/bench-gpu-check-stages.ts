// The checks of `ragen bench gpu --check` (bench-gpu-check.ts runs them): versions, CUDA-graph decode = eager, FSDP2
// on CPU ranks, Qwen2.5-VL with images through the worker, `ragen train` with checkpoint + resume = uninterrupted, and
// the helpers of bench-gpu-check-table.ts.
// Sizes: the real Qwen2.5 shapes on a GPU; without CUDA the tiny shape and tiny rollouts (CI's smoke run).
import { join } from 'node:path';
import { readMetricsFile, type MetricRecord } from '../../metrics/index.js';
export type CheckMode = 'cuda' | 'cpu';
export type StageStatus = 'pending' | 'passed' | 'failed' | 'skipped' | 'timed out';

/** What a stage may do: run child processes that die with the stage's time limit, report progress, keep partials. */
export interface StageContext {
  mode: CheckMode;
  python: string;
  /** The repository (or installed package) root: bin/ragen.js, python/, models/. */
  root: string;
  /** A scratch folder for this stage (model directories, runs): outside --out, removed at the end. */
  work: string;
  log(line: string): void;
  /**
   * Run a child (its stderr forwarded line by line as progress, and to `onLine`); resolves with its exit code and
   * stdout.
   */
  run(
    cmd: string,
    args: string[],
    env?: Record<string, string>,
    onLine?: (line: string) => void,
  ): Promise<{ code: number | null; stdout: string; stderrTail: string }>;
  /** `node bin/ragen.js <args>`. */
  ragen(
    args: string[],
    onLine?: (line: string) => void,
  ): Promise<{ code: number | null; stdout: string; stderrTail: string }>;
  /** Partial details, kept when the stage times out. */
  partial: Record<string, unknown>;
}

export interface StageOutcome {
  status: Exclude<StageStatus, 'pending' | 'timed out'>;
  summary: string;
  details: Record<string, unknown>;
}

export interface CheckStage {
  name: string;
  title: string;
  /** Seconds per mode. The default stages' GPU limits add up to 735 s, so the check fits a 15-minute GPU window with
   *  its start-up, also as two commands (docs/gpu.md); the CPU ones are ceilings for a loaded CI machine (the tiny shapes keep Qwen's 152k vocabulary). */
  limitSeconds: Record<CheckMode, number>;
  run(ctx: StageContext): Promise<StageOutcome>;
}

export const lastLine = (s: string) => s.trim().split('\n').pop() ?? '';

/** `python -m ragen_torch.check <name>`'s JSON. */
export async function pythonCheck(ctx: StageContext, name: string): Promise<Record<string, unknown>> {
  const r = await ctx.run(ctx.python, ['-m', 'ragen_torch.check', name]);
  if (r.code !== 0)
    throw new Error(`python -m ragen_torch.check ${name} exited with code ${r.code}: ${lastLine(r.stderrTail)}`);
  return JSON.parse(lastLine(r.stdout)) as Record<string, unknown>;
}

/**
 * A ready model directory (config, seeded random weights, Qwen tokenizer, append-only template): `ragen model init`.
 */
async function modelInit(ctx: StageContext, shape: string, dir: string): Promise<void> {
  const r = await ctx.ragen(['model', 'init', '--shape', shape, '--out', dir]);
  if (r.code !== 0)
    throw new Error(`ragen model init --shape ${shape} exited with code ${r.code}: ${lastLine(r.stderrTail)}`);
}

/** A model directory of `shape` for `ragen train`: the family's tiny directory (tokenizer, template) from `ragen model
 *  init`, its config and weights replaced by `python -m ragen_torch.random_checkpoint` (drawn on the GPU when there is
 *  one: seconds for 7B, where Node's writer takes minutes; on the CPU the tiny shape's own, so CI runs this path). */
export async function fastModel(ctx: StageContext, shape: string, dir: string): Promise<void> {
  await modelInit(ctx, 'qwen2.5-tiny', dir);
  const r = await ctx.run(ctx.python, ['-m', 'ragen_torch.random_checkpoint', shape, dir]);
  if (r.code !== 0)
    throw new Error(
      `python -m ragen_torch.random_checkpoint ${shape} exited with code ${r.code}: ${lastLine(r.stderrTail)}`,
    );
}

/** The fields of `ragen bench gpu --json`'s report (GpuBenchReport in bench-gpu.ts) that the summary shows. */
export interface BenchReport {
  rollout: { tokensPerSecond: number; tokens: number; seconds: number; turns: { tokens: number; seconds: number }[] };
  update: { mfu: number | null; updateTflops: number };
  step: {
    totalSeconds: number;
    peakMemoryBytes: number;
    oldLogprobsSeconds: number;
    refLogprobsSeconds: number;
    updateSeconds: number;
  };
  transformers: { available: false } | { available: true; rolloutSpeedup: number; turns: number };
}

export const gb = (b: unknown) => (typeof b === 'number' ? `${(b / 2 ** 30).toFixed(1)} GiB` : '-');

export const versions: CheckStage = {
  name: 'versions',
  title: 'versions and device',
  limitSeconds: { cuda: 20, cpu: 60 },
  async run(ctx) {
    const v = await pythonCheck(ctx, 'versions');
    const gpus = v.gpus as { name: string; memoryBytes: number }[];
    const device = gpus.length ? `${gpus.length} x ${gpus[0]!.name} (${gb(gpus[0]!.memoryBytes)})` : 'no CUDA GPU';
    return {
      status: 'passed',
      summary: `torch ${v.torch}, CUDA ${v.cuda ?? '-'}, transformers ${v.transformers ?? '-'}, peft ${v.peft ?? '-'}; ${device}`,
      details: v,
    };
  },
};

export const decode: CheckStage = {
  name: 'decode',
  title: 'CUDA-graph decode = eager',
  limitSeconds: { cuda: 25, cpu: 60 },
  async run(ctx) {
    const d = await pythonCheck(ctx, 'decode');
    const cases = d.cases as { precision: string; case: string; tokensIdentical: boolean; logprobMaxDiff: number }[];
    const same = cases.filter((c) => c.tokensIdentical).length;
    const worst = [...new Set(cases.map((c) => c.precision))].map(
      (p) =>
        `${p} ${Math.max(...cases.filter((c) => c.precision === p).map((c) => c.logprobMaxDiff)).toExponential(1)}`,
    );
    const failed = d.captureFailed ? 'CUDA graph capture FAILED (the static step ran instead); ' : '';
    const summary = `${failed}${d.mode} vs eager: tokens identical in ${same} of ${cases.length} cases; log-prob max diff ${worst.join(', ')}${d.note ? ` (${d.note})` : ''}`;
    return { status: d.passed ? 'passed' : 'failed', summary, details: d };
  },
};

export const fsdp: CheckStage = {
  name: 'fsdp',
  title: 'FSDP2, 2 CPU ranks (gloo) = 1 rank',
  limitSeconds: { cuda: 50, cpu: 90 },
  async run(ctx) {
    const f = await pythonCheck(ctx, 'fsdp');
    if (f.skipped) return { status: 'skipped', summary: `skipped: ${f.note}`, details: f };
    const e = (x: unknown) => (x as number).toExponential(1);
    const summary = `outputs ${e(f.outputsMaxDiff)}, gradients ${e(f.gradientsMaxRelDiff)} (relative), AdamW step ${e(f.stepMaxDiff)}, gathered checkpoint ${e(f.checkpointMaxDiff)}`;
    return { status: f.passed ? 'passed' : 'failed', summary, details: f };
  },
};

export const vision: CheckStage = {
  name: 'vision',
  title: 'Qwen2.5-VL with images: greedy decode = teacher-forced pass',
  limitSeconds: { cuda: 60, cpu: 120 },
  async run(ctx) {
    const v = await pythonCheck(ctx, 'vision');
    const diff = (v.logprobMaxDiff as number).toExponential(1);
    const speed = Math.round(v.tokensPerSecond as number).toLocaleString('en-US');
    const summary = `${v.shape} (${v.device}): ${v.rows} rows with ${v.images} images (${v.imageTokens} image tokens), greedy log-probs vs a teacher-forced pass max diff ${diff} over ${v.tokensCompared} tokens (tolerance ${v.tolerance}); ${speed} tokens/s, forward ${(v.forwardSeconds as number).toFixed(2)} s, load ${(v.loadSeconds as number).toFixed(1)} s`;
    return { status: v.passed ? 'passed' : 'failed', summary, details: v };
  },
};

export const bench: CheckStage = {
  name: 'bench',
  title: 'update MFU and rollout tokens/s, 0.5B and 1.5B, quick shape, beside transformers',
  limitSeconds: { cuda: 160, cpu: 180 },
  async run(ctx) {
    const runs =
      ctx.mode === 'cuda'
        ? ['qwen2.5-0.5b', 'qwen2.5-1.5b'].map((s) => ['--shape', s, '--run-shape', 'quick'])
        : [['--shape', 'tiny', '--device', 'cpu', '--run-shape', 'smoke']];
    const reports: BenchReport[] = [];
    ctx.partial.reports = reports;
    const parts: string[] = [];
    for (const args of runs) {
      const r = await ctx.ragen(['bench', 'gpu', ...args, '--json']);
      if (r.code !== 0)
        throw new Error(`ragen bench gpu ${args.join(' ')} exited with code ${r.code}: ${lastLine(r.stderrTail)}`);
      const rep = (JSON.parse(r.stdout) as BenchReport[])[0]!;
      reports.push(rep);
      const t = rep.transformers;
      const ratio = t.available
        ? `${t.rolloutSpeedup.toFixed(2)}x transformers (${t.turns} turn${t.turns > 1 ? 's' : ''})`
        : 'no transformers';
      const mfu = rep.update.mfu === null ? '' : `, MFU ${(100 * rep.update.mfu).toFixed(1)}%`;
      parts.push(
        `${args[1]}: ${Math.round(rep.rollout.tokensPerSecond).toLocaleString('en-US')} tokens/s, ${ratio}${mfu}, step ${rep.step.totalSeconds.toFixed(1)} s, peak ${gb(rep.step.peakMemoryBytes)}`,
      );
    }
    return { status: 'passed', summary: parts.join('; '), details: { reports } };
  },
};

/** The rollout of the train stages: small enough for the time limit, the preset's algorithm and every other key. */
export function trainOverrides(mode: CheckMode): string[] {
  const shape =
    mode === 'cuda'
      ? [
          'env.train=[{tag: CoordSokoban, groups: 4, groupSize: 4}]',
          'agent.maxTurns=2',
          'agent.maxNewTokens=64',
          'trainer.miniBatchSize=16',
          'trainer.microBatchSize=8',
        ]
      : [
          'model.torch.device=cpu',
          'env.train=[{tag: CoordSokoban, groups: 1, groupSize: 2}]',
          'agent.maxTurns=2',
          'agent.maxNewTokens=4',
          'trainer.miniBatchSize=2',
          'trainer.microBatchSize=2',
        ];
  return [
    ...shape,
    'env.val=[{tag: CoordSokoban, groups: 2}]',
    'trainer.valBeforeTrain=false',
    'trainer.valEvery=0',
    'trainer.collapse.every=0',
  ];
}

const wallClock = (k: string) => k === 'time' || k.startsWith('timing_s/') || k.startsWith('perf/');

/** The largest difference between an uninterrupted and a resumed run's metrics at `step`, wall-clock keys aside. */
export function compareStep(
  uninterrupted: MetricRecord[],
  resumed: MetricRecord[],
  step: number,
): { equal: boolean; keys: number; maxAbsDiff: number; differing: string[] } {
  const [ra, rb] = [uninterrupted.find((r) => r.step === step), resumed.find((r) => r.step === step)];
  if (!ra || !rb)
    throw new Error(`step ${step} is missing from the ${ra ? 'resumed' : 'uninterrupted'} run's metrics.jsonl`);
  const keys = [...new Set([...Object.keys(ra), ...Object.keys(rb)])].filter((k) => !wallClock(k)).sort();
  let maxAbsDiff = 0;
  const differing: string[] = [];
  for (const k of keys) {
    const [x, y] = [ra[k], rb[k]];
    if (Object.is(x, y)) continue;
    differing.push(k);
    maxAbsDiff = typeof x === 'number' && typeof y === 'number' ? Math.max(maxAbsDiff, Math.abs(x - y)) : Infinity;
  }
  return { equal: differing.length === 0, keys: keys.length, maxAbsDiff, differing };
}

export async function trainOk(ctx: StageContext, args: string[], onLine?: (line: string) => void): Promise<void> {
  const r = await ctx.ragen(['train', ...args], onLine);
  if (r.code !== 0)
    throw new Error(
      `ragen train ${args[0] === '--resume' ? '--resume' : ''} exited with code ${r.code}: ${lastLine(r.stderrTail)}`,
    );
}

export const modelShape = (mode: CheckMode) => (mode === 'cuda' ? 'qwen2.5-0.5b' : 'qwen2.5-tiny');

/** Steps of the train stage: stopped after all but the last, resumed for it, against an uninterrupted run. On the CPU
 *  one step + one resumed (each step of the tiny shape's 152k vocabulary costs ~13 s there); on a GPU 2 + 1. */
export const trainSteps = (mode: CheckMode) => (mode === 'cuda' ? 3 : 2);

export const train: CheckStage = {
  name: 'train',
  title: '`ragen train` stopped + `--resume` = uninterrupted',
  limitSeconds: { cuda: 120, cpu: 600 },
  async run(ctx) {
    const model = join(ctx.work, 'model');
    await fastModel(ctx, modelShape(ctx.mode), model);
    const n = trainSteps(ctx.mode);
    const base = [
      '--config',
      'sokoban-ppo-qwen',
      `model.path=${model}`,
      ...trainOverrides(ctx.mode),
      `trainer.steps=${n}`,
    ];
    const [split, full] = [join(ctx.work, 'resumed'), join(ctx.work, 'uninterrupted')];
    await trainOk(ctx, [...base, `logging.runDir=${split}`, '--stop-after', String(n - 1)]);
    ctx.partial.stoppedAfter = n - 1;
    await trainOk(ctx, ['--resume', split]);
    ctx.partial.resumed = true;
    await trainOk(ctx, [...base, `logging.runDir=${full}`, 'trainer.checkpointEvery=0']);
    const [mr, mf] = [readMetricsFile(join(split, 'metrics.jsonl')), readMetricsFile(join(full, 'metrics.jsonl'))];
    const c = compareStep(mf, mr, n);
    const details = {
      model: modelShape(ctx.mode),
      overrides: trainOverrides(ctx.mode),
      steps: mr.map((r) => r.step),
      compared: c,
      lastStepMetrics: mr.find((r) => r.step === n),
    };
    const summary = c.equal
      ? `${modelShape(ctx.mode)}: step-${n} metrics of the run resumed after step ${n - 1} equal the uninterrupted run's (${c.keys} keys, wall-clock aside)`
      : `${modelShape(ctx.mode)}: step-${n} metrics of the resumed run differ in ${c.differing.length} of ${c.keys} keys (max |diff| ${c.maxAbsDiff.toExponential(2)}: ${c.differing.slice(0, 4).join(', ')})`;
    return { status: c.equal ? 'passed' : 'failed', summary, details };
  },
};
