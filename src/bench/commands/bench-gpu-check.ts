// `ragen bench gpu --check`: the one GPU check, a fixed list of stages (bench-gpu-check-stages.ts), each in child
// processes under its own time limit, with check.json and check.md rewritten (tmp + rename) as each stage ends, so a
// run killed by a short GPU window keeps what it measured. Without CUDA the same stages run on the tiny shape.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findTorchPython, TORCH_MISSING, workerPackageDir } from '../../engine/index.js';
import { RagenError, UsageError } from '../../util/index.js';
import type { CheckMode, CheckStage, StageContext, StageOutcome, StageStatus } from './bench-gpu-check-stages.js';
import { DEFAULT_STAGES } from './bench-gpu-check-table.js';

/** One stage's row of check.json. */
export interface StageRecord {
  name: string;
  title: string;
  status: StageStatus;
  /** One line: what was measured, or why it failed / was skipped. */
  summary: string;
  seconds: number | null;
  limitSeconds: number;
  /** Largest device memory in use while the stage ran (nvidia-smi, every second; all processes); null without a GPU. */
  peakGpuMemoryBytes: number | null;
  details: Record<string, unknown>;
}

export interface CheckReport {
  /** `cuda`: the GPU stages at real sizes; `cpu`: the same stages on the tiny shape (CI's smoke run). */
  mode: CheckMode;
  startedAt: string;
  finishedAt: string | null;
  node: string;
  stages: StageRecord[];
}

/** Write `text` to `file` through a temporary file and a rename, so a reader (or a kill) never sees half a file. */
function writeAtomic(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

const gib = (b: number | null) => (b === null ? '-' : `${(b / 2 ** 30).toFixed(1)} GiB`);

/** check.md: one Markdown table row per stage. */
export function checkMarkdown(r: CheckReport): string {
  const head = [
    `# ragen bench gpu --check (${r.mode === 'cuda' ? 'GPU' : 'no CUDA: tiny shapes'})`,
    '',
    `Started ${r.startedAt}${r.finishedAt ? `, finished ${r.finishedAt}` : ', still running or killed'}; node ${r.node}.`,
    '',
    '| # | stage | status | time | limit | peak GPU memory | result |',
    '|---|---|---|---|---|---|---|',
  ];
  const rows = r.stages.map(
    (s, i) =>
      `| ${i + 1} | ${s.title} | ${s.status} | ${s.seconds === null ? '-' : `${s.seconds.toFixed(1)} s`} | ${s.limitSeconds} s | ${gib(s.peakGpuMemoryBytes)} | ${s.summary.replaceAll('|', '\\|')} |`,
  );
  return [...head, ...rows, ''].join('\n');
}

/** Samples the device memory in use (nvidia-smi) every second while a stage runs; max over all GPUs and samples. */
function gpuMemorySampler(enabled: boolean): { stop(): number | null } {
  if (!enabled) return { stop: () => null };
  let peak: number | null = null;
  const sample = () =>
    execFile(
      'nvidia-smi',
      ['--query-gpu=memory.used', '--format=csv,noheader,nounits'],
      { timeout: 5000 },
      (err, out) => {
        if (err) return; // no nvidia-smi: the stage's row says '-' (the Python stages report torch's own peak)
        for (const line of out.trim().split('\n')) {
          const mib = Number(line.trim());
          if (Number.isFinite(mib)) peak = Math.max(peak ?? 0, mib * 2 ** 20);
        }
      },
    );
  sample();
  const timer = setInterval(sample, 1000);
  return { stop: () => (clearInterval(timer), peak) };
}

/** Process groups of the children running now: killed on a time limit, and when the check itself exits or is
 *  interrupted (a child in its own group does not get the terminal's Ctrl-C). */
const live = new Set<number>();

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is already gone
  }
}

/** Spawn a child in its own process group (so a time limit kills its children too), forwarding stderr lines. */
function runChild(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
  log: (l: string) => void,
  onLine?: (l: string) => void,
) {
  return new Promise<{ code: number | null; stdout: string; stderrTail: string }>((resolve, reject) => {
    if (signal.aborted) return reject(new Error('the stage ran out of time'));
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let partial = '';
    const tail: string[] = [];
    const kill = () => killGroup(child.pid!);
    if (child.pid) live.add(child.pid);
    signal.addEventListener('abort', kill, { once: true });
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split(/\r?\n|\r/);
      partial = lines.pop()!;
      for (const l of lines) {
        if (!l.trim()) continue;
        tail.push(l);
        if (tail.length > 20) tail.shift();
        log(l);
        onLine?.(l);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => {
      live.delete(child.pid!);
      signal.removeEventListener('abort', kill);
      if (partial.trim()) tail.push(partial);
      resolve({ code, stdout, stderrTail: tail.join('\n') });
    });
  });
}

export interface CheckOptions {
  out: string;
  json: boolean;
  /** The stages to run (`--stages`, tests); default DEFAULT_STAGES. */
  stages?: CheckStage[];
  /** Force the mode instead of the versions stage's answer (tests). */
  mode?: CheckMode;
}

