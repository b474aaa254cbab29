// Weights & Biases as a metric sink, through the official `@wandb/sdk` package: an optional peer dependency, imported
// only when `logging.sinks` names `wandb`. Its API key and server come from W&B's own places (WANDB_API_KEY, ~/.netrc,
// WANDB_BASE_URL), as in the Python client.
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
  init(opts: { project?: string; entity?: string; name?: string; config?: unknown; settings?: Record<string, unknown> }): Promise<WandbRun>;
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
}

/** Logs every record as one W&B history row at the record's step; `close` finishes the run and waits for the upload. */
export class WandbSink implements MetricSink {
  private constructor(private readonly run: WandbRun) {}

  /** Start the W&B run (the package is loaded here, so runs without `wandb` never need it). */
  static async open(options: WandbSinkOptions): Promise<WandbSink> {
    const sdk = await loadSdk(options.specifier ?? WANDB_PACKAGE);
    const timeoutMs = options.timeoutMs ?? 60_000;
    const where = process.env.WANDB_BASE_URL || 'https://api.wandb.ai';
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TrackingError(`W&B at ${where} did not start the run within ${timeoutMs / 1000} s; check the network and WANDB_BASE_URL, or remove wandb from logging.sinks.`)), timeoutMs);
    });
    // The SDK prints a failed request's whole response object; hold its lines back and keep the gist for our error.
    const held: unknown[][] = [];
    const consoleError = console.error;
    console.error = (...args: unknown[]) => void held.push(args);
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
      for (const args of held) consoleError(...args); // it started after all: what it said stays visible
      return new WandbSink(run);
    } catch (err) {
      if (err instanceof TrackingError) throw err;
      const said = held.map((args) => String(args[0]).trim().replace(/:$/, '')).filter(Boolean);
      const reason = [...new Set(said), err instanceof Error ? err.message : String(err)].join('; ');
      throw new TrackingError(`W&B at ${where} refused the run (${reason}); set WANDB_API_KEY to a valid key (https://wandb.ai/authorize) and WANDB_BASE_URL for a self-hosted server, or remove wandb from logging.sinks.`);
    } finally {
      clearTimeout(timer);
      console.error = consoleError;
    }
  }

  /** The run's page. */
  get url(): string {
    return this.run.url();
  }

  write(record: MetricRecord): void {
    const data: Record<string, number> = {};
    for (const [k, v] of Object.entries(record)) if (k !== 'step' && k !== 'time') data[k] = v;
    this.run.log(data, record.step);
  }

  close(): Promise<void> {
    return this.run.finish(0);
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
      throw new TrackingError(`logging.sinks names \`wandb\`, but the optional package \`${specifier}\` is not installed; install it beside ragen-ts (\`npm install ${specifier}\`) or remove wandb from logging.sinks.`);
    }
    throw new TrackingError(`\`${specifier}\` is installed but does not load (${message}); reinstall it (\`npm install ${specifier}\`) or remove wandb from logging.sinks.`);
  }
  const sdk = (mod as { default?: unknown }).default ?? mod;
  if (typeof (sdk as { init?: unknown }).init !== 'function') throw new TrackingError(`\`${specifier}\` has no init() function; install a version ragen-ts supports (\`npm install ${WANDB_PACKAGE}@^0.5\`).`);
  return sdk as WandbSdk;
}
