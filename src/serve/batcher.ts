// Continuous request batching over the Engine seam: requests that arrive while a batch generates wait
// together and go into the next `engine.generate` call as one batch (not a queue of single calls).
import type { Engine, Generation, SampledToken, SamplingParams } from '../engine/index.js';
import type { RgbImage } from '../util/index.js';

/** One prompt to complete. */
export interface BatchJob {
  prompt: number[];
  /** Most new tokens of this job (the batch runs to the largest; each job is cut to its own). */
  maxTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  stopTokenIds: number[];
  stopStrings: string[];
  /** The images of the prompt, in the order of its vision tokens (a vision-language model's chat request). */
  images?: readonly RgbImage[];
  /** A seeded job runs in a batch of its own, so its tokens depend only on (prompt, settings, seed). */
  seed?: number;
  /**
   * Streaming: called with each token of this job as the engine samples it (per decode step on engines that report
   * steps, else all at once when the batch ends); the calls spell out exactly the tokens of the job's Generation.
   * The job's promise resolves as soon as its last token is out, even while the rest of its batch runs on.
   */
  onToken?: (token: number, logprob: number) => void;
}

/** Rejects the jobs of a client that disconnected: dropped before their batch started, or stopped in it. */
export class ClientGone extends Error {
  constructor(message = 'the client disconnected before its batch started; its jobs were dropped') {
    super(message);
    this.name = 'ClientGone';
  }
}

/** Counters of what the batcher did (the load test and `ragen bench serve` read them). */
export interface BatcherStats {
  batches: number;
  jobs: number;
  /** Largest batch one generate call took. */
  maxBatch: number;
  /** Tokens generated (after cutting each job to its max). */
  tokens: number;
}

/** Settings of a Batcher. */
export interface BatcherOptions {
  /** Most prompts per generate call. @default 64 */
  maxBatchSize?: number;
  /** Seed of the batch seeds of unseeded sampled jobs. @default 0 */
  seed?: number;
  /**
   * How long a batch waits for more jobs before it starts (it starts at once when `maxBatchSize` are waiting).
   * A synchronous engine blocks the event loop while it generates, so requests are read between batches: the
   * window lets a burst's requests finish arriving. @default 5
   */
  batchWindowMs?: number;
}

/** The batcher's defaults, the one place they are written (`ragen serve` shows them as its flags' defaults). */
export const BATCHER_DEFAULTS = { maxBatchSize: 64, batchWindowMs: 5 } as const;

interface Pending {
  job: BatchJob;
  key: string;
  resolve: (g: Generation) => void;
  reject: (e: unknown) => void;
  signal: AbortSignal | undefined;
}

/**
 * Queues jobs and runs them through `engine.generate` in batches. Jobs whose sampling settings agree share a
 * call; the rest wait for the next. One call runs at a time: everything submitted while it runs forms the
 * next batch. Per-row results do not depend on the other rows for greedy jobs (the engines' rows are
 * independent); sampled jobs draw from the batch's seed, unless they carry their own.
 */
export class Batcher {
  readonly stats: BatcherStats = { batches: 0, jobs: 0, maxBatch: 0, tokens: 0 };
  private readonly pending: Pending[] = [];
  private running = false;
  private scheduled = false;
  private batchSeed: number;
  private readonly maxBatchSize: number;
  private ownKey = 0;
  private readonly windowMs: number;
  /** Ends the current batch window early (enough jobs are waiting). */
  private wake: (() => void) | undefined;

  constructor(
    private readonly engine: Engine,
    options: BatcherOptions = {},
  ) {
    this.maxBatchSize = options.maxBatchSize ?? BATCHER_DEFAULTS.maxBatchSize;
    this.batchSeed = options.seed ?? 0;
    this.windowMs = options.batchWindowMs ?? BATCHER_DEFAULTS.batchWindowMs;
  }

  /** Jobs waiting for a batch. */
  get waiting(): number {
    return this.pending.length;
  }

  /** Complete one job; an aborted `signal` drops it if it has not started (its promise rejects). */
  submit(job: BatchJob, signal?: AbortSignal): Promise<Generation> {
    return this.submitAll([job], signal)[0]!;
  }

  /**
   * Complete a request's jobs (its choices); an aborted `signal` drops those not started (their promises reject).
   * One abort listener serves them all: one per job made Node warn (MaxListenersExceededWarning) from n = 11.
   */
  submitAll(jobs: readonly BatchJob[], signal?: AbortSignal): Promise<Generation>[] {
    if (signal?.aborted) return jobs.map(() => Promise.reject(new ClientGone()));
    const mine: Pending[] = [];
    const promises = jobs.map(
      (job) =>
        new Promise<Generation>((resolve, reject) => {
          const key = job.seed !== undefined ? `own:${this.ownKey++}` : batchKey(job);
          const p: Pending = { job, key, resolve, reject, signal };
          mine.push(p);
          this.pending.push(p);
        }),
    );
    signal?.addEventListener(
      'abort',
      () => {
        for (const p of mine) {
          const i = this.pending.indexOf(p);
          if (i >= 0) {
            this.pending.splice(i, 1);
            p.reject(new ClientGone());
          }
        }
      },
      { once: true },
    );
    if (this.pending.length >= this.maxBatchSize) this.wake?.();
    this.schedule();
    return promises;
  }

