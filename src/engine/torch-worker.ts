// The torch worker process (python/ragen_torch): spawn, handshake, ordered request/reply with timeouts. A worker that
// dies (kill -9, segfault, OOM kill), writes garbage on stdout or runs past a timeout fails every waiting request
// with an error naming the exit code or signal and its last stderr lines; it never hangs the caller.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { freePort, HOST_PORT, RagenError } from '../util/index.js';
import { encodeFrame, FrameReader, PROTOCOL_VERSION, type Frame, type FrameArray } from './torch-protocol.js';

/**
 * The worker's token budget when none is given: model.torch.tokenBudget's schema default too. The worker itself has
 * no defaults: it receives every setting on its command line and in its requests.
 */
export const TORCH_TOKEN_BUDGET = 4096;

/** How to start a worker. */
export interface TorchWorkerOptions {
  /** Interpreter with torch (see findTorchPython). */
  python: string;
  /** `auto` (CUDA when torch sees a GPU, else CPU), `cpu`, `cuda`, `cuda:1`. @default 'auto' */
  device?: string;
  /**
   * `auto` (bf16 autocast on a GPU with bf16, else float32), `float32`, `bfloat16` (emulated on a CPU, slow). @default
   * 'auto'
   */
  precision?: string;
  /** Most tokens (rows x longest row) per forward chunk. @default 4096 */
  tokenBudget?: number;
  /** Seconds the handshake may take. @default 120 */
  startTimeoutS?: number;
  /** Seconds one request may take before the worker is stopped. @default 3600 */
  requestTimeoutS?: number;
  /**
   * Data-parallel ranks on this machine, launched with torchrun (gloo on CPU, NCCL on CUDA): each takes its share of
   * every batch; global rank 0 talks to this process. @default 1
   */
  ranks?: number;
  /**
   * Machines taking part (torchrun's `--nnodes`); this one is node 0, the others are started with `nodeCommand`.
   * @default 1
   */
  nodes?: number;
  /**
   * `host:port` of node 0's rendezvous store, reachable from every node; needed when `nodes` > 1. @default 127.0.0.1
   * and a free port
   */
  master?: string;
  /** Replace the command (tests: a fake worker); gets no further arguments. */
  command?: string[];
  /** Forward the worker's stderr lines to this process's stderr. @default true */
  echoStderr?: boolean;
}

/** The worker's handshake. */
export interface TorchHello {
  protocol: number;
  torch: string;
  cuda: string | null;
  device: string;
  deviceName: string;
  precision: string;
  pid: number;
  /** Data-parallel ranks (all nodes). */
  ranks: number;
  /** Every rank's process id, in rank order. */
  pids: number[];
  /** Whether the ranks shard the models with FSDP2 (python/ragen_torch/fsdp.py) rather than each holding them whole. */
  sharded: boolean;
}

/** A failure of the worker process itself (not of a request it answered). */
export class TorchWorkerError extends RagenError {}

/** An error the worker reported for one request (its Python exception type, message and traceback tail). */
export class TorchRequestError extends RagenError {
  constructor(
    readonly op: string,
    readonly type: string,
    message: string,
    readonly traceback: string,
    /** Structured fields of the Python exception (its `detail`), from which a TypeScript error can be rebuilt. */
    readonly detail?: Record<string, unknown>,
  ) {
    super(
      `torch worker: ${op} failed: ${type}: ${message}${traceback ? `\n  worker traceback (last lines):\n    ${traceback.split('\n').join('\n    ')}` : ''}`,
    );
  }
}

interface Pending {
  id: number;
  op: string;
  resolve: (f: Frame) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** The directory holding the `ragen_torch` package (python/ in the repository or the installed package). */
export function workerPackageDir(): string {
  let dir = import.meta.dirname;
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, 'python', 'ragen_torch', '__init__.py'))) return join(dir, 'python');
    dir = dirname(dir);
  }
  throw new TorchWorkerError(
    `python/ragen_torch was not found above ${import.meta.dirname}; reinstall ragen-ts (the package ships python/)`,
  );
}

/** The last line of a Python traceback: the exception's (dotted) class name, a colon, its message. */
const PYTHON_ERROR = /^\s*[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt): \S/;

export class TorchWorker {
  private readonly reader = new FrameReader();
  private readonly pending = new Map<number, Pending>();
  private readonly stderrTail: string[] = [];
  private stderrPartial = '';
  /** Ranks torchrun reported as failed (from its summary on stderr), in the order it listed them. */
  private readonly failedRanks = new Map<number, string>();
  private summaryRank = -1;
  /**
   * The first Python exception line on stderr (`RuntimeError: ...`) since the last reply: a rank's cause, which
   * torchrun's summary pushes out of the tail.
   */
  private firstError = '';
  private nextId = 1;
  private failure: Error | null = null;
  /** The error of a `post`ed request, thrown by the next `request`. */
  private deferred: Error | null = null;
  private exited = false;
  private hello!: TorchHello;

