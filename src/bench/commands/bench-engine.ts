// `ragen bench engine`: our local engine against PyTorch (src/bench/tools/torch_bench.py) on the same reference model,
// per kernel backend: training step time, batched decode tokens/s, peak RSS. Each side runs in its own process.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { Option, type Command } from 'commander';
import { findTorchPython, TORCH_MISSING } from '../../engine/index.js';
import { BENCH_MODEL, DEFAULT_WORKLOAD, decodeWeightFlops, runEngineBench, type EngineBenchResult } from '../engine.js';
import { configToHF } from '../../model/index.js';
import { backendAvailable, type BackendName } from '../../tensor/index.js';
import { RagenError, UsageError } from '../../util/index.js';

/** One row of `--json`: our numbers, PyTorch's, and ours / torch. */
export interface EngineBenchRow {
  backend: string;
  trainStepMs: { ours: number; torch: number | null; ratio: number | null };
  decodeTokPerS: { ours: number; torch: number | null; ratio: number | null };
  peakRssMb: { ours: number; torch: number | null };
  /**
   * wasm only: the decode rate if the workload's products with the weights (`decodeWeightFlops`) ran at the measured
   * f32x4 multiply-add peak on every kernel thread and nothing else took time: no 128-bit kernel can beat it.
   */
  decodeCeiling?: { simdGflopsPerThread: number; threads: number; tokPerS: number; ratio: number | null };
}

const BACKENDS: BackendName[] = ['native', 'wasm', 'js'];

export function register(bench: Command): void {
  bench
    .command('engine')
    .description(
      'Local engine vs PyTorch (eager, OPENBLAS_NUM_THREADS=2, one torch thread) on a 5M-parameter Qwen2-style model: train step (B8 x T128, fwd+bwd+AdamW), batched decode (64 seqs, 64-token prompts, 128 new tokens), peak RSS.',
    )
    .option('--json', 'print an array of {backend, trainStepMs, decodeTokPerS, peakRssMb}')
    .option('--backend <list>', 'comma-separated kernel backends (default: native and wasm, those that load)')
    .option(
      '--steps <n>',
      'timed training steps (after one warm-up)',
      (v) => positiveInt(v, '--steps'),
      DEFAULT_WORKLOAD.steps,
    )
    .option(
      '--rounds <n>',
      "alternate torch and ours this many times and keep each side's best (other load on the machine only slows a run down)",
      (v) => positiveInt(v, '--rounds'),
      3,
    )
    .option('--no-torch', 'skip PyTorch (torch fields are null)')
    .addOption(new Option('--worker <backend>', 'internal: run our side in this process and print its JSON').hideHelp())
    .addHelpText('after', '\nExamples:\n  $ ragen bench engine\n  $ ragen bench engine --backend wasm --json')
    .action((opts: BenchOptions) => benchEngine(opts));
}

interface BenchOptions {
  json?: boolean;
  backend?: string;
  steps: number;
  rounds: number;
  torch: boolean;
  worker?: string;
}

/** The best of several runs: least time, most tokens/s, the highest peak RSS (RSS does not improve with luck). */
function best(runs: EngineBenchResult[]): EngineBenchResult {
  return {
    trainStepMs: Math.min(...runs.map((r) => r.trainStepMs)),
    decodeTokPerS: Math.max(...runs.map((r) => r.decodeTokPerS)),
    peakRssMb: Math.max(...runs.map((r) => r.peakRssMb)),
    loss: runs[0]!.loss,
    simd: runs
      .map((r) => r.simd)
      .reduce((a, b) => (b && (!a || b.gflopsPerThread > a.gflopsPerThread) ? b : a), undefined),
  };
}

const fmt = (r: EngineBenchResult): string =>
  `train step ${r.trainStepMs.toFixed(0)} ms, decode ${r.decodeTokPerS.toFixed(0)} tok/s, peak RSS ${r.peakRssMb.toFixed(0)} MB`;

