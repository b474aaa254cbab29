// `ragen bench gpu`: the torch engine's speed on a model shape (python -m ragen_torch.bench, one run per shape):
// rollout tokens/s beside transformers' generate, the update's MFU, one StarPO step's engine time, logits parity.
// `--check` runs the one GPU check instead (bench-gpu-check.ts).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { findTorchPython, TORCH_MISSING, workerPackageDir } from '../../engine/index.js';
import { parsePositive, parsePositiveInt, parseSeed, UsageError } from '../../util/index.js';
import { runGpuCheck } from './bench-gpu-check.js';
import { CHECK_STAGES, DEFAULT_STAGES, selectStages } from './bench-gpu-check-table.js';

/** Model shapes with random weights (python/ragen_torch/random_checkpoint.py). */
export const GPU_BENCH_SHAPES = ['tiny', 'qwen2.5-0.5b', 'qwen2.5-1.5b'] as const;

/** Named rollout shapes (`--run-shape`); explicit flags override their fields. `ragen` is RAGEN's rollout
 *  (128 trajectories x 5 turns x 400 new tokens), `quick` issue 24's batch-128 shape (about a minute per model on an
 *  H100), `smoke` a CPU. */
export const RUN_SHAPES = {
  smoke: { trajectories: 3, turns: 2, newTokens: 6, promptTokens: 5, obsTokens: 3, transformersTurns: 2 },
  quick: { trajectories: 128, turns: 2, newTokens: 200, promptTokens: 200, obsTokens: 50, transformersTurns: 1 },
  ragen: { trajectories: 128, turns: 5, newTokens: 400, promptTokens: 200, obsTokens: 50, transformersTurns: 1 },
} as const;
export type RunShape = keyof typeof RUN_SHAPES;

/** One shape's report, as python -m ragen_torch.bench prints it. */
export interface GpuBenchReport {
  device: string;
  deviceName: string;
  torch: string;
  cuda: string | null;
  precision: string;
  /** The decode step used: eager, static or graph (RAGEN_TORCH_DECODE). */
  decode: string;
  /**
   * The dtype of the weights the rollout sampled from: bfloat16 (the rollout copy; CUDA with bf16) or float32 (the
   * policy).
   */
  rolloutModel: string;
  model: string;
  parameters: number;
  shape: {
    trajectories: number;
    turns: number;
    newTokens: number;
    promptTokens: number;
    obsTokens: number;
    microBatch: number;
  };
  bf16PeakTflops: number | null;
  rollout: { tokens: number; seconds: number; tokensPerSecond: number; turns: { tokens: number; seconds: number }[] };
  /** 6 x parameters x trajectory tokens over the update's time; MFU against the bf16 peak when it is known. */
  update: {
    updateTokens: number;
    updateSeconds: number;
    updateFlops: number;
    updateTflops: number;
    mfu: number | null;
  };
  step: {
    rolloutSeconds: number;
    oldLogprobsSeconds: number;
    refLogprobsSeconds: number;
    updateSeconds: number;
    totalSeconds: number;
    peakMemoryBytes: number;
    rolloutPeakMemoryBytes: number;
  };
  transformers:
    | { available: false; note: string }
    | {
        available: true;
        version: string;
        /** Turns transformers ran: the first `turns` of ours (--transformers-turns). */
        turns: number;
        rolloutTokens: number;
        rolloutSeconds: number;
        tokensPerSecond: number;
        /** Our tokens/s over the same first `turns` turns. */
        oursTokensPerSecondSameTurns: number;
        /** Our rollout tokens/s over transformers', both over the first `turns` turns. */
        rolloutSpeedup: number;
        logits: Record<string, { maxAbsDiff: number; maxAbsLogit: number }>;
      };
}

/** The resolved options of one bench run (a run shape's fields, overridden by explicit flags). */
export interface GpuBenchOpts {
  model?: string;
  device: string;
  precision: string;
  trajectories: number;
  turns: number;
  transformersTurns: number;
  newTokens: number;
  promptTokens: number;
  obsTokens: number;
  microBatch: number;
  tokenBudget: number;
  peakTflops?: number;
  transformers: boolean;
  seed: number;
}

interface Opts {
  shape: string;
  runShape: string;
  model?: string;
  device: string;
  precision: string;
  trajectories?: number;
  turns?: number;
  transformersTurns?: number;
  newTokens?: number;
  promptTokens?: number;
  obsTokens?: number;
  microBatch: number;
  tokenBudget: number;
  peakTflops?: number;
  transformers: boolean;
  seed: number;
  json?: boolean;
  check?: boolean;
  out: string;
  stages?: string;
}

