// `ragen bench envs --remote`: starts `ragen env serve` in a child process on loopback (or uses --url), opens
// --sessions concurrent sessions per env id and reports the steps/s the server sustains beside in-process steps/s.
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { createInterface } from 'node:readline';
import { UsageError } from '../../util/index.js';
import { resolveEnvId } from '../../env/index.js';
import { benchRemote, type RemoteBenchResult } from '../remote.js';

/** The options `ragen bench envs --remote` reads. */
export interface RemoteBenchCliOptions {
  ids?: string;
  seconds: number;
  sessions: number;
  url?: string;
  serverPid?: number;
  json?: boolean;
}

/** The `--json` output of `ragen bench envs --remote`. */
export interface RemoteBenchReport {
  node: string;
  cpu: string;
  loadAverage: number;
  /** 'child process on loopback' or the --url given. */
  server: string;
  results: RemoteBenchResult[];
}

/** The ids measured when --ids is not given: a grid env, a one-step env and a free-text env. */
const DEFAULT_IDS = ['SimpleSokoban', 'Bandit', 'Countdown'];

/** Starts `ragen env serve <ids>` in a child process on a free loopback port; resolves with its ws:// base. */
async function startServer(ids: string[], sessions: number): Promise<{ child: ChildProcess; url: string }> {
  const args = [
    ...process.execArgv,
    process.argv[1]!,
    'env',
    'serve',
    ...ids,
    '--port',
    '0',
    '--max-sessions',
    String(sessions + 64),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the env server did not start within 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`the env server exited with code ${code} before it listened`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /(ws:\/\/[^/\s]+)\//.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });
  return { child, url };
}

function fmt(x: number): string {
  return Math.round(x).toLocaleString('en-US');
}

/** Runs the load test for each id and prints a table (or JSON). */
export async function runRemoteBench(opts: RemoteBenchCliOptions): Promise<RemoteBenchReport> {
  if (opts.url !== undefined && !/^wss?:\/\/[^/]+$/.test(opts.url))
    throw new UsageError(`Bad --url \`${opts.url}\`: give the server's base, e.g. ws://127.0.0.1:8765 (no path).`);
  // With --url, an id unknown here is the server's own (a Python bridge env): measured without an in-process run.
  const ids = (opts.ids ? opts.ids.split(',').map((s) => s.trim()) : DEFAULT_IDS).map((id) => ({
    id: opts.url && !isLocal(id) ? id : resolveEnvId(id),
    remoteOnly: opts.url !== undefined && !isLocal(id),
  }));
  const server = opts.url
    ? { child: undefined, url: opts.url }
    : await startServer(
        ids.map((x) => x.id),
        opts.sessions,
      );
  const report: RemoteBenchReport = {
    node: process.version,
    cpu: `${os.cpus()[0]?.model ?? 'unknown'} x ${os.cpus().length}`,
    loadAverage: os.loadavg()[0]!,
    server: opts.url ?? 'child process on loopback',
    results: [],
  };
  const log = (line: string) => process.stderr.write(`${line}\n`);
  try {
    if (!opts.json) {
      console.log(
        `node ${report.node}, ${report.cpu}, load average ${report.loadAverage.toFixed(2)}, server: ${report.server}, ${opts.sessions} sessions, ${opts.seconds} s per measurement`,
      );
      console.log(
        `${'env'.padEnd(16)} ${'sessions'.padStart(8)} ${'remote steps/s'.padStart(15)} ${'resets/s'.padStart(9)} ${'in-process steps/s'.padStart(19)} ${'ratio'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'connect s'.padStart(9)} ${'errors'.padStart(6)} ${'server CPU'.padStart(10)} ${'steps/server-CPU-s'.padStart(18)}`,
      );
    }
    for (const { id, remoteOnly } of ids) {
      const r = await benchRemote(
        {
          id,
          url: server.url,
          sessions: opts.sessions,
          seconds: opts.seconds,
          remoteOnly,
          ...((server.child?.pid ?? opts.serverPid) ? { serverPid: (server.child?.pid ?? opts.serverPid)! } : {}),
        },
        opts.json ? undefined : log,
      );
      report.results.push(r);
      if (r.firstError) log(`${id}: ${r.errors} failure(s); the first: ${r.firstError}`);
      if (!opts.json) {
        const ratio =
          r.inProcessStepsPerSecond === null ? '-' : (r.stepsPerSecond / r.inProcessStepsPerSecond).toFixed(3);
        console.log(
          `${id.padEnd(16)} ${String(r.sessions).padStart(8)} ${fmt(r.stepsPerSecond).padStart(15)} ${fmt(r.resetsPerSecond).padStart(9)} ${(r.inProcessStepsPerSecond === null ? '-' : fmt(r.inProcessStepsPerSecond)).padStart(19)} ${ratio.padStart(7)} ${r.p50Ms.toFixed(1).padStart(7)} ${r.p99Ms.toFixed(1).padStart(7)} ${r.connectSeconds.toFixed(2).padStart(9)} ${String(r.errors).padStart(6)} ${(r.serverCpuSeconds === null ? '-' : `${((100 * r.serverCpuSeconds) / r.seconds).toFixed(0)}%`).padStart(10)} ${(r.stepsPerServerCpuSecond === null ? '-' : fmt(r.stepsPerServerCpuSecond)).padStart(18)}`,
        );
      }
    }
  } finally {
    server.child?.kill('SIGTERM');
  }
  if (opts.json) console.log(JSON.stringify(report, null, 2));
  return report;
}

/** Whether `id` names a registered env here. */
function isLocal(id: string): boolean {
  try {
    resolveEnvId(id);
    return true;
  } catch {
    return false; // only the server knows it
  }
}
