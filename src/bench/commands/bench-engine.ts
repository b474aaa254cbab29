// `ragen bench engine`: our local engine against PyTorch (src/bench/tools/torch_bench.py) on the same reference model and
// the same number of cores, per kernel backend: training step time, batched decode tokens/s, peak RSS, and the
// ceiling (the cores' measured FMA peak). Each side runs in its own process. The peer is the torch of RAGEN_PYTHON,
// else of the project's wheel environment (./.venv); Debian's torch (/usr/bin/python3) is a second column when it is
// installed and a different version.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { Option, type Command } from 'commander';
import { pythonCandidates, TORCH_MISSING } from '../../engine/index.js';
import {
  BENCH_MODEL,
  DEFAULT_WORKLOAD,
  decodeWeightFlops,
  runEngineBench,
  trainStepFlops,
  type EngineBenchResult,
} from '../engine.js';
import { configToHF } from '../../model/index.js';
import { backendAvailable, type BackendName } from '../../tensor/index.js';
import { RagenError, UsageError } from '../../util/index.js';

/** A torch that ran the workload: its figures and ours / its. */
export interface TorchPeerFigures {
  torchVersion: string;
  /** Cores it was given: torch.set_num_threads (or, for a torch on an external OpenBLAS, that pool's threads). */
  torchThreads: number;
  /** Where its matrix products run: mkl, openblas or other. */
  blas: string;
  python: string;
  trainStepMs: number;
  decodeTokPerS: number;
  peakRssMb: number;
  trainRatio: number;
  decodeRatio: number;
}

/** One row of `--json`: our numbers, the first torch peer's, and ours / torch. */
export interface EngineBenchRow {
  backend: string;
  /** The threads our kernels run on (each torch peer gets as many). */
  threads: number;
  trainStepMs: { ours: number; torch: number | null; ratio: number | null };
  decodeTokPerS: { ours: number; torch: number | null; ratio: number | null };
  peakRssMb: { ours: number; torch: number | null };
  /** The first peer's torch version and threads (null with --no-torch). */
  torchVersion: string | null;
  torchThreads: number | null;
  /** Every torch peer (the first is the one above), e.g. the wheel environment's 2.13 and Debian's 1.13. */
  peers: TorchPeerFigures[];
  /**
   * native only: the cores' limit. The measured float32 FMA rate of one thread on the kernels' path times our threads,
   * and the train step time and decode rate if every product of the workload (`trainStepFlops`, `decodeWeightFlops`)
   * ran at it and nothing else took time; `trainShare` is that floor over our measured step time.
   */
  ceiling?: {
    isa: string;
    gflopsPerThread: number;
    threads: number;
    trainStepMs: number;
    trainShare: number;
    decodeTokPerS: number;
  };
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
      "Local engine vs PyTorch (eager, given as many threads as our kernels use) on a 5M-parameter Qwen2-style model: train step (B8 x T128, fwd+bwd+AdamW), batched decode (64 seqs, 64-token prompts, 128 new tokens), peak RSS, and the cores' FMA ceiling. Torch: RAGEN_PYTHON's, else ./.venv's; Debian's /usr/bin/python3 as a second column when it has another version.",
    )
    .option(
      '--json',
      'print an array of {backend, threads, trainStepMs, decodeTokPerS, peakRssMb, torchVersion, torchThreads, peers, ceiling}',
    )
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
    fma: runs
      .map((r) => r.fma)
      .reduce((a, b) => (b && (!a || b.gflopsPerThread > a.gflopsPerThread) ? b : a), undefined),
  };
}

/** A torch interpreter found for the bench. */
export interface TorchPeer {
  python: string;
  torchVersion: string;
}

/** torch's version as `python` imports it, or null when it does not. */
function torchVersionOf(python: string): string | null {
  const r = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8', timeout: 120_000 });
  return r.status === 0 ? r.stdout.trim() : null;
}

/**
 * The peers: first RAGEN_PYTHON's torch, else the project's wheel environment's (./.venv/bin/python), else the first
 * other interpreter with torch; then Debian's /usr/bin/python3 when its torch is another version (1.13 beside 2.x).
 */
export function torchPeers(root: string = packageRoot()): TorchPeer[] {
  const venv = join(root, '.venv', 'bin', 'python');
  const order = [
    ...(process.env.RAGEN_PYTHON ? [process.env.RAGEN_PYTHON] : []),
    ...(existsSync(venv) ? [venv] : []),
    ...pythonCandidates(),
  ];
  const peers: TorchPeer[] = [];
  for (const python of [...new Set(order)]) {
    const version = torchVersionOf(python);
    if (!version) continue;
    if (peers.length === 0) peers.push({ python, torchVersion: version });
    else if (python === '/usr/bin/python3' && !peers.some((p) => p.torchVersion === version))
      peers.push({ python, torchVersion: version });
  }
  return peers;
}