/** Resolve --run-shape and the flags that override its fields. */
export function resolveRunShape(o: Opts): GpuBenchOpts {
  if (!(o.runShape in RUN_SHAPES))
    throw new UsageError(`Bad --run-shape \`${o.runShape}\`: give one of ${Object.keys(RUN_SHAPES).join(', ')}.`);
  const base = RUN_SHAPES[o.runShape as RunShape];
  const turns = o.turns ?? base.turns;
  const transformersTurns = o.transformersTurns ?? Math.min(base.transformersTurns, turns);
  if (transformersTurns > turns)
    throw new UsageError(
      `--transformers-turns ${transformersTurns} is more than --turns ${turns}: give 1 to ${turns}.`,
    );
  return {
    ...(o.model ? { model: o.model } : {}),
    device: o.device,
    precision: o.precision,
    turns,
    transformersTurns,
    trajectories: o.trajectories ?? base.trajectories,
    newTokens: o.newTokens ?? base.newTokens,
    promptTokens: o.promptTokens ?? base.promptTokens,
    obsTokens: o.obsTokens ?? base.obsTokens,
    microBatch: o.microBatch,
    tokenBudget: o.tokenBudget,
    ...(o.peakTflops ? { peakTflops: o.peakTflops } : {}),
    transformers: o.transformers,
    seed: o.seed,
  };
}

/** The `python -m ragen_torch.bench` arguments of one shape (or --model). */
export function benchPythonArgs(shape: string, o: GpuBenchOpts): string[] {
  const args = [
    '-m',
    'ragen_torch.bench',
    '--shape',
    shape,
    '--device',
    o.device,
    '--precision',
    o.precision,
    '--trajectories',
    String(o.trajectories),
    '--turns',
    String(o.turns),
  ];
  args.push('--transformers-turns', String(o.transformersTurns));
  args.push(
    '--new-tokens',
    String(o.newTokens),
    '--prompt-tokens',
    String(o.promptTokens),
    '--obs-tokens',
    String(o.obsTokens),
    '--micro-batch',
    String(o.microBatch),
  );
  args.push('--token-budget', String(o.tokenBudget), '--seed', String(o.seed));
  if (o.model) args.push('--model', o.model);
  if (o.peakTflops) args.push('--peak-tflops', String(o.peakTflops));
  if (!o.transformers) args.push('--no-transformers');
  return args;
}

