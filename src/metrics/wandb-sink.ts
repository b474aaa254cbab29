// Weights & Biases as a metric sink, through the official `@wandb/sdk` package: an optional peer dependency, imported
// only when `logging.sinks` names `wandb`. Its API key and server come from W&B's own places (WANDB_API_KEY, ~/.netrc,
// WANDB_BASE_URL), as in the Python client. The SDK prints each failed request as a raw "Fatal error" stack and drops
// its rows: the sink holds those lines back (they come from the SDK's own frames) and says once that W&B stopped
// receiving; it cannot write offline runs, so WANDB_MODE=offline/disabled sends nothing and says so (`wandbMode`).
import { TrackingError } from '../util/index.js';
import type { MetricRecord, MetricSink } from './logger.js';

/** The package, named once for the import and the error that says it is missing. */
export const WANDB_PACKAGE = '@wandb/sdk';

/** The part of a `@wandb/sdk` run this sink uses. */
interface WandbRun {
  log(data: Record<string, number>, step?: number): void;
  finish(code?: number): Promise<void>;
  url(): string;
}

/** The part of the package's default export this sink uses. */
interface WandbSdk {
  init(opts: {
    project?: string;
    entity?: string;
    name?: string;
    config?: unknown;
    settings?: Record<string, unknown>;
  }): Promise<WandbRun>;
}

export interface WandbSinkOptions {
  project: string;
  /** null: the API key's default entity. */
  entity: string | null;
  /** The name shown in W&B. */
  name: string;
  /** The resolved config, shown as the run's config. */
  config: unknown;
  /** Give up on `wandb.init` after this long (the SDK retries a failing server for minutes). @default 60000 */
  timeoutMs?: number;
  /** The package to import (tests name a missing one). @default "@wandb/sdk" */
  specifier?: string;
  /** Where the one line about a lost server goes (the trainer passes its console). @default console.error */
  warn?: (line: string) => void;
  /** Longest `close` waits for the SDK to finish once the server is lost. @default 10000 */
  closeTimeoutMs?: number;
}

/** The mode `WANDB_MODE` asks for: `online`, or `offline` (also `disabled`, `dryrun`: nothing goes to W&B). */
export function wandbMode(env: NodeJS.ProcessEnv = process.env): 'online' | 'offline' {
  const mode = (env.WANDB_MODE ?? '').trim().toLowerCase();
  if (mode === '' || mode === 'online' || mode === 'run') return 'online';
  if (mode === 'offline' || mode === 'disabled' || mode === 'dryrun') return 'offline';
  throw new TrackingError(
    `WANDB_MODE=${env.WANDB_MODE} is not a W&B mode; set online, offline or disabled (or unset it).`,
  );
}

/** The line a run prints when WANDB_MODE keeps W&B off the network. */
export function wandbOfflineNote(): string {
  return `W&B: WANDB_MODE=${process.env.WANDB_MODE} honoured: nothing is sent to W&B (${WANDB_PACKAGE} cannot write an offline run to sync later); metrics.jsonl holds every metric.`;
}

/** Whether the calling code runs inside the SDK's files (its retry helper prints failed requests with console.*). */
function calledFromSdk(): boolean {
  return /[\\/]@wandb[\\/]sdk[\\/]/.test(new Error().stack ?? '');
}

/** The gist of a line the SDK printed: its text and the error's own message (a FetchError's reason). */
function gist(args: unknown[]): string {
  const text = String(args[0] ?? '')
    .trim()
    .replace(/:$/, '');
  const err = args.find((a): a is Error => a instanceof Error);
  return err ? `${text}: ${err.message}` : text;
}

/** Whether what the SDK printed is a network failure (no answer at all), not a refusal by the server. */
function unreachable(lines: unknown[][]): boolean {
  return lines.some((args) =>
    args.some(
      (a) =>
        a instanceof Error &&
        ((a as { type?: string }).type === 'system' ||
          a.name === 'FetchError' ||
          /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ECONNRESET/.test(a.message)),
    ),
  );
}

/**
 * Routes console.error/console.log calls made from the SDK's own code to `onSdk` while installed; every other call
 * goes through untouched. Returns the function that uninstalls it.
 */
function containSdkOutput(onSdk: (args: unknown[]) => void): () => void {
  const original = { error: console.error, log: console.log };
  const wrap = (name: 'error' | 'log') =>
    function (...args: unknown[]): void {
      if (calledFromSdk()) onSdk(args);
      else original[name].apply(console, args);
    };
  const installed = { error: wrap('error'), log: wrap('log') };
  console.error = installed.error;
  console.log = installed.log;
  return () => {
    if (console.error === installed.error) console.error = original.error;
    if (console.log === installed.log) console.log = original.log;
  };
}

/** Logs every record as one W&B history row at the record's step; `close` finishes the run and waits for the upload. */
export class WandbSink implements MetricSink {
  /** The step the server was lost at (undefined while it receives); the line about it is said once. */
  private lostAt: number | undefined;
  private lastStep = 0;
  private release: () => void = () => {};

  private constructor(
    private readonly run: WandbRun,
    private readonly where: string,
    private readonly warn: (line: string) => void,
    private readonly closeTimeoutMs: number,
  ) {}

