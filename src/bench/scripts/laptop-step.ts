// One RL step of the laptop preset (configs/sokoban-ppo-qwen-laptop.yaml) on the local engine and on the torch engine
// (the same step: same config, rollouts, LoRA, shared critic and reference; torch in float32 with its own layer
// recompute), each in its own process given the same kernel threads: the step time (`timing_s/step`) by phase, and
// the peak resident memory of the process and its children (the torch worker), sampled from /proc every 200 ms.
// With --resume-check, the local engine's timed step is the first of a run stopped after it (`--stop-after 1`), which
// then `--resume`s for a second; two straight steps follow, and the script says whether their metrics are identical
// (four local steps in all). Usage:
//   npx tsx src/bench/scripts/laptop-step.ts DIR [--engines local,torch] [--threads 2] [--resume-check] [KEY=VALUE...]
// DIR from `ragen model init --shape qwen2.5-0.5b --out DIR` or a Hugging Face checkpoint; torch is RAGEN_PYTHON's,
// else ./.venv/bin/python (torch 2.13). KEY=VALUE overrides go to both runs (e.g. env.train=... to shrink the step).
// The runs start bin/ragen.js, so build dist/ first after changing src/.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readMetricsFile } from '../../metrics/index.js';

// The built CLI (dist/, `npm run build` or `npx tsc -p tsconfig.build.json`), as the other benchmarks start it.
const bin = fileURLToPath(new URL('../../../bin/ragen.js', import.meta.url));

await bench(process.argv.slice(2));

interface Run {
  code: number;
  peakRssBytes: number;
  wallS: number;
  out: string;
}

/** Resident bytes of `pid` and every descendant, now. */
function treeRss(pid: number): number {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // the process ended between readdir and read: it holds no memory now
    }
  }
  let bytes = 0;
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop()!;
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (m) bytes += Number(m[1]) * 1024;
    } catch {
      // ended: nothing resident
    }
    stack.push(...(children.get(p) ?? []));
  }
  return bytes;
}

/** `ragen <args>` in a child process with `env`, its peak tree RSS and wall time. */
function ragen(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((done, fail) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    let peak = 0;
    const timer = setInterval(() => (peak = Math.max(peak, treeRss(child.pid!))), 200);
    child.on('error', fail);
    child.on('close', (code) => {
      clearInterval(timer);
      done({ code: code ?? 1, peakRssBytes: peak, wallS: (Date.now() - t0) / 1000, out });
    });
  });
}

/** Metric lines without the wall-clock keys (as src/train/testing.ts's `deterministic`). */
function deterministic(file: string) {
  return readMetricsFile(file).map((r) =>
    Object.fromEntries(
      Object.entries(r).filter(([k]) => k !== 'time' && !k.startsWith('timing_s/') && !k.startsWith('perf/')),
    ),
  );
}

async function bench(argv: string[]): Promise<void> {
  const dir = argv.find((a) => !a.startsWith('--') && !a.includes('='));
  const flag = (name: string, fallback: string) => {
    const i = argv.indexOf(name);
    return i >= 0 && argv[i + 1] ? argv[i + 1]! : fallback;
  };
  const engines = flag('--engines', 'local,torch').split(',');
  const threads = flag('--threads', '2');
  const overrides = argv.filter((a) => a.includes('=') && !a.startsWith('--'));
  if (!dir || !existsSync(join(dir, 'config.json')) || engines.some((e) => e !== 'local' && e !== 'torch')) {
    console.error(
      'usage: laptop-step.ts DIR [--engines local,torch] [--threads N] [--resume-check] [KEY=VALUE...]\n' +
        '  DIR: a model directory with config.json (ragen model init --shape qwen2.5-0.5b --out DIR)',
    );
    process.exit(2);
  }
  const python = process.env.RAGEN_PYTHON ?? resolve('.venv/bin/python');
  const env = { RAGEN_THREADS: threads, RAGEN_TORCH_THREADS: threads, RAGEN_PYTHON: python };
  const root = mkdtempSync(join(tmpdir(), 'ragen-laptop-step-'));
  const base = (engine: string, runDir: string) => [
    'train',
    '--config',
    'sokoban-ppo-qwen-laptop',
    `model.path=${resolve(dir)}`,
    `model.engine=${engine}`,
    ...(engine === 'torch' ? ['model.torch.gradientCheckpointing=true', 'model.torch.device=cpu'] : []),
    `logging.runDir=${runDir}`,
    'trainer.valBeforeTrain=false',
    'trainer.valEvery=0',
    'trainer.collapse.every=0',
    'trainer.checkpointEvery=1',
    ...overrides,
  ];
  const phases = ['timing_s/gen', 'timing_s/old_log_prob', 'timing_s/ref', 'timing_s/update_actor'];
  console.log(
    `model ${resolve(dir)}; ${threads} kernel threads each; load average before ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  console.log(`| engine | step s | ${phases.map((p) => p.slice(9)).join(' s | ')} s | peak RSS GiB | process wall s |`);
  console.log(`|---|---|${phases.map(() => '---|').join('')}---|---|`);
  const resumeCheck = argv.includes('--resume-check');
  const split = join(root, 'split');
  for (const engine of engines) {
    const timedSplit = resumeCheck && engine === 'local';
    const runDir = timedSplit ? split : join(root, engine);
    const steps = timedSplit ? ['--steps', '2', '--stop-after', '1'] : ['--steps', '1'];
    const r = await ragen([...base(engine, runDir), ...steps], env);
    if (r.code !== 0) {
      console.log(`| ${engine} | failed (exit ${r.code}) |`);
      console.error(r.out.split('\n').slice(-30).join('\n'));
      continue;
    }
    const m = readMetricsFile(join(runDir, 'metrics.jsonl'))[0]!;
    const s = (k: string) => (typeof m[k] === 'number' ? (m[k] as number).toFixed(1) : '-');
    console.log(
      `| ${engine} | ${s('timing_s/step')} | ${phases.map(s).join(' | ')} | ${(r.peakRssBytes / 2 ** 30).toFixed(2)} | ${r.wallS.toFixed(0)} |`,
    );
  }
  if (resumeCheck) {
    const straight = join(root, 'straight');
    const a = engines.includes('local')
      ? { code: existsSync(join(split, 'metrics.jsonl')) ? 0 : 1 }
      : await ragen([...base('local', split), '--steps', '2', '--stop-after', '1'], env);
    const b = a.code === 0 ? await ragen(['train', '--resume', split], env) : a;
    const c = await ragen([...base('local', straight), '--steps', '2'], env);
    if (a.code !== 0 || b.code !== 0 || c.code !== 0) console.log('resume check: a run failed');
    else {
      const same =
        JSON.stringify(deterministic(join(split, 'metrics.jsonl'))) ===
        JSON.stringify(deterministic(join(straight, 'metrics.jsonl')));
      console.log(`resume check (local): 1 step + --resume 1 step ${same ? 'identical to' : 'DIFFERS from'} 2 steps`);
    }
  }
  console.log(
    `load average after ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  rmSync(root, { recursive: true, force: true });
}
