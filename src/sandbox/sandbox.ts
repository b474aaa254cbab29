// Running model-written Python under limits: bubblewrap namespaces (no network, a read-only /usr, a tmpfs
// scratch dir, nothing else of the host) around a harness that sets rlimits and a seccomp filter (harness.ts).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { RagenError } from '../util/index.js';
import { bwrapArgs, findExecutable, isExecutable } from './bwrap.js';
import { PY_HARNESS } from './harness.js';

/**
 * How the sandbox isolates a program: `bwrap` (namespaces, the default) or `none` (rlimits and seccomp only; the host
 * filesystem stays readable).
 */
export type Isolation = 'bwrap' | 'none';

/** Limits on one run (one submission, all its tests). */
export interface SandboxLimits {
  /** Wall time of the whole run, start-up included; the process group is killed past it. @default 10 */
  wallSeconds: number;
  /** CPU time of the whole run (RLIMIT_CPU). @default 5 */
  cpuSeconds: number;
  /** Address space (RLIMIT_AS), in MiB. @default 512 */
  memoryMB: number;
  /** Bytes one test may print (RLIMIT_FSIZE on its stdout file; also caps scratch files). @default 1048576 */
  outputBytes: number;
  /**
   * Wall time of one test (an interval timer in the harness; the program can block it, wallSeconds still holds).
   * @default 2
   */
  perTestSeconds: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  wallSeconds: 10,
  cpuSeconds: 5,
  memoryMB: 512,
  outputBytes: 1 << 20,
  perTestSeconds: 2,
};

/** Options of a {@link Sandbox}. */
export interface SandboxOptions {
  /** @default 'bwrap' */
  isolation?: Isolation;
  /** The bubblewrap binary. @default `bwrap` on PATH, else /usr/bin/bwrap */
  bwrap?: string;
  /** The Python interpreter; with bwrap it must live under /usr (only /usr is mounted). @default '/usr/bin/python3' */
  python?: string;
  limits?: Partial<SandboxLimits>;
  /** Runs at once; more wait their turn (the wall clock starts at spawn). @default 2 */
  maxParallel?: number;
  /** Size of the tmpfs scratch directory, MiB. @default 16 */
  scratchMB?: number;
}

/**
 * One program and the inputs to run it on: `stdin` programs read each input on stdin; `call` ones define `functionName`
 * (or `class Solution` with that method) called with each input, a JSON array of arguments.
 */
export interface SandboxJob {
  code: string;
  style: 'stdin' | 'call';
  functionName?: string;
  inputs: string[];
}

/** How one test ended: `ok` (ran to the end; compare `output`), or the failure. */
export type TestStatus = 'ok' | 'error' | 'timeout' | 'output_limit' | 'killed';

export interface TestRun {
  status: TestStatus;
  /** stdout (`stdin` style) or `str(result)` (`call` style), at most `outputBytes`. */
  output: string;
  /** Why it failed (an exception's last line, the limit hit). */
  error?: string;
}

/** The outcome of a run: one entry per input, and how the process ended. */
export interface SandboxRun {
  tests: TestRun[];
  exitCode: number | null;
  /** The signal that ended the program (SIGSYS = forbidden system call), if any. */
  signal: string | null;
  /** Set when the host killed the run: past `wallSeconds`, or too much output on the result channel. */
  killed?: 'wall' | 'output';
  wallSeconds: number;
}

/** The sandbox cannot run here (no bubblewrap, no namespaces, no seccomp): fix the machine or opt out. */
export class SandboxUnavailableError extends RagenError {}

const ENV = { LANG: 'C.UTF-8', PYTHONHASHSEED: '0', PYTHONIOENCODING: 'utf-8', PYTHONDONTWRITEBYTECODE: '1' };

/**
 * Runs Python programs on test inputs under limits. `check()` proves once that the isolation works
 * (a clear {@link SandboxUnavailableError} otherwise); `run()` never throws for anything the program
 * does: every failure is a {@link TestRun} status with a reason.
 */
