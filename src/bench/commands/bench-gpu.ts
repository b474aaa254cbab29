// `ragen bench gpu`: the torch engine's speed on a model shape (python -m ragen_torch.bench, one run per shape):
// rollout tokens/s beside transformers' generate, the update's MFU, one StarPO step's engine time, logits parity.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { findTorchPython, TORCH_MISSING } from '../../engine/python.js';
import { workerPackageDir } from '../../engine/torch-worker.js';
import { UsageError } from '../../util/index.js';
import { parsePositive, parsePositiveInt, parseSeed } from '../../cli/commands/env-options.js';

/** Model shapes with random weights (python/ragen_torch/random_checkpoint.py). */
export const GPU_BENCH_SHAPES = ['tiny', 'qwen2.5-0.5b', 'qwen2.5-1.5b'] as const;

/** One shape's report, as python -m ragen_torch.bench prints it. */
export interface GpuBenchReport {
  device: string;
  deviceName: string;
  torch: string;
  cuda: string | null;
  precision: string;
  /** The decode step used: eager, static or graph (RAGEN_TORCH_DECODE). */
  decode: string;
  model: string;
  parameters: number;
  shape: { trajectories: number; turns: number; newTokens: number; promptTokens: number; obsTokens: number; microBatch: number };
  bf16PeakTflops: number | null;
  rollout: { tokens: number; seconds: number; tokensPerSecond: number };
  /** 6 x parameters x trajectory tokens over the update's time; MFU against the bf16 peak when it is known. */
  update: { updateTokens: number; updateSeconds: number; updateFlops: number; updateTflops: number; mfu: number | null };
  step: { rolloutSeconds: number; oldLogprobsSeconds: number; refLogprobsSeconds: number; updateSeconds: number; totalSeconds: number; peakMemoryBytes: number; rolloutPeakMemoryBytes: number };
  transformers:
    | { available: false; note: string }
    | {
        available: true;
        version: string;
        rolloutTokens: number;
        rolloutSeconds: number;
        tokensPerSecond: number;
        /** Our rollout tokens/s over transformers'. */
        rolloutSpeedup: number;
        logits: Record<string, { maxAbsDiff: number; maxAbsLogit: number }>;
      };
}

interface Opts {
  shape: string;
  model?: string;
  device: string;
  precision: string;
  trajectories: number;
  turns: number;
  newTokens: number;
  promptTokens: number;
  obsTokens: number;
  microBatch: number;
  tokenBudget: number;
  peakTflops?: number;
  transformers: boolean;
  seed: number;
  json?: boolean;
}