  /** Called for each line the SDK prints once the run started: a failed request means the server is lost. */
  private onSdkLine(args: unknown[]): void {
    if (/^Retrying failed request/.test(String(args[0] ?? ''))) return; // a 5xx being retried: not lost yet
    if (this.lostAt !== undefined) return;
    this.lostAt = Math.max(this.lastStep, 1);
    this.warn(
      `W&B sink: ${this.where} stopped receiving at step ${this.lostAt} (${gist(args)}); W&B gets no metrics from step ${this.lostAt} on (rows of the few seconds before may be lost too), the run goes on, and metrics.jsonl keeps every step.`,
    );
  }

  /** Start the W&B run (the package is loaded here, so runs without `wandb` never need it). */
  static async open(options: WandbSinkOptions): Promise<WandbSink> {
    if (wandbMode() === 'offline')
      throw new TrackingError(
        `WANDB_MODE=${process.env.WANDB_MODE}: the W&B sink does not start offline; openRunSinks leaves it out.`,
      );
    const sdk = await loadSdk(options.specifier ?? WANDB_PACKAGE);
    const timeoutMs = options.timeoutMs ?? 60_000;
    const where = process.env.WANDB_BASE_URL || 'https://api.wandb.ai';
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new TrackingError(
              `W&B at ${where} did not start the run within ${timeoutMs / 1000} s; check the network and WANDB_BASE_URL, or remove wandb from logging.sinks.`,
            ),
          ),
        timeoutMs,
      );
    });
    // The SDK prints a failed request's whole response object; hold its lines back and keep the gist for our error.
    const held: unknown[][] = [];
    let sink: WandbSink | undefined;
    const release = containSdkOutput((args) => (sink ? sink.onSdkLine(args) : held.push(args)));
    try {
      const run = await Promise.race([
        sdk.init({
          project: options.project,
          ...(options.entity !== null ? { entity: options.entity } : {}),
          name: options.name,
          config: options.config,
          settings: { silent: true }, // the trainer prints the run's URL itself, above the progress bar
        }),
        timeout,
      ]);
      sink = new WandbSink(
        run,
        where,
        options.warn ?? ((line) => console.error(line)),
        options.closeTimeoutMs ?? 10_000,
      );
      sink.release = release;
      for (const args of held) console.error(gist(args)); // it started after all: what it said stays visible, in brief
      return sink;
    } catch (err) {
      release();
      if (err instanceof TrackingError) throw err;
      const said = held.map(gist).filter(Boolean);
      const reason = [...new Set(said), err instanceof Error ? err.message : String(err)].join('; ');
      if (unreachable(held))
        throw new TrackingError(
          `W&B at ${where} cannot be reached (${reason}); check the network and WANDB_BASE_URL, or set WANDB_MODE=offline (or remove wandb from logging.sinks) to train without it.`,
        );
      throw new TrackingError(
        `W&B at ${where} refused the run (${reason}); set WANDB_API_KEY to a valid key (https://wandb.ai/authorize) and WANDB_BASE_URL for a self-hosted server, or remove wandb from logging.sinks.`,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** The step W&B stopped receiving at, or undefined while it receives. */
  get lostAtStep(): number | undefined {
    return this.lostAt;
  }

  /** The run's page. */
  get url(): string {
    return this.run.url();
  }

  write(record: MetricRecord): void {
    this.lastStep = record.step;
    if (this.lostAt !== undefined) return; // the server is gone (said once): the SDK would only print another stack per batch
    const data: Record<string, number> = {};
    for (const [k, v] of Object.entries(record)) if (k !== 'step' && k !== 'time') data[k] = v;
    this.run.log(data, record.step);
  }

  /** Finish the run and wait for the upload; once the server is lost, wait at most `closeTimeoutMs` and say so. */
  async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const lost = this.lostAt !== undefined;
    try {
      const finished = this.run.finish(0).then(() => true);
      const waited = lost
        ? await Promise.race([
            finished,
            new Promise<false>((r) => (timer = setTimeout(() => r(false), this.closeTimeoutMs))),
          ])
        : await finished;
      if (!waited)
        this.warn(
          `W&B sink: gave up finishing the W&B run after ${this.closeTimeoutMs / 1000} s (${this.where} is lost).`,
        );
    } finally {
      clearTimeout(timer);
      this.release();
    }
  }
}

async function loadSdk(specifier: string): Promise<WandbSdk> {
  let mod: unknown;
  try {
    mod = await import(specifier);
  } catch (err) {
    const code = (err as { code?: string }).code;
    const message = err instanceof Error ? err.message : String(err);
    // Node names the package it could not find in quotes; a missing dependency *of* the SDK is another failure.
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && message.includes(`'${specifier}'`)) {
      throw new TrackingError(
        `logging.sinks names \`wandb\`, but the optional package \`${specifier}\` is not installed; install it beside ragen-ts (\`npm install ${specifier}\`) or remove wandb from logging.sinks.`,
      );
    }
    throw new TrackingError(
      `\`${specifier}\` is installed but does not load (${message}); reinstall it (\`npm install ${specifier}\`) or remove wandb from logging.sinks.`,
    );
  }
  const sdk = (mod as { default?: unknown }).default ?? mod;
  if (typeof (sdk as { init?: unknown }).init !== 'function')
    throw new TrackingError(
      `\`${specifier}\` has no init() function; install a version ragen-ts supports (\`npm install ${WANDB_PACKAGE}@^0.5\`).`,
    );
  return sdk as WandbSdk;
}