export class Sandbox {
  readonly isolation: Isolation;
  readonly python: string;
  /** The bubblewrap binary, or undefined when none was found. */
  readonly bwrap: string | undefined;
  readonly limits: SandboxLimits;
  private readonly maxParallel: number;
  private readonly scratchMB: number;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private checked: Promise<void> | undefined;

  constructor(options: SandboxOptions = {}) {
    this.isolation = options.isolation ?? 'bwrap';
    this.python = options.python ?? '/usr/bin/python3';
    this.bwrap = options.bwrap ?? findExecutable('bwrap');
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.maxParallel = options.maxParallel ?? 2;
    this.scratchMB = options.scratchMB ?? 16;
  }

  /** Proves the sandbox works on this machine (once; later calls share the answer). */
  check(): Promise<void> {
    this.checked ??= this.probe();
    return this.checked;
  }

  private async probe(): Promise<void> {
    const fix =
      'Install bubblewrap (`apt-get install -y bubblewrap`) on a kernel that allows user namespaces, or set the env config ' +
      '`sandbox: none` to run model-written code with rlimits and seccomp only (the host filesystem is then readable: only on a machine you can lose).';
    if (this.isolation === 'bwrap' && (this.bwrap === undefined || !isExecutable(this.bwrap))) {
      const where =
        this.bwrap === undefined
          ? `is not on PATH (${process.env.PATH ?? ''}) nor in /usr/bin`
          : `is not an executable at ${this.bwrap}`;
      throw new SandboxUnavailableError(`The code sandbox needs bubblewrap (\`bwrap\`), which ${where}. ${fix}`);
    }
    if (this.isolation === 'bwrap' && !this.python.startsWith('/usr/')) {
      throw new SandboxUnavailableError(
        `The sandbox's Python must live under /usr (only /usr is mounted inside bubblewrap); got \`${this.python}\`. Use /usr/bin/python3 (apt-get install -y python3).`,
      );
    }
    const run = await this.run({ code: 'print(input()[::-1])', style: 'stdin', inputs: ['olleh\n'] });
    const t = run.tests[0]!;
    if (t.status !== 'ok' || t.output.trim() !== 'hello') {
      throw new SandboxUnavailableError(
        `The code sandbox (${this.isolation}) failed its self-test: ${t.error ?? `printed ${JSON.stringify(t.output)}`} (exit ${run.exitCode}, signal ${run.signal}). ${fix}`,
      );
    }
  }