  private constructor(
    private readonly child: ChildProcess,
    private readonly opts: TorchWorkerOptions,
    private readonly torchrun: { python: string; launch: string[]; worker: string[] } | null,
  ) {}

  /** Spawn the worker (through torchrun when it has several ranks) and wait for its handshake. */
  static async start(opts: TorchWorkerOptions): Promise<TorchWorker> {
    const [ranks, nodes] = [opts.ranks ?? 1, opts.nodes ?? 1];
    for (const [k, v] of [
      ['ranks', ranks],
      ['nodes', nodes],
    ] as const) {
      if (!Number.isInteger(v) || v < 1)
        throw new RangeError(`torch worker: ${k} must be a positive integer, got ${v}`);
    }
    if (nodes > 1 && !opts.master)
      throw new RangeError(
        `torch worker: ${nodes} nodes need model.torch.master, this machine's host:port that the other nodes can reach (e.g. 10.0.0.1:29500)`,
      );
    const master = opts.master ?? `127.0.0.1:${await freePort()}`;
    const m = HOST_PORT.exec(master);
    if (!m || Number(m[2]) > 65535) throw new RangeError(`torch worker: master must be host:port, got \`${master}\``);
    const worker = [
      '-m',
      'ragen_torch',
      '--device',
      opts.device ?? 'auto',
      '--precision',
      opts.precision ?? 'auto',
      '--token-budget',
      String(opts.tokenBudget ?? TORCH_TOKEN_BUDGET),
    ];
    // torchrun's static rendezvous: node ranks are fixed, so global rank 0 (which reads our requests) is on this
    // machine.
    const torchrun =
      ranks * nodes === 1
        ? null
        : {
            python: opts.python,
            launch: [
              '-m',
              'ragen_torch.launch',
              `--nnodes=${nodes}`,
              `--nproc_per_node=${ranks}`,
              `--master_addr=${m[1]}`,
              `--master_port=${m[2]}`,
              '--max_restarts=0',
              '--monitor_interval=0.5',
            ],
            worker,
          };
    const args =
      opts.command ??
      (torchrun ? [opts.python, ...torchrun.launch, '--node_rank=0', ...worker] : [opts.python, ...worker]);
    const pkg = opts.command ? '' : workerPackageDir();
    const env = {
      ...process.env,
      PYTHONPATH: [pkg, process.env.PYTHONPATH].filter(Boolean).join(':'),
      PYTHONDONTWRITEBYTECODE: '1',
      PYTHONUNBUFFERED: '1',
      RAGEN_PARENT_PID: String(process.pid),
    };
    const child = spawn(args[0]!, args.slice(1), { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const w = new TorchWorker(child, opts, torchrun);
    live.add(w);
    const wait = opts.startTimeoutS ?? (nodes > 1 ? 1800 : 120);
    if (nodes > 1)
      process.stderr.write(
        `torch worker: waiting up to ${wait} s for ${nodes - 1} more node(s); on node k (1..${nodes - 1}) run, in a checkout of this ragen-ts version:\n  ${w.nodeCommand('k')}\n`,
      );
    try {
      w.hello = await w.wire(wait);
    } catch (e) {
      w.close(0); // a refused handshake (wrong protocol, no device) leaves no process behind
      throw e;
    }
    return w;
  }

  /**
   * The shell command that starts node `nodeRank`'s share of the ranks on another machine (the same torchrun
   * arguments with that node rank, or a placeholder such as `k`; `torchrun` itself works in place of
   * `python -m ragen_torch.launch` on torch >= 2).
   */
  nodeCommand(nodeRank: number | string): string {
    if (!this.torchrun)
      throw new RangeError('torch worker: this worker runs as one process; nodeCommand needs ranks or nodes above 1');
    const { python, launch, worker } = this.torchrun;
    return `PYTHONPATH=${quote(workerPackageDir())} ${[python, ...launch, `--node_rank=${nodeRank}`, ...worker].map(quote).join(' ')}`;
  }

  /** What the worker reported at start (torch and CUDA versions, device, precision). */
  get info(): TorchHello {
    return this.hello;
  }

  /** The worker's process id. */
  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Send a request and wait for its reply (rejects with TorchRequestError or TorchWorkerError). */
  request(
    op: string,
    header: Record<string, unknown> = {},
    buffers: Record<string, FrameArray> = {},
    timeoutS = this.opts.requestTimeoutS ?? 3600,
  ): Promise<Frame> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.deferred) {
      const e = this.deferred;
      this.deferred = null;
      return Promise.reject(e);
    }
    const id = this.nextId++;
    return new Promise<Frame>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          this.fail(
            new TorchWorkerError(
              `torch worker: ${op} ran past its timeout of ${timeoutS} s; the worker (pid ${this.pid}) was stopped.${this.tail()}`,
            ),
          ),
        timeoutS * 1000,
      );
      this.pending.set(id, { id, op, resolve, reject, timer });
      this.setRef(true);
      this.child.stdin!.write(encodeFrame({ ...header, id, op }, buffers));
    });
  }

  /** A request whose reply nobody awaits (e.g. zeroGrad); its failure is thrown by a later `request` (once). */
  post(op: string, header: Record<string, unknown> = {}): void {
    this.request(op, header).catch((e: Error) => {
      if (!this.failure) this.deferred ??= e;
    });
  }

  /**
   * Close the worker's stdin (it exits), SIGKILL it if it is still there after `graceS`. Node's event loop waits for
   * that exit (at most `graceS`): a worker that outlived this process would be re-parented to init, and an init that
   * does not reap (a container's) keeps it defunct.
   */
  close(graceS = 5): void {
    if (this.exited) return;
    this.failure ??= new TorchWorkerError('torch worker: the engine was disposed');
    this.child.stdin!.end();
    const t = setTimeout(() => {
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    }, graceS * 1000);
    this.child.once('exit', () => clearTimeout(t));
    this.setRef(false);
    this.child.ref(); // the pipes no longer hold the loop; the process does, until it has exited
  }

  /**
   * Stop the process now: SIGTERM (a single worker dies at once, even mid-step; torchrun's launcher stops and reaps
   * its ranks), SIGKILL after `graceS`; resolves once it has exited and Node has reaped it.
   */
  stop(graceS = 5): Promise<void> {
    if (this.exited) return Promise.resolve();
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.failure ??= new TorchWorkerError('torch worker: stopped (the process is stopping on a signal)');
    this.child.kill('SIGTERM');
    const t = setTimeout(() => {
      if (!this.exited) this.child.kill('SIGKILL');
    }, graceS * 1000);
    return gone.finally(() => clearTimeout(t));
  }

  /** Wire the pipes; resolves with the handshake. */
  private wire(startTimeoutS: number): Promise<TorchHello> {
    const { child } = this;
    return new Promise<TorchHello>((resolve, reject) => {
      let greeted = false;
      const timer = setTimeout(
        () =>
          this.fail(
            new TorchWorkerError(`torch worker: no handshake within ${startTimeoutS} s; it was stopped.${this.tail()}`),
          ),
        startTimeoutS * 1000,
      );
      // The handshake waits like a request with id 0.
      this.pending.set(0, {
        id: 0,
        op: 'start',
        timer,
        resolve: (f) => {
          greeted = true;
          const h = f.header;
          if (h.ok !== true)
            return reject(
              new TorchWorkerError(
                `torch worker failed to start: ${String((h.error as { message?: string } | undefined)?.message ?? JSON.stringify(h))}`,
              ),
            );
          if (h.protocol !== PROTOCOL_VERSION)
            return reject(
              new TorchWorkerError(
                `torch worker speaks protocol ${String(h.protocol)}, this ragen-ts speaks ${PROTOCOL_VERSION}; use the python/ragen_torch shipped with this version`,
              ),
            );
          resolve(h as unknown as TorchHello);
        },
        reject: (e) => (greeted ? undefined : reject(e)),
      });
      child.stdout!.on('data', (data: Buffer) => {
        let frames: Frame[];
        try {
          frames = this.reader.push(data);
        } catch (e) {
          return this.fail(
            new TorchWorkerError(
              `torch worker (pid ${this.pid}): ${(e as Error).message}; it was stopped.${this.tail()}`,
            ),
          );
        }
        for (const f of frames) this.reply(f);
      });
      child.stderr!.on('data', (data: Buffer) => this.stderrLines(data));
      child.stdin!.on('error', () => undefined); // EPIPE after a crash: reported by 'exit' with the reason
      child.on('error', (e) =>
        this.fail(
          new TorchWorkerError(
            `torch worker could not be started (${this.opts.command?.[0] ?? this.opts.python}): ${e.message}`,
          ),
        ),
      );
      child.on('exit', (code, signal) => {
        this.exited = true;
        live.delete(this);
        // stderr may still hold the crash's last lines: read them before failing the waiters.
        setImmediate(() =>
          this.fail(
            new TorchWorkerError(
              `torch worker (pid ${this.pid}) ${signal ? `was killed by signal ${signal}` : `exited with code ${code}`}${signal === 'SIGKILL' ? ' (kill -9 or the kernel OOM killer)' : ''}.${this.ranksFailed()}${this.tail()}`,
            ),
          ),
        );
      });
      this.setRef(true);
    });
  }

  /** Complete stderr lines join the tail (and the console); a partial last line waits for its end. */
  private stderrLines(data: Buffer): void {
    const lines = (this.stderrPartial + data.toString('utf8')).split('\n');
    this.stderrPartial = lines.pop()!;
    for (const line of lines) {
      if (!line.trim()) continue;
      if (this.opts.echoStderr ?? true) process.stderr.write(`[torch worker] ${line}\n`);
      this.readSummary(line);
      if (!this.firstError && PYTHON_ERROR.test(line)) this.firstError = line.trim();
      if (/^\s*[\^~]+\s*$/.test(line)) continue; // Python's underlines of the failing expression: noise in a 12-line tail
      this.stderrTail.push(line);
      if (this.stderrTail.length > 30) this.stderrTail.shift();
    }
  }

  private reply(f: Frame): void {
    const id = f.header.type === 'hello' ? 0 : Number(f.header.id);
    const p = this.pending.get(id);
    if (!p) return this.fail(new TorchWorkerError(`torch worker replied to request ${id}, which is not waiting`));
    this.pending.delete(id);
    clearTimeout(p.timer);
    this.firstError = ''; // it answered: what it printed before is not why it dies later
    if (this.pending.size === 0) this.setRef(false);
    if (f.header.ok === false && id !== 0) {
      const e = f.header.error as {
        type?: string;
        message?: string;
        traceback?: string;
        detail?: Record<string, unknown>;
      };
      return p.reject(
        new TorchRequestError(p.op, e.type ?? 'Error', e.message ?? '(no message)', e.traceback ?? '', e.detail),
      );
    }
    p.resolve(f);
  }

  /** Fail every waiting request and every later one with `e`, and stop the process. */
  private fail(e: Error): void {
    if (!this.failure || this.failure.message === 'torch worker: the engine was disposed') this.failure = e;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new TorchWorkerError(p.id === 0 ? e.message : `${e.message}\n  (the request waiting for it: ${p.op})`));
    }
    this.pending.clear();
    if (!this.exited) this.child.kill('SIGKILL');
    this.setRef(false);
  }

  /** torchrun's failure summary names each failed rank (`rank : 1 (local_rank: 1)`, then `exitcode : -9 (pid: N)`). */
  private readSummary(line: string): void {
    const rank = /^\s*rank\s*:\s*(\d+) \(local_rank: \d+\)/.exec(line);
    if (rank) this.summaryRank = Number(rank[1]);
    const exit = /^\s*exitcode\s*:\s*(-?\d+) \(pid: (\d+)\)/.exec(line);
    if (exit && this.summaryRank >= 0) {
      const c = Number(exit[1]);
      this.failedRanks.set(
        this.summaryRank,
        `rank ${this.summaryRank} (pid ${exit[2]}) ${c < 0 ? `was killed by signal ${-c}${c === -9 ? ' (SIGKILL: kill -9 or the OOM killer)' : ''}` : `exited with code ${c}`}`,
      );
      this.summaryRank = -1;
    }
  }

  private ranksFailed(): string {
    return this.failedRanks.size ? ` torchrun reports: ${[...this.failedRanks.values()].join('; ')}.` : '';
  }

  private tail(): string {
    const lines = (this.stderrPartial.trim() ? [...this.stderrTail, this.stderrPartial] : this.stderrTail).slice(-12);
    const first =
      this.firstError && !lines.some((l) => l.trim() === this.firstError)
        ? ` The first error it printed: ${this.firstError}`
        : '';
    return lines.length > 0 ? `${first} Last stderr lines:\n  ${lines.join('\n  ')}` : ' It wrote nothing on stderr.';
  }

  /** Keep the Node process alive only while a request waits (an idle worker must not block exit). */
  private setRef(on: boolean): void {
    const c = this.child as ChildProcess & { stdout: { ref?(): void; unref?(): void } };
    for (const s of [c.stdout, c.stderr, c.stdin] as ({ ref?(): void; unref?(): void } | null)[])
      (on ? s?.ref : s?.unref)?.call(s);
    if (on) this.child.ref();
    else this.child.unref();
  }
}

/** The workers started by this process that have not exited yet. */
const live = new Set<TorchWorker>();

/**
 * Stop every worker this process started and wait until each has exited and been reaped (SIGTERM, then SIGKILL after
 * `graceS`). For a process about to end on a signal (`ragen train`'s Ctrl-C): ending first would leave the workers
 * running (until Linux's parent-death signal kills them) and then defunct under an init that does not reap.
 */
export function stopTorchWorkers(graceS = 5): Promise<void> {
  return Promise.all([...live].map((w) => w.stop(graceS))).then(() => undefined);
}

/** `s` as one POSIX shell word. */
function quote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