async function benchEngine(opts: BenchOptions): Promise<void> {
  const workload = { ...DEFAULT_WORKLOAD, steps: opts.steps };
  if (opts.worker) {
    console.log(JSON.stringify(await runEngineBench(opts.worker as BackendName, workload)));
    return;
  }
  const backends = opts.backend
    ? opts.backend.split(',').map((b) => b.trim())
    : BACKENDS.filter((b) => b !== 'js' && backendAvailable(b));
  for (const b of backends) {
    if (!BACKENDS.includes(b as BackendName))
      throw new UsageError(`--backend: unknown backend \`${b}\`; valid: ${BACKENDS.join(', ')}`);
    if (!backendAvailable(b as BackendName))
      throw new UsageError(
        `--backend: \`${b}\` cannot be loaded here (run \`npm run build\`; the native backend needs g++)`,
      );
  }
  if (backends.length === 0)
    throw new UsageError('no fast kernel backend loads here (native, wasm); run `npm run build`, or pass --backend js');
  const log = (s: string): void => {
    if (!opts.json) console.log(s);
  };
  log(
    `node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} x ${os.cpus().length}, load average ${os.loadavg()[0]!.toFixed(2)}`,
  );
  log(
    `model: ${BENCH_MODEL.numLayers} layers, hidden ${BENCH_MODEL.hiddenSize}, vocab ${BENCH_MODEL.vocabSize}; ${workload.steps} timed train steps`,
  );
  const torchRuns: EngineBenchResult[] = [];
  const ourRuns = new Map<string, EngineBenchResult[]>(backends.map((b) => [b, []]));
  for (let round = 1; round <= opts.rounds; round++) {
    if (opts.torch) {
      torchRuns.push(runTorch(workload.steps));
      log(`round ${round} torch   ${fmt(torchRuns.at(-1)!)}`);
    }
    for (const backend of backends) {
      ourRuns.get(backend)!.push(runWorker(backend, workload.steps));
      log(`round ${round} ${backend.padEnd(7)} ${fmt(ourRuns.get(backend)!.at(-1)!)}`);
    }
  }
  const torch = torchRuns.length > 0 ? best(torchRuns) : null;
  log(`best of ${opts.rounds}:`);
  if (torch) log(`torch   ${fmt(torch)}`);
  const rows: EngineBenchRow[] = [];
  for (const backend of backends) {
    const ours = best(ourRuns.get(backend)!);
    const ratio = (a: number, b: number | undefined): number | null => (b === undefined ? null : a / b);
    rows.push({
      backend,
      trainStepMs: {
        ours: ours.trainStepMs,
        torch: torch?.trainStepMs ?? null,
        ratio: ratio(ours.trainStepMs, torch?.trainStepMs),
      },
      decodeTokPerS: {
        ours: ours.decodeTokPerS,
        torch: torch?.decodeTokPerS ?? null,
        ratio: ratio(ours.decodeTokPerS, torch?.decodeTokPerS),
      },
      peakRssMb: { ours: ours.peakRssMb, torch: torch?.peakRssMb ?? null },
    });
    const r = rows[rows.length - 1]!;
    log(
      `${backend.padEnd(7)} ${fmt(ours)}${r.trainStepMs.ratio === null ? '' : ` | ${r.trainStepMs.ratio.toFixed(2)}x torch's step time, ${r.decodeTokPerS.ratio!.toFixed(2)}x torch's decode rate`}`,
    );
    if (ours.simd) {
      const flops = decodeWeightFlops(BENCH_MODEL, workload);
      const tokPerS =
        (workload.decodeBatch * workload.newTokens) / (flops / (ours.simd.gflopsPerThread * 1e9 * ours.simd.threads));
      r.decodeCeiling = {
        simdGflopsPerThread: ours.simd.gflopsPerThread,
        threads: ours.simd.threads,
        tokPerS,
        ratio: ratio(tokPerS, torch?.decodeTokPerS),
      };
      log(
        `        decode ceiling: ${(flops / 1e9).toFixed(0)} GFLOP of weight products at the f32x4 FMA peak (${ours.simd.gflopsPerThread.toFixed(1)} GFLOP/s x ${ours.simd.threads} threads) = ${tokPerS.toFixed(0)} tok/s${r.decodeCeiling.ratio === null ? '' : ` (${r.decodeCeiling.ratio.toFixed(2)}x torch's)`}; measured ${((100 * ours.decodeTokPerS) / tokPerS).toFixed(0)}% of it`,
      );
    }
  }
  log(`load average after: ${os.loadavg()[0]!.toFixed(2)}`);
  if (opts.json) console.log(JSON.stringify(rows, null, 2));
}

/** Our side in a child process (so its RSS is its own), via this same CLI with --worker. */
function runWorker(backend: string, steps: number): EngineBenchResult {
  const args = [
    ...process.execArgv,
    process.argv[1]!,
    'bench',
    'engine',
    '--worker',
    backend,
    '--steps',
    String(steps),
  ];
  const r = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
    env: { ...process.env, RAGEN_BACKEND: backend },
  });
  if (r.status !== 0)
    throw new RagenError(
      `bench worker (${backend}) failed (${r.signal ? `signal ${r.signal}` : `status ${r.status}`}):\n${r.stderr}`,
    );
  return lastJson(r.stdout, `bench worker (${backend})`);
}

function runTorch(steps: number): EngineBenchResult {
  const py = findTorchPython();
  if (!py) throw new RagenError(`${TORCH_MISSING} (or run with --no-torch)`);
  const dir = mkdtempSync(join(os.tmpdir(), 'ragen-bench-'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(configToHF(BENCH_MODEL)));
  const script = join(packageRoot(), 'src', 'bench', 'tools', 'torch_bench.py');
  const r = spawnSync(py.python, [script, join(dir, 'config.json'), '--steps', String(steps)], {
    encoding: 'utf8',
    env: { ...process.env, OPENBLAS_NUM_THREADS: '2', OMP_NUM_THREADS: '1' },
  });
  if (r.status !== 0)
    throw new RagenError(`src/bench/tools/torch_bench.py failed with status ${r.status}:\n${r.stderr}`);
  return lastJson(r.stdout, 'src/bench/tools/torch_bench.py');
}

function lastJson(stdout: string, what: string): EngineBenchResult {
  const line = stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  if (!line) throw new RagenError(`${what} printed no JSON result:\n${stdout}`);
  return JSON.parse(line) as EngineBenchResult;
}

/** The folder holding package.json (works from src/ under tsx and from dist/). */
function packageRoot(): string {
  let dir = import.meta.dirname;
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'src', 'bench', 'tools'))) {
    const up = dirname(dir);
    if (up === dir)
      throw new RagenError('cannot find the ragen-ts package folder (with src/bench/tools/torch_bench.py)');
    dir = up;
  }
  return dir;
}

function positiveInt(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive integer, got \`${v}\``);
  return n;
}