  /** Run `job`; resolves with one {@link TestRun} per input. */
  async run(job: SandboxJob): Promise<SandboxRun> {
    await this.acquire();
    try {
      return await this.spawnRun(job);
    } finally {
      this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.running < this.maxParallel) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(() => (this.running++, resolve())));
  }

  private release(): void {
    this.running--;
    this.waiting.shift()?.();
  }

  private spawnRun(job: SandboxJob): Promise<SandboxRun> {
    const lim = this.limits;
    const payload = JSON.stringify({
      code: job.code,
      style: job.style,
      functionName: job.functionName ?? null,
      inputs: job.inputs,
      limits: {
        cpuSeconds: Math.max(1, Math.ceil(lim.cpuSeconds)),
        memoryBytes: lim.memoryMB * 1024 * 1024,
        outputBytes: lim.outputBytes,
        perTestSeconds: lim.perTestSeconds,
      },
    });
    // Not -I: it would ignore PYTHONHASHSEED. -s -P keep user site dirs and the working directory off sys.path.
    const py = [this.python, '-S', '-s', '-P', '-B', '-c', PY_HARNESS];
    const bwrap = this.isolation === 'bwrap';
    const [cmd, ...args] = bwrap ? [this.bwrap ?? 'bwrap', ...bwrapArgs(this.scratchMB), ...py] : py;
    // Without bubblewrap the program still gets a fresh directory of its own, removed afterwards.
    const scratch = bwrap ? undefined : mkdtempSync(join(tmpdir(), 'ragen-sandbox-'));
    const started = performance.now();
    return new Promise<SandboxRun>((resolve) => {
      const child = spawn(cmd!, args, {
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        env: { ...ENV },
        cwd: scratch ?? '/',
      });
      let killed: SandboxRun['killed'];
      const kill = (why: 'wall' | 'output'): void => {
        killed ??= why;
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          child.kill('SIGKILL'); // the group is already gone: kill the leader if it lingers
        }
      };
      const timer = setTimeout(() => kill('wall'), lim.wallSeconds * 1000);
      const maxResult = (lim.outputBytes + 1024) * (job.inputs.length + 1) * 2;
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        stdout += chunk;
        if (stdout.length > maxResult) kill('output');
      });
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => {
        if (stderr.length < 16_384) stderr += chunk;
      });
      child.stdin.on('error', () => {}); // the program may exit before reading all input: its exit status says why
      child.on('error', (err) => {
        clearTimeout(timer);
        resolve(this.finish(job, '', `could not start ${cmd}: ${err.message}`, null, null, killed, started));
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve(this.finish(job, stdout, stderr, code, signal, killed, started));
      });
      child.stdin.end(payload);
    }).finally(() => {
      if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
    });
  }

  private finish(
    job: SandboxJob,
    stdout: string,
    stderr: string,
    code: number | null,
    signal: NodeJS.Signals | null,
    killed: SandboxRun['killed'],
    started: number,
  ): SandboxRun {
    // bubblewrap reports a child killed by signal N as exit status 128 + N.
    let sig: string | null = signal;
    if (sig === null && this.isolation === 'bwrap' && code !== null && code > 128) sig = signalName(code - 128);
    const tests: (TestRun | undefined)[] = new Array(job.inputs.length).fill(undefined);
    let fatal: string | undefined;
    for (const line of stdout.split('\n')) {
      if (!line.startsWith('{')) continue;
      let frame: { i?: unknown; status?: unknown; out?: unknown; error?: unknown; fatal?: unknown };
      try {
        frame = JSON.parse(line);
      } catch {
        continue; // a line the program forged or cut short: its tests count as not reported
      }
      if (typeof frame.fatal === 'string') fatal = frame.fatal;
      const i = frame.i;
      if (typeof i !== 'number' || !Number.isInteger(i) || i < 0 || i >= tests.length || tests[i] !== undefined)
        continue;
      const status = (['ok', 'error', 'timeout', 'output_limit'] as const).find((s) => s === frame.status);
      if (status === undefined) continue;
      tests[i] = {
        status,
        output: typeof frame.out === 'string' ? frame.out : '',
        ...(typeof frame.error === 'string' ? { error: frame.error } : {}),
      };
    }
    const why = this.endReason(killed, sig, code, fatal, stderr);
    return {
      tests: tests.map((t) => t ?? { status: 'killed', output: '', error: why }),
      exitCode: code,
      signal: sig,
      ...(killed ? { killed } : {}),
      wallSeconds: (performance.now() - started) / 1000,
    };
  }

  /** Why tests got no result: the limit or the fault that ended the process. */
  private endReason(
    killed: SandboxRun['killed'],
    sig: string | null,
    code: number | null,
    fatal: string | undefined,
    stderr: string,
  ): string {
    const lim = this.limits;
    if (killed === 'wall') return `wall time limit (${lim.wallSeconds} s) exceeded`;
    if (killed === 'output') return 'output limit exceeded';
    if (sig === 'SIGSYS')
      return 'killed for a forbidden system call (the sandbox blocks process creation, exec, sockets and namespace calls)';
    if (sig === 'SIGXCPU' || sig === 'SIGKILL') return `CPU time limit (${lim.cpuSeconds} s) exceeded`;
    if (sig) return `crashed (${sig})`;
    if (fatal) return `sandbox harness failed: ${fatal}`;
    if (code !== 0) return `the sandbox exited with status ${code}${stderr ? `: ${stderr.trim().slice(-300)}` : ''}`;
    return 'no result reported (the program ended the process early, e.g. os._exit, or closed its result channel)';
  }
}

function signalName(n: number): string {
  for (const [name, num] of Object.entries(osConstants.signals)) if (num === n) return name;
  return `signal ${n}`;
}
