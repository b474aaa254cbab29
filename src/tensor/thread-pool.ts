// A one-worker thread pool for the WASM kernels: the worker instantiates the same module on the same
// shared memory; a job is a kernel name and its arguments in a control block, handed over with Atomics.

import { CONTROL_ADDR } from './arena.js';
import type { WasmKernels } from './wasm-kernels.js';

/** A kernel of the wasm module, and its argument list. */
export type KernelName = keyof WasmKernels;
export type KernelArgs<K extends KernelName> = Parameters<WasmKernels[K]>;

/** Runs one kernel on two threads: argsWorker on the worker, argsMain here, and waits for both. */
export interface ThreadPool {
  run<K extends KernelName>(fn: K, argsMain: KernelArgs<K>, argsWorker: KernelArgs<K>): void;
  close(): void;
}

// control block: Int32 [0] job seq, [1] done seq, [2] fn index, [3] ready, [4] argc, [5] error, [6] claimable job
// (its seq, 0 once claimed), [15] left for kernel experiments (src/bench/scripts/step-ab.ts); Float64 args at +64. The
// worker's
// half is claimed by whichever thread gets to it first: if the worker is not scheduled in time (a busy machine), the
// main thread runs both halves itself.
const ARGS_ADDR = CONTROL_ADDR + 64;
const MAX_ARGS = 32;

/**
 * The worker's body (plain JS, run by `new Worker(source, {eval: true})` in Node; a browser would wrap
 * it in a Blob). `init(data)` must be called with {module, memory, names}.
 */
export const WORKER_SOURCE = `
function init({ module, memory, names, ctlAddr, argsAddr }) {
  const ctl = new Int32Array(memory.buffer, ctlAddr, 16);
  const args = new Float64Array(memory.buffer, argsAddr, ${MAX_ARGS});
  let fns;
  try {
    const inst = new WebAssembly.Instance(module, { env: { memory, abort() { throw new Error('wasm abort'); } } });
    fns = names.map((n) => inst.exports[n]);
  } catch (e) {
    Atomics.store(ctl, 3, -1); // tell the main thread at once instead of letting it time out
    Atomics.notify(ctl, 3);
    throw e;
  }
  Atomics.store(ctl, 3, 1);
  Atomics.notify(ctl, 3);
  let seen = Atomics.load(ctl, 0);
  for (;;) {
    Atomics.wait(ctl, 0, seen);
    seen = Atomics.load(ctl, 0);
    const job = Atomics.load(ctl, 6);
    if (job === 0 || Atomics.compareExchange(ctl, 6, job, 0) !== job) continue; // nothing to do, or the main thread took it
    const argc = ctl[4];
    const a = [];
    for (let i = 0; i < argc; i++) a.push(args[i]);
    try { fns[ctl[2]](...a); } catch (e) { Atomics.store(ctl, 5, 1); }
    Atomics.store(ctl, 1, job);
    Atomics.notify(ctl, 1);
  }
}
`;

/**
 * When to stop handing work to the worker. On a machine busier than its cores the worker can be preempted mid-job
 * and the main thread waits for it. A job whose wait cost more than running the worker's half here would have (by
 * over `slackMs`: a worker that wakes a little late still saves time) is a strike, a job without one takes a strike
 * back; at three, jobs run on the main thread alone for `coolMs` of wall time, then the worker gets another chance.
 * The cool-down is wall time, not a count of jobs, because jobs range from tens of microseconds (a small GEMM) to
 * tens of milliseconds (a decode step).
 */
export class Backoff {
  private strikes = 0;
  private until = -Infinity;

  constructor(
    readonly coolMs = 200,
    readonly slackMs = 0.1,
  ) {}

  /** Whether a job starting at `now` (performance.now()) runs on the main thread alone. */
  serial(now: number): boolean {
    return now < this.until;
  }

  /**
   * A job whose main-thread half took `mainMs`, after which the main thread waited `waitMs` for the worker, ending at
   * `now`.
   */
  record(mainMs: number, waitMs: number, now: number): void {
    if (waitMs > mainMs + this.slackMs) {
      if (++this.strikes >= 3) {
        this.until = now + this.coolMs;
        this.strikes = 0;
      }
    } else if (this.strikes > 0) this.strikes--;
  }
}

/** Data the worker's `init` receives. */
export function workerInitData(module: WebAssembly.Module, memory: WebAssembly.Memory, names: string[]) {
  return { module, memory, names, ctlAddr: CONTROL_ADDR, argsAddr: ARGS_ADDR };
}

/**
 * The main-thread side. `terminate` stops the worker. Waits up to `readyTimeoutMs` for the worker to start;
 * returns null (after calling terminate) if it does not.
 */
export function createThreadPool(
  memory: WebAssembly.Memory,
  exports: WasmKernels,
  names: string[],
  terminate: () => void,
  readyTimeoutMs = 10000,
): ThreadPool | null {
  const ctl = new Int32Array(memory.buffer, CONTROL_ADDR, 16);
  const args = new Float64Array(memory.buffer, ARGS_ADDR, MAX_ARGS);
  Atomics.wait(ctl, 3, 0, readyTimeoutMs);
  if (Atomics.load(ctl, 3) !== 1) {
    terminate();
    return null;
  }
  const index = new Map(names.map((n, i) => [n, i]));
  let seq = Math.max(1, Atomics.load(ctl, 0));
  const backoff = new Backoff();
  return {
    run(fn, argsMain, argsWorker) {
      const id = index.get(fn);
      if (id === undefined) throw new Error(`thread pool: unknown kernel ${fn}`);
      const call = exports[fn] as (...a: number[]) => unknown;
      const t0 = performance.now();
      if (backoff.serial(t0)) {
        call(...argsMain);
        call(...argsWorker);
        return;
      }
      for (let i = 0; i < argsWorker.length; i++) args[i] = argsWorker[i]!;
      ctl[2] = id;
      ctl[4] = argsWorker.length;
      seq = seq >= 0x3fffffff ? 1 : seq + 1;
      Atomics.store(ctl, 6, seq);
      Atomics.store(ctl, 0, seq);
      Atomics.notify(ctl, 0);
      call(...argsMain);
      if (Atomics.compareExchange(ctl, 6, seq, 0) === seq) {
        call(...argsWorker); // the worker has not started it: do it here
        return;
      }
      const t1 = performance.now();
      let done: number;
      while ((done = Atomics.load(ctl, 1)) !== seq) Atomics.wait(ctl, 1, done);
      const t2 = performance.now();
      backoff.record(t1 - t0, t2 - t1, t2);
      if (Atomics.exchange(ctl, 5, 0) !== 0) throw new Error(`thread pool: kernel ${fn} failed on the worker`);
    },
    close: terminate,
  };
}