/** Run the Python bench for one shape (or --model); its progress lines (one per turn) go to stderr as they come. */
async function runOne(python: string, shape: string, o: GpuBenchOpts): Promise<GpuBenchReport> {
  const args = benchPythonArgs(shape, o);
  const env = { ...process.env, PYTHONPATH: [workerPackageDir(), process.env.PYTHONPATH].filter(Boolean).join(':') };
  const child = spawn(python, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const err: string[] = [];
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    const s = d.toString();
    err.push(s);
    process.stderr.write(s);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const tail = err.join('').trim().split('\n').slice(-15).join('\n');
  if (code === 2)
    throw new UsageError(
      `ragen bench gpu: ${
        tail
          .split('\n')
          .filter((l) => l.startsWith('error: '))
          .pop()
          ?.slice(7) ?? tail
      }`,
    );
  if (code !== 0)
    throw new Error(`ragen bench gpu: the Python bench for ${o.model ?? shape} exited with code ${code}:\n${tail}`);
  try {
    return JSON.parse(out) as GpuBenchReport;
  } catch {
    throw new Error(`ragen bench gpu: the Python bench printed no JSON report (stdout: ${out.slice(0, 200)})`);
  }
}

/** The interpreter found, kept per $RAGEN_PYTHON: finding it starts a Python that imports torch (seconds). */
const found = new Map<string | undefined, ReturnType<typeof findTorchPython>>();

const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;
const sec = (s: number) => `${s.toFixed(2)} s`;

/** The human table of one report. */
export function formatGpuReport(r: GpuBenchReport): string {
  const s = r.shape;
  const lines = [
    `${r.model} (${(r.parameters / 1e6).toFixed(1)}M parameters) on ${r.deviceName} (${r.device}), torch ${r.torch}${r.cuda ? ` CUDA ${r.cuda}` : ''}, ${r.precision}, decode ${r.decode}, rollout weights ${r.rolloutModel}`,
    `rollout shape: ${s.trajectories} trajectories x ${s.turns} turns, ${s.newTokens} new tokens a turn, ${s.promptTokens}-token prompts, ${s.obsTokens} observation tokens a turn`,
  ];
  const t = r.transformers;
  lines.push(
    `  rollout            ${Math.round(r.rollout.tokensPerSecond).toLocaleString('en-US').padStart(10)} tokens/s   ${t.available ? `transformers ${t.version}: ${Math.round(t.tokensPerSecond).toLocaleString('en-US')} tokens/s over the first ${t.turns} of ${s.turns} turns (ours ${Math.round(t.oursTokensPerSecondSameTurns).toLocaleString('en-US')}), ratio ${t.rolloutSpeedup.toFixed(2)}x` : t.note}`,
  );
  const u = r.update;
  lines.push(
    `  update             ${u.updateTflops.toFixed(2).padStart(10)} TFLOP/s    MFU ${u.mfu === null ? `- (no bf16 peak known for ${r.deviceName}; pass --peak-tflops)` : `${(100 * u.mfu).toFixed(1)}% of ${r.bf16PeakTflops} TFLOP/s`} (${u.updateTokens} tokens)`,
  );
  const st = r.step;
  lines.push(
    `  StarPO step        ${sec(st.totalSeconds).padStart(10)}            rollout ${sec(st.rolloutSeconds)}, old log-probs ${sec(st.oldLogprobsSeconds)}, ref log-probs ${sec(st.refLogprobsSeconds)}, update ${sec(st.updateSeconds)}`,
  );
  lines.push(
    `  peak memory        ${gib(st.peakMemoryBytes).padStart(10)}            (rollout ${gib(st.rolloutPeakMemoryBytes)}; ${r.device === 'cpu' ? "the process's peak resident set" : 'torch.cuda.max_memory_allocated'})`,
  );
  if (t.available)
    for (const [p, d] of Object.entries(t.logits))
      lines.push(
        `  logits vs transformers (${p}): max |diff| ${d.maxAbsDiff.toExponential(2)} (largest |logit| ${d.maxAbsLogit.toFixed(2)})`,
      );
  return lines.join('\n');
}

export function register(bench: Command): void {
  bench
    .command('gpu')
    .description(
      "The torch engine's speed: rollout tokens/s on RAGEN's rollout shape beside transformers' generate (same model, same run), the update's MFU " +
        "(6 x parameters x tokens / time / the GPU's bf16 peak), one StarPO step's engine time (rollout, old/ref log-probs, update) with peak memory, and logits beside transformers'.",
    )
    .option(
      '--shape <list>',
      `comma-separated random-weight model shapes: ${GPU_BENCH_SHAPES.join(', ')}`,
      'qwen2.5-0.5b,qwen2.5-1.5b',
    )
    .option('--model <dir>', 'a Hugging Face model directory (real weights) instead of --shape')
    .option('--device <d>', 'auto, cpu, cuda or cuda:N', 'auto')
    .option('--precision <p>', 'auto (bf16 on a GPU that has it), float32 or bfloat16', 'auto')
    .option(
      '--run-shape <name>',
      `the rollout shape: ${Object.entries(RUN_SHAPES)
        .map(
          ([k, v]) =>
            `${k} (${v.trajectories} x ${v.turns} turns x ${v.newTokens} tokens, transformers ${v.transformersTurns} turn${v.transformersTurns > 1 ? 's' : ''})`,
        )
        .join(', ')}; the flags below override its fields`,
      'ragen',
    )
    .option('--trajectories <n>', 'rollouts sampled at once', parsePositiveInt('--trajectories'))
    .option('--turns <n>', 'turns per rollout', parsePositiveInt('--turns'))
    .option(
      '--transformers-turns <n>',
      "turns of transformers' rollout (the first of ours; the ratio compares the same turns)",
      parsePositiveInt('--transformers-turns'),
    )
    .option(
      '--new-tokens <n>',
      'tokens sampled per turn (no stop tokens: every turn samples exactly this many)',
      parsePositiveInt('--new-tokens'),
    )
    .option('--prompt-tokens <n>', 'random prompt tokens before the first turn', parsePositiveInt('--prompt-tokens'))
    .option('--obs-tokens <n>', 'random observation tokens appended after each turn', parsePositiveInt('--obs-tokens'))
    .option(
      '--micro-batch <n>',
      'trajectories per backward in the update; keep it x the trajectory length under --token-budget, or the micro-batch is split and recomputed (time the MFU counts)',
      parsePositiveInt('--micro-batch'),
      2,
    )
    .option(
      '--token-budget <n>',
      'model.torch.tokenBudget: most tokens run through the model at once',
      parsePositiveInt('--token-budget'),
      16384,
    )
    .option(
      '--peak-tflops <x>',
      "the device's dense bf16 peak in TFLOP/s, for a GPU the built-in table (H100, H200, A100) lacks",
      parsePositive('--peak-tflops'),
    )
    .option('--no-transformers', 'skip the transformers comparison even when it is importable')
    .option('--seed <n>', 'seed of the random weights, prompts and sampling', parseSeed, 0)
    .option('--json', "print one JSON report per shape, as an array (with --check: the check's JSON)")
    .option('--check', 'run the GPU check (stages with time limits) instead of one bench; see --out')
    .option('--out <dir>', 'with --check: the folder for check.json and check.md', 'gpu-check')
    .option(
      '--stages <list>',
      `with --check: default (${DEFAULT_STAGES.map((s) => s.name).join(', ')}), all, or some of ${CHECK_STAGES.map((s) => s.name).join(', ')} (versions always runs)`,
    )
    .addHelpText(
      'after',
      "\nRandom weights are written to a temporary directory from the shape's Qwen2.5 config unless --model is given. Needs torch (a CUDA build for GPU numbers);" +
        '\ntransformers is used when importable. RAGEN_TORCH_DECODE=eager|static|graph picks the decode step (default: graph on CUDA).' +
        "\n\n--check runs the one GPU check instead (docs/gpu.md): versions; issue 24's table (this bench on the quick shape for 0.5B and 1.5B, the rollout on" +
        "\nRAGEN's shape with each turn's time, a whole `ragen train` step by phase with peak memory, 7B with LoRA); CUDA-graph decode = eager; `ragen train`" +
        '\nwith checkpoint and resume; FSDP2 on two CPU ranks (--stages all). Each stage has its own time limit; check.json and check.md are written as each ends.' +
        '\n\nExamples:\n  $ ragen bench gpu\n  $ ragen bench gpu --shape qwen2.5-0.5b --run-shape quick\n  $ ragen bench gpu --model /models/Qwen2.5-0.5B-Instruct --json > gpu.json' +
        '\n  $ ragen bench gpu --shape tiny --device cpu --run-shape smoke   # a CPU smoke run' +
        '\n  $ ragen bench gpu --check --out gpu-check   # the GPU check (the tiny version on a machine without CUDA)' +
        '\n  $ ragen bench gpu --check --stages bench,rollout --out gpu-check   # some stages only',
    )
    .action(async (o: Opts, cmd: Command) => {
      // The check runs fixed stages: a bench flag beside --check would be ignored, so it is refused instead.
      const given = cmd.options.map((x) => x.attributeName()).filter((k) => cmd.getOptionValueSource(k) === 'cli');
      if (o.check) {
        const extra = given.filter((k) => k !== 'check' && k !== 'out' && k !== 'json' && k !== 'stages');
        if (extra.length)
          throw new UsageError(
            `--check runs fixed stages and takes only --out, --stages and --json; drop ${extra.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')}.`,
          );
        return runGpuCheck({ out: o.out, json: Boolean(o.json), stages: selectStages(o.stages ?? 'default') });
      }
      if (given.includes('out'))
        throw new UsageError("--out is the folder of --check's files; add --check, or drop --out.");
      if (given.includes('stages'))
        throw new UsageError('--stages picks the stages of --check; add --check, or drop --stages.');
      const resolved = resolveRunShape(o);
      const shapes = o.model ? ['tiny'] : o.shape.split(',').map((s) => s.trim());
      for (const s of shapes)
        if (!(GPU_BENCH_SHAPES as readonly string[]).includes(s))
          throw new UsageError(
            `Bad --shape \`${s}\`: give one or more of ${GPU_BENCH_SHAPES.join(', ')} (comma-separated).`,
          );
      if (o.model && !existsSync(o.model))
        throw new UsageError(
          `--model ${o.model}: no such directory (give a Hugging Face model directory with config.json + *.safetensors).`,
        );
      const key = process.env.RAGEN_PYTHON;
      if (!found.has(key)) found.set(key, findTorchPython());
      const torch = found.get(key);
      if (!torch) throw new UsageError(TORCH_MISSING);
      const reports: GpuBenchReport[] = [];
      for (const shape of shapes) {
        const r = await runOne(torch.python, shape, resolved);
        reports.push(r);
        if (!o.json) console.log(formatGpuReport(r));
      }
      if (o.json) console.log(JSON.stringify(reports, null, 2));
    });
}
