// The stages of `ragen bench gpu --check` that measure issue 24's table (rollout on RAGEN's shape with per-turn
// times, a whole `ragen train` step by phase with peak memory, 7B with LoRA), the list of all stages in the table's
// order, and the default selection that fits a 15-minute GPU window. Without CUDA they run on tiny shapes (CI).
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { readMetricsFile, type MetricRecord } from '../../metrics/index.js';
import { UsageError } from '../../util/index.js';
import {
  bench,
  decode,
  fastModel,
  fsdp,
  gb,
  lastLine,
  modelShape,
  train,
  trainOk,
  trainOverrides,
  versions,
  vision,
  type BenchReport,
  type CheckStage,
  type StageContext,
} from './bench-gpu-check-stages.js';

const GIB = 2 ** 30;

/**
 * Each role's largest peak from the worker's CUDA lines (`policy step: peak GPU memory 12.34 GiB since ...`), in bytes.
 */
export function workerPeaks(lines: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of lines) {
    const m = /(\w+) step: peak GPU memory ([\d.]+) GiB/.exec(l);
    if (m) out[m[1]!] = Math.max(out[m[1]!] ?? 0, Number(m[2]) * GIB);
  }
  return out;
}

/** A `rollout turn k/n: T tokens in S s` progress line of the Python bench, or null. */
export function turnLine(line: string): { turn: number; tokens: number; seconds: number } | null {
  const m = /rollout turn (\d+)\/\d+: (\d+) tokens in ([\d.]+) s/.exec(line);
  return m ? { turn: Number(m[1]), tokens: Number(m[2]), seconds: Number(m[3]) } : null;
}

const timingKeys = (r: MetricRecord) =>
  Object.entries(r).filter(([k, v]) => k.startsWith('timing_s/') && typeof v === 'number') as [string, number][];