  private schedule(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.loop();
    });
  }

  /** Wait `batchWindowMs` for more jobs, or less once a full batch is waiting. */
  private window(): Promise<void> {
    if (this.windowMs <= 0 || this.pending.length >= this.maxBatchSize) return new Promise((r) => setImmediate(r));
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, this.windowMs);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  private async loop(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.pending.length > 0) {
        // Requests that arrived during the last call (or with the first job) finish arriving, then form the batch.
        await this.window();
        if (this.pending.length === 0) break;
        const key = this.pending[0]!.key;
        const batch: Pending[] = [];
        for (let i = 0; i < this.pending.length && batch.length < this.maxBatchSize;) {
          if (this.pending[i]!.key === key) batch.push(...this.pending.splice(i, 1));
          else i++;
        }
        await this.run(batch);
      }
    } finally {
      this.running = false;
    }
  }

  private async run(batch: Pending[]): Promise<void> {
    const first = batch[0]!.job;
    const streams = batch.some((p) => p.job.onToken) ? batch.map((p) => new JobStream(p)) : undefined;
    const params: SamplingParams = {
      maxNewTokens: Math.max(...batch.map((p) => p.job.maxTokens)),
      temperature: first.temperature,
      ...(first.temperature > 0 ? { topP: first.topP, topK: first.topK } : {}),
      stopTokenIds: first.stopTokenIds,
      ...(first.stopStrings.length > 0 ? { stopStrings: first.stopStrings } : {}),
      seed: first.seed ?? this.nextSeed(),
      ...(batch.some((p) => p.job.images) ? { images: batch.map((p) => p.job.images) } : {}),
      ...(streams
        ? {
            onTokens: (sampled: readonly SampledToken[]) => {
              for (const t of sampled) streams[t.index]!.push(t.token, t.logprob, t.stopped);
            },
          }
        : {}),
      // A job whose client went away stops at the next decode step (on engines that decode step by step).
      ...(batch.some((p) => p.signal) ? { cancelled: (i: number) => batch[i]!.signal?.aborted === true } : {}),
    };
    let gens: Generation[];
    try {
      gens = await this.engine.generate(
        batch.map((p) => p.job.prompt),
        params,
      );
      if (gens.length !== batch.length)
        throw new Error(`engine ${this.engine.kind} returned ${gens.length} generations for ${batch.length} prompts`);
    } catch (err) {
      batch.forEach((p, i) => (streams?.[i]?.settled ? undefined : p.reject(err)));
      return;
    }
    this.stats.batches++;
    this.stats.jobs += batch.length;
    this.stats.maxBatch = Math.max(this.stats.maxBatch, batch.length);
    batch.forEach((p, i) => {
      const g = cut(gens[i]!, p.job.maxTokens);
      this.stats.tokens += g.tokens.length;
      if (p.signal?.aborted && !streams?.[i]!.settled)
        p.reject(
          new ClientGone(
            `the client disconnected while its job ran; it was stopped after ${g.tokens.length} of at most ${p.job.maxTokens} tokens`,
          ),
        );
      else if (streams) streams[i]!.end(g);
      else p.resolve(g);
    });
  }

  private nextSeed(): number {
    this.batchSeed = (Math.imul(this.batchSeed ^ 0x5bd1e995, 0x9e3779b1) + 0x7f4a7c15) >>> 0;
    return this.batchSeed;
  }
}

/** Jobs with equal keys can share a generate call (max tokens may differ: each is cut to its own). */
function batchKey(j: BatchJob): string {
  const filters = j.temperature > 0 ? [j.topP, j.topK] : [];
  return JSON.stringify([j.temperature, ...filters, j.stopTokenIds, j.stopStrings]);
}

/**
 * A generation of a batch that ran to more tokens than this job asked for, cut to `max`: a row's first
 * `max` tokens do not depend on the batch's limit, and a stop past `max` never happened for this job.
 */
export function cut(g: Generation, max: number): Generation {
  if (g.tokens.length <= max) return g;
  return { tokens: g.tokens.slice(0, max), logprobs: g.logprobs.slice(0, max), finishReason: 'length' };
}

/**
 * The tokens of one job of a streaming batch: forwards them to the job's `onToken` (up to its own max tokens) and
 * resolves the job at its last token. At the batch's end, `end` sends what the engine did not report per step and
 * checks that the reported tokens are the Generation's (what a client trains on must be what was sampled).
 */
class JobStream {
  private readonly tokens: number[] = [];
  private readonly logprobs: number[] = [];
  settled = false;

  constructor(private readonly p: Pending) {}

  push(token: number, logprob: number, stopped: boolean): void {
    if (this.settled) return;
    this.tokens.push(token);
    this.logprobs.push(logprob);
    this.p.job.onToken?.(token, logprob);
    const full = this.tokens.length >= this.p.job.maxTokens;
    if (stopped || full)
      this.settle({ tokens: this.tokens, logprobs: this.logprobs, finishReason: stopped ? 'stop' : 'length' });
  }

  end(g: Generation): void {
    if (this.settled) return;
    const n = this.tokens.length;
    if (n > g.tokens.length || this.tokens.some((t, i) => t !== g.tokens[i])) {
      this.settled = true;
      this.p.reject(
        new Error(`engine reported tokens [${this.tokens.join(', ')}] per step but returned [${g.tokens.join(', ')}]`),
      );
      return;
    }
    for (let i = n; i < g.tokens.length; i++) this.p.job.onToken?.(g.tokens[i]!, g.logprobs[i]!);
    this.settle(g);
  }

  private settle(g: Generation): void {
    this.settled = true;
    this.p.resolve(g);
  }
}