export interface TorchResult extends EngineBenchResult {
  torchVersion: string;
  torchThreads: number;
  blas: string;
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
  const peers = opts.torch ? torchPeers() : [];
  if (opts.torch && peers.length === 0) throw new RagenError(`${TORCH_MISSING} (or run with --no-torch)`);
  for (const p of peers) log(`torch peer: ${p.torchVersion} (${p.python})`);
  const torchRuns = new Map<string, TorchResult[]>(peers.map((p) => [p.python, []]));
  const ourRuns = new Map<string, EngineBenchResult[]>(backends.map((b) => [b, []]));
  let threads = 0; // our kernels' threads, from the first worker: each torch gets as many
  for (let round = 1; round <= opts.rounds; round++) {
    for (const backend of backends) {
      const r = runWorker(backend, workload.steps);
      ourRuns.get(backend)!.push(r);
      threads = Math.max(threads, r.fma?.threads ?? r.simd?.threads ?? 1);
      log(`round ${round} ${backend.padEnd(7)} ${fmt(r)}`);
    }
    for (const p of peers) {
      const r = runTorch(p, workload.steps, threads);
      torchRuns.get(p.python)!.push(r);
      log(`round ${round} torch ${p.torchVersion} x${r.torchThreads} ${fmt(r)}`);
    }
  }
  const torchBest = peers.map((p) => {
    const runs = torchRuns.get(p.python)!;
    return { peer: p, best: best(runs), first: runs[0]! };
  });
  const torch = torchBest[0]?.best ?? null;
  log(`best of ${opts.rounds}, ${threads} threads each:`);
  for (const t of torchBest) log(`torch ${t.peer.torchVersion.padEnd(12)} ${fmt(t.best)}`);
  const rows: EngineBenchRow[] = [];
  for (const backend of backends) {
    const ours = best(ourRuns.get(backend)!);
    const ratio = (a: number, b: number | undefined): number | null => (b === undefined ? null : a / b);
    const peerFigures: TorchPeerFigures[] = torchBest.map((t) => ({
      torchVersion: t.first.torchVersion,
      torchThreads: t.first.torchThreads,
      blas: t.first.blas,
      python: t.peer.python,
      trainStepMs: t.best.trainStepMs,
      decodeTokPerS: t.best.decodeTokPerS,
      peakRssMb: t.best.peakRssMb,
      trainRatio: ours.trainStepMs / t.best.trainStepMs,
      decodeRatio: ours.decodeTokPerS / t.best.decodeTokPerS,
    }));
    rows.push({
      backend,
      threads,
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
      torchVersion: peerFigures[0]?.torchVersion ?? null,
      torchThreads: peerFigures[0]?.torchThreads ?? null,
      peers: peerFigures,
    });
    const r = rows[rows.length - 1]!;
    log(`${backend.padEnd(7)} ${fmt(ours)}`);
    for (const p of peerFigures)
      log(
        `        vs torch ${p.torchVersion} (${p.torchThreads} threads, ${p.blas}): ${p.trainRatio.toFixed(2)}x its step time, ${p.decodeRatio.toFixed(2)}x its decode rate`,
      );
    if (ours.fma) {
      const rate = ours.fma.gflopsPerThread * 1e9 * ours.fma.threads;
      const floorMs = (1000 * trainStepFlops(BENCH_MODEL, workload)) / rate;
      const decodeCeil =
        (workload.decodeBatch * workload.newTokens) / (decodeWeightFlops(BENCH_MODEL, workload) / rate);
      r.ceiling = {
        isa: ours.fma.isa,
        gflopsPerThread: ours.fma.gflopsPerThread,
        threads: ours.fma.threads,
        trainStepMs: floorMs,
        trainShare: floorMs / ours.trainStepMs,
        decodeTokPerS: decodeCeil,
      };
      log(
        `        ceiling (${ours.fma.isa} FMA peak ${ours.fma.gflopsPerThread.toFixed(0)} GFLOP/s x ${ours.fma.threads} threads): train step >= ${floorMs.toFixed(0)} ms (ours at ${(100 * r.ceiling.trainShare).toFixed(0)}% of it), decode <= ${decodeCeil.toFixed(0)} tok/s (ours at ${((100 * ours.decodeTokPerS) / decodeCeil).toFixed(0)}%)`,
      );
    }
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

/** One torch run on `threads` cores (torch_bench.py sets its threads; the BLAS and OpenMP pools get as many). */
export function runTorch(peer: TorchPeer, steps: number, threads: number): TorchResult {
  const dir = mkdtempSync(join(os.tmpdir(), 'ragen-bench-'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(configToHF(BENCH_MODEL)));
  const script = join(packageRoot(), 'src', 'bench', 'tools', 'torch_bench.py');
  const n = String(threads);
  const r = spawnSync(peer.python, [script, join(dir, 'config.json'), '--steps', String(steps), '--threads', n], {
    encoding: 'utf8',
    env: { ...process.env, OPENBLAS_NUM_THREADS: n, OMP_NUM_THREADS: n, MKL_NUM_THREADS: n },
  });
  if (r.status !== 0)
    throw new RagenError(
      `src/bench/tools/torch_bench.py (${peer.python}, torch ${peer.torchVersion}) failed with status ${r.status}:\n${r.stderr}`,
    );
  return lastJson(r.stdout, 'src/bench/tools/torch_bench.py') as TorchResult;
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