/** `step 1: 95.3 s (gen 63.1, update_actor 11.0, ...)`: the step's time and its phases, largest first. */
export function phaseSummary(r: MetricRecord): string {
  const t = timingKeys(r);
  const total = t.find(([k]) => k === 'timing_s/step')?.[1];
  const parts = t
    .filter(([k, v]) => k !== 'timing_s/step' && v >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k.slice(9)} ${v.toFixed(1)}`);
  return `${total === undefined ? 'no timing_s/step' : `${total.toFixed(1)} s`} (${parts.join(', ')})`;
}

const nonFinite = (r: MetricRecord | undefined) =>
  r
    ? Object.entries(r)
        .filter(([, v]) => typeof v === 'number' && !Number.isFinite(v))
        .map(([k]) => k)
    : ['(no step 1)'];

/** One `ragen train` step, keeping the worker's peak-memory lines; returns step 1's metrics and the peaks. */
async function oneStep(
  ctx: StageContext,
  args: string[],
): Promise<{ step: MetricRecord | undefined; peaks: Record<string, number>; dir: string }> {
  const dir = join(ctx.work, 'run');
  const lines: string[] = [];
  await trainOk(ctx, [...args, 'trainer.steps=1', `logging.runDir=${dir}`], (l) => lines.push(l));
  return {
    step: readMetricsFile(join(dir, 'metrics.jsonl')).find((r) => r.step === 1),
    peaks: workerPeaks(lines),
    dir,
  };
}

const peakText = (peaks: Record<string, number>) =>
  Object.keys(peaks).length
    ? `peak GPU memory ${Object.entries(peaks)
        .map(([role, b]) => `${gb(b)} (${role} step)`)
        .join(', ')}`
    : 'no peak-memory lines from the worker (CPU)';

const rollout: CheckStage = {
  name: 'rollout',
  title: "rollout tokens/s on RAGEN's shape (128 x 5 turns x 400 tokens), 0.5B, time per turn",
  limitSeconds: { cuda: 105, cpu: 120 },
  async run(ctx) {
    const args =
      ctx.mode === 'cuda'
        ? ['--shape', 'qwen2.5-0.5b', '--run-shape', 'ragen']
        : ['--shape', 'tiny', '--device', 'cpu', '--run-shape', 'smoke', '--turns', '3'];
    const turns: { turn: number; tokens: number; seconds: number }[] = [];
    ctx.partial.turns = turns; // kept if the stage is killed: the turn times are the point
    const r = await ctx.ragen(['bench', 'gpu', ...args, '--no-transformers', '--json'], (l) => {
      const t = turnLine(l);
      if (t) turns.push(t);
    });
    if (r.code !== 0)
      throw new Error(`ragen bench gpu ${args.join(' ')} exited with code ${r.code}: ${lastLine(r.stderrTail)}`);
    const rep = (JSON.parse(r.stdout) as BenchReport[])[0]!;
    const ro = rep.rollout;
    const mfu = rep.update.mfu === null ? '' : `, MFU ${(100 * rep.update.mfu).toFixed(1)}%`;
    const summary =
      `${args[1]}: ${ro.tokens.toLocaleString('en-US')} tokens in ${ro.seconds.toFixed(1)} s (${Math.round(ro.tokensPerSecond).toLocaleString('en-US')} tokens/s); ` +
      `turn times ${ro.turns.map((t) => t.seconds.toFixed(1)).join(' -> ')} s; engine step ${rep.step.totalSeconds.toFixed(1)} s (old log-probs ${rep.step.oldLogprobsSeconds.toFixed(1)}, ` +
      `reference ${rep.step.refLogprobsSeconds.toFixed(1)}, update ${rep.step.updateSeconds.toFixed(1)}${mfu}), peak ${gb(rep.step.peakMemoryBytes)}`;
    return { status: 'passed', summary, details: { report: rep } };
  },
};

const step: CheckStage = {
  name: 'step',
  title:
    'a whole `ragen train` step (sokoban-ppo-qwen, random 0.5B, full fine-tune, critic and reference) by phase, peak memory',
  limitSeconds: { cuda: 150, cpu: 300 },
  async run(ctx) {
    const model = join(ctx.work, 'model');
    await fastModel(ctx, modelShape(ctx.mode), model);
    // On a GPU the preset's own rollout (8 groups x 16, 5 turns to the token limit: random weights rarely stop early).
    const shape =
      ctx.mode === 'cuda'
        ? [
            'env.val=[{tag: CoordSokoban, groups: 2}]',
            'trainer.valBeforeTrain=false',
            'trainer.valEvery=0',
            'trainer.collapse.every=0',
          ]
        : trainOverrides(ctx.mode);
    const overrides = [...shape, 'algo.kl.useKlLoss=true', 'trainer.checkpointEvery=0'];
    const { step: s, peaks } = await oneStep(ctx, [
      '--config',
      'sokoban-ppo-qwen',
      `model.path=${model}`,
      ...overrides,
    ]);
    const bad = nonFinite(s);
    const summary = bad.length
      ? `non-finite metrics: ${bad.join(', ')}`
      : `${modelShape(ctx.mode)}: step 1 ${phaseSummary(s!)}; ${peakText(peaks)}`;
    return {
      status: bad.length ? 'failed' : 'passed',
      summary,
      details: { model: modelShape(ctx.mode), overrides, peakGpuMemoryByRole: peaks, step1Metrics: s },
    };
  },
};

const lora: CheckStage = {
  name: 'lora',
  title:
    '`ragen train` with LoRA (rank 8, shared critic, reference = adapters off), 7B on a GPU: 1 step, time and memory',
  limitSeconds: { cuda: 155, cpu: 300 },
  async run(ctx) {
    const shape = ctx.mode === 'cuda' ? 'qwen2.5-7b' : 'qwen2.5-tiny';
    const model = join(ctx.work, 'model');
    await fastModel(ctx, shape, model);
    // The checkpoint (its adapter file) on the CPU only: a 7B checkpoint writes 30 GB of float32 base weights.
    const overrides = [
      ...trainOverrides(ctx.mode),
      'model.lora.rank=8',
      'model.lora.alpha=16',
      'model.critic.mode=shared',
      'algo.kl.useKlLoss=true',
      `trainer.checkpointEvery=${ctx.mode === 'cuda' ? 0 : 1}`,
    ];
    const {
      step: s,
      peaks,
      dir,
    } = await oneStep(ctx, ['--config', 'sokoban-ppo-qwen', `model.path=${model}`, ...overrides]);
    const ckpt = join(dir, 'checkpoints', 'step-1');
    const files = existsSync(ckpt) ? listFiles(ckpt).map((f) => relative(ckpt, f)) : [];
    const adapter = files.some((f) => f.endsWith('adapter_model.safetensors'));
    const bad = nonFinite(s);
    const ok = bad.length === 0 && (ctx.mode === 'cuda' || adapter);
    const summary = ok
      ? `${shape}: step 1 ${phaseSummary(s!)}; ${peakText(peaks)}${ctx.mode === 'cuda' ? '' : `; checkpoint with its adapter (${files.length} files)`}`
      : `${bad.length ? `non-finite metrics: ${bad.join(', ')}` : ''}${ctx.mode === 'cpu' && !adapter ? '; no adapter_model.safetensors in checkpoints/step-1' : ''}`;
    return {
      status: ok ? 'passed' : 'failed',
      summary,
      details: { model: shape, overrides, peakGpuMemoryByRole: peaks, checkpointFiles: files, step1Metrics: s },
    };
  },
};

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** Every stage, in the order they run: versions, then issue 24's table in its order, then the earlier checks. */
export const CHECK_STAGES: CheckStage[] = [versions, bench, rollout, step, lora, decode, train, fsdp, vision];

/**
 * What runs without --stages: all but fsdp (two CPU ranks: it needs no GPU, so it does not spend the GPU window) and
 * vision (its 60 s would take the default stages past the 13 minutes a 15-minute window leaves: run it by name).
 */
export const DEFAULT_STAGES: CheckStage[] = CHECK_STAGES.filter((s) => s !== fsdp && s !== vision);

/** `--stages`: `default`, `all`, or comma-separated names (versions always runs first: it decides GPU or CPU sizes). */
export function selectStages(list: string): CheckStage[] {
  if (list === 'default') return DEFAULT_STAGES;
  if (list === 'all') return CHECK_STAGES;
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const known = CHECK_STAGES.map((s) => s.name);
  const bad = names.filter((n) => !known.includes(n));
  if (bad.length || names.length === 0)
    throw new UsageError(
      `Bad --stages \`${list}\`: give default, all, or some of ${known.join(', ')} (comma-separated).`,
    );
  return CHECK_STAGES.filter((s) => s === versions || names.includes(s.name));
}