/** Run the Python bench for one shape (or --model); progress lines go to stderr as they come. */
async function runOne(python: string, shape: string, o: Opts, quiet: boolean): Promise<GpuBenchReport> {
  const args = ['-m', 'ragen_torch.bench', '--shape', shape, '--device', o.device, '--precision', o.precision, '--trajectories', String(o.trajectories), '--turns', String(o.turns)];
  args.push('--new-tokens', String(o.newTokens), '--prompt-tokens', String(o.promptTokens), '--obs-tokens', String(o.obsTokens), '--micro-batch', String(o.microBatch));
  args.push('--token-budget', String(o.tokenBudget), '--seed', String(o.seed));
  if (o.model) args.push('--model', o.model);
  if (o.peakTflops) args.push('--peak-tflops', String(o.peakTflops));
  if (!o.transformers) args.push('--no-transformers');
  const env = { ...process.env, PYTHONPATH: [workerPackageDir(), process.env.PYTHONPATH].filter(Boolean).join(':') };
  const child = spawn(python, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const err: string[] = [];
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    const s = d.toString();
    err.push(s);
    if (!quiet) process.stderr.write(s);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const tail = err.join('').trim().split('\n').slice(-15).join('\n');
  if (code === 2) throw new UsageError(`ragen bench gpu: ${tail.split('\n').filter((l) => l.startsWith('error: ')).pop()?.slice(7) ?? tail}`);
  if (code !== 0) throw new Error(`ragen bench gpu: the Python bench for ${o.model ?? shape} exited with code ${code}:\n${tail}`);
  try {
    return JSON.parse(out) as GpuBenchReport;
  } catch {
    throw new Error(`ragen bench gpu: the Python bench printed no JSON report (stdout: ${out.slice(0, 200)})`);
  }
}

let found: ReturnType<typeof findTorchPython> | undefined;

const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;
const sec = (s: number) => `${s.toFixed(2)} s`;

/** The human table of one report. */
export function formatGpuReport(r: GpuBenchReport): string {
  const s = r.shape;
  const lines = [
    `${r.model} (${(r.parameters / 1e6).toFixed(1)}M parameters) on ${r.deviceName} (${r.device}), torch ${r.torch}${r.cuda ? ` CUDA ${r.cuda}` : ''}, ${r.precision}, decode ${r.decode}`,
    `rollout shape: ${s.trajectories} trajectories x ${s.turns} turns, ${s.newTokens} new tokens a turn, ${s.promptTokens}-token prompts, ${s.obsTokens} observation tokens a turn`,
  ];
  const t = r.transformers;
  lines.push(`  rollout            ${Math.round(r.rollout.tokensPerSecond).toLocaleString('en-US').padStart(10)} tokens/s   ${t.available ? `transformers ${t.version}: ${Math.round(t.tokensPerSecond).toLocaleString('en-US')} tokens/s, ratio ${t.rolloutSpeedup.toFixed(2)}x` : t.note}`);
  const u = r.update;
  lines.push(`  update             ${u.updateTflops.toFixed(2).padStart(10)} TFLOP/s    MFU ${u.mfu === null ? `- (no bf16 peak known for ${r.deviceName}; pass --peak-tflops)` : `${(100 * u.mfu).toFixed(1)}% of ${r.bf16PeakTflops} TFLOP/s`} (${u.updateTokens} tokens)`);
  const st = r.step;
  lines.push(`  StarPO step        ${sec(st.totalSeconds).padStart(10)}            rollout ${sec(st.rolloutSeconds)}, old log-probs ${sec(st.oldLogprobsSeconds)}, ref log-probs ${sec(st.refLogprobsSeconds)}, update ${sec(st.updateSeconds)}`);
  lines.push(`  peak memory        ${gib(st.peakMemoryBytes).padStart(10)}            (rollout ${gib(st.rolloutPeakMemoryBytes)}; ${r.device === 'cpu' ? "the process's peak resident set" : 'torch.cuda.max_memory_allocated'})`);
  if (t.available) for (const [p, d] of Object.entries(t.logits)) lines.push(`  logits vs transformers (${p}): max |diff| ${d.maxAbsDiff.toExponential(2)} (largest |logit| ${d.maxAbsLogit.toFixed(2)})`);
  return lines.join('\n');
}

export function register(bench: Command): void {
  bench
    .command('gpu')
    .description(
      "The torch engine's speed: rollout tokens/s on RAGEN's rollout shape beside transformers' generate (same model, same run), the update's MFU " +
        "(6 x parameters x tokens / time / the GPU's bf16 peak), one StarPO step's engine time (rollout, old/ref log-probs, update) with peak memory, and logits beside transformers'.",
    )
    .option('--shape <list>', `comma-separated random-weight model shapes: ${GPU_BENCH_SHAPES.join(', ')}`, 'qwen2.5-0.5b,qwen2.5-1.5b')
    .option('--model <dir>', 'a Hugging Face model directory (real weights) instead of --shape')
    .option('--device <d>', 'auto, cpu, cuda or cuda:N', 'auto')
    .option('--precision <p>', 'auto (bf16 on a GPU that has it), float32 or bfloat16', 'auto')
    .option('--trajectories <n>', 'rollouts sampled at once', parsePositiveInt('--trajectories'), 128)
    .option('--turns <n>', 'turns per rollout', parsePositiveInt('--turns'), 5)
    .option('--new-tokens <n>', 'tokens sampled per turn (no stop tokens: every turn samples exactly this many)', parsePositiveInt('--new-tokens'), 400)
    .option('--prompt-tokens <n>', 'random prompt tokens before the first turn', parsePositiveInt('--prompt-tokens'), 200)
    .option('--obs-tokens <n>', 'random observation tokens appended after each turn', parsePositiveInt('--obs-tokens'), 50)
    .option('--micro-batch <n>', 'trajectories per backward in the update; keep it x the trajectory length under --token-budget, or the micro-batch is split and recomputed (time the MFU counts)', parsePositiveInt('--micro-batch'), 2)
    .option('--token-budget <n>', 'model.torch.tokenBudget: most tokens run through the model at once', parsePositiveInt('--token-budget'), 16384)
    .option('--peak-tflops <x>', "the device's dense bf16 peak in TFLOP/s, for a GPU the built-in table (H100, H200, A100) lacks", parsePositive('--peak-tflops'))
    .option('--no-transformers', 'skip the transformers comparison even when it is importable')
    .option('--seed <n>', 'seed of the random weights, prompts and sampling', parseSeed, 0)
    .option('--json', 'print one JSON report per shape, as an array')
    .addHelpText(
      'after',
      '\nRandom weights are written to a temporary directory from the shape\'s Qwen2.5 config unless --model is given. Needs torch (a CUDA build for GPU numbers);' +
        '\ntransformers is used when importable. RAGEN_TORCH_DECODE=eager|static|graph picks the decode step (default: graph on CUDA).' +
        '\n\nExamples:\n  $ ragen bench gpu\n  $ ragen bench gpu --shape qwen2.5-0.5b --trajectories 32 --turns 2\n  $ ragen bench gpu --model /models/Qwen2.5-0.5B-Instruct --json > gpu.json' +
        '\n  $ ragen bench gpu --shape tiny --device cpu --trajectories 4 --turns 2 --new-tokens 8   # a CPU smoke run',
    )
    .action(async (o: Opts) => {
      const shapes = o.model ? ['tiny'] : o.shape.split(',').map((s) => s.trim());
      for (const s of shapes) if (!(GPU_BENCH_SHAPES as readonly string[]).includes(s)) throw new UsageError(`Bad --shape \`${s}\`: give one or more of ${GPU_BENCH_SHAPES.join(', ')} (comma-separated).`);
      if (o.model && !existsSync(o.model)) throw new UsageError(`--model ${o.model}: no such directory (give a Hugging Face model directory with config.json + *.safetensors).`);
      found ??= findTorchPython(); // kept: finding it starts a Python that imports torch (seconds)
      if (!found) throw new UsageError(TORCH_MISSING);
      const reports: GpuBenchReport[] = [];
      for (const shape of shapes) {
        const r = await runOne(found.python, shape, o, Boolean(o.json));
        reports.push(r);
        if (!o.json) console.log(formatGpuReport(r));
      }
      if (o.json) console.log(JSON.stringify(reports, null, 2));
    });
}