/** Run the check; throws a RagenError naming the failed stages when any failed or timed out. */
export async function runGpuCheck(o: CheckOptions): Promise<void> {
  const found = findTorchPython();
  if (!found) throw new UsageError(TORCH_MISSING);
  const root = join(workerPackageDir(), '..');
  mkdirSync(o.out, { recursive: true });
  const scratch = mkdtempSync(join(tmpdir(), 'ragen-gpu-check-'));
  const stages = o.stages ?? DEFAULT_STAGES;
  let mode: CheckMode = o.mode ?? 'cpu';
  const report: CheckReport = {
    mode,
    startedAt: new Date().toISOString(),
    finishedAt: null,
    node: process.version,
    stages: stages.map((s) => ({
      name: s.name,
      title: s.title,
      status: 'pending',
      summary: '',
      seconds: null,
      limitSeconds: s.limitSeconds[mode],
      peakGpuMemoryBytes: null,
      details: {},
    })),
  };
  const save = () => {
    writeAtomic(join(o.out, 'check.json'), JSON.stringify(report, null, 2) + '\n');
    writeAtomic(join(o.out, 'check.md'), checkMarkdown(report));
  };
  save();
  const env = { ...process.env, PYTHONPATH: [workerPackageDir(), process.env.PYTHONPATH].filter(Boolean).join(':') };
  const killAll = () => live.forEach(killGroup);
  const interrupted = (sig: NodeJS.Signals) => {
    killAll();
    process.stderr.write(`[check] ${sig}: stopped; ${join(o.out, 'check.json')} holds the stages that ended\n`);
    rmSync(scratch, { recursive: true, force: true });
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  process.on('exit', killAll);
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    for (const [i, stage] of stages.entries()) {
      const rec = report.stages[i]!;
      rec.limitSeconds = stage.limitSeconds[mode];
      const tag = `[check ${i + 1}/${stages.length} ${stage.name}]`;
      const log = (l: string) => process.stderr.write(`${tag} ${l}\n`);
      log(`start (${mode === 'cuda' ? 'GPU' : 'no CUDA: tiny shapes'}, limit ${rec.limitSeconds} s)`);
      const work = join(scratch, stage.name);
      mkdirSync(work, { recursive: true });
      const abort = new AbortController();
      const ctx: StageContext = {
        mode,
        python: found.python,
        root,
        work,
        log,
        partial: {},
        run: (cmd, args, extra, onLine) => runChild(cmd, args, { ...env, ...extra }, abort.signal, log, onLine),
        ragen: (args, onLine) =>
          runChild(process.execPath, [join(root, 'bin', 'ragen.js'), ...args], env, abort.signal, log, onLine),
      };
      const sampler = gpuMemorySampler(mode === 'cuda');
      const t0 = performance.now();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>(
        (resolve) => (timer = setTimeout(() => resolve('timeout'), rec.limitSeconds * 1000)),
      );
      let outcome: StageOutcome | 'timeout';
      try {
        outcome = await Promise.race([stage.run(ctx), timeout]);
      } catch (e) {
        outcome = {
          status: 'failed',
          summary: e instanceof Error ? e.message.split('\n')[0]! : String(e),
          details: { error: String(e) },
        };
      } finally {
        clearTimeout(timer);
        abort.abort(); // kills what a timed-out stage still runs
      }
      rec.seconds = (performance.now() - t0) / 1000;
      rec.peakGpuMemoryBytes = sampler.stop();
      if (outcome === 'timeout')
        Object.assign(rec, {
          status: 'timed out',
          summary: `killed after ${rec.limitSeconds} s`,
          details: ctx.partial,
        });
      else Object.assign(rec, outcome);
      if (stage.name === 'versions' && !o.mode) {
        mode = rec.details.cudaAvailable === true ? 'cuda' : 'cpu';
        report.mode = mode;
        for (const [j, s] of stages.entries()) if (j > i) report.stages[j]!.limitSeconds = s.limitSeconds[mode];
      }
      save(); // before the line below, so whoever reads that line finds the stage in the files
      log(
        `${rec.status} in ${rec.seconds.toFixed(1)} s${rec.peakGpuMemoryBytes === null ? '' : `, peak GPU memory ${gib(rec.peakGpuMemoryBytes)}`}: ${rec.summary}`,
      );
    }
  } finally {
    process.off('exit', killAll);
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    report.finishedAt = new Date().toISOString();
    save();
    rmSync(scratch, { recursive: true, force: true });
  }
  if (o.json) console.log(JSON.stringify(report, null, 2));
  else console.log(checkMarkdown(report));
  const bad = report.stages.filter((s) => s.status === 'failed' || s.status === 'timed out');
  if (bad.length)
    throw new RagenError(
      `the GPU check did not pass: ${bad.map((s) => `${s.name} ${s.status}`).join(', ')}; see ${join(o.out, 'check.md')}.`,
    );
}
