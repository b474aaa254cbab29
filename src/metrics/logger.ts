// The metric logger: values are appended during a step (several per key is fine: one per mini-batch),
// and every `every` steps each key's mean, skipping NaN, goes to the sinks as one record (TRL's `_metrics` / `log`).
import type { MetricKey } from './names.js';

/** Values to log; keys are checked against names.ts at compile time. */
export type MetricValues = Partial<Record<MetricKey, number>>;

/** One averaged line: the step it closes, the wall-clock time (ms since the epoch), and the means. */
export interface MetricRecord {
  step: number;
  time: number;
  [key: string]: number;
}

/** Where records go (console, metrics.jsonl, tests). */
export interface MetricSink {
  write(record: MetricRecord): void;
  /** A free-form line (early stop, checkpoint saved, warning) that must not break a progress bar. */
  message?(text: string): void;
  /** Flush and release; a remote tracker returns a promise that settles once its upload is done. */
  close?(): void | Promise<void>;
}

/** The pending, not yet averaged values: what a checkpoint saves so a resumed run averages the same. */
export type LoggerState = Record<string, number[]>;

/** Appends per step, averages per interval, skips NaN. */
export class MetricLogger {
  private pending = new Map<string, number[]>();
  private readonly every: number;
  private readonly now: () => number;

  constructor(
    private readonly sinks: MetricSink[],
    options: { every?: number; now?: () => number } = {},
  ) {
    this.every = options.every ?? 1;
    if (!Number.isInteger(this.every) || this.every < 1)
      throw new RangeError(`MetricLogger: every must be an integer >= 1, got ${this.every}`);
    this.now = options.now ?? Date.now;
  }

  /** Append values to the current interval. NaN values are kept out of the means. */
  log(values: MetricValues): void {
    for (const [key, v] of Object.entries(values)) {
      if (v === undefined || Number.isNaN(v)) continue;
      let list = this.pending.get(key);
      if (!list) this.pending.set(key, (list = []));
      list.push(v);
    }
  }

  /**
   * Close step `step`. Every `every` steps (when step % every == 0) the interval's means are written to
   * the sinks and returned; otherwise nothing is written and undefined is returned.
   */
  endStep(step: number): MetricRecord | undefined {
    return step % this.every === 0 ? this.flush(step) : undefined;
  }

  /** Write whatever is pending now, as a record for `step` (the end of a run); undefined when nothing is. */
  flush(step: number): MetricRecord | undefined {
    if (this.pending.size === 0) return undefined;
    const record: MetricRecord = { step, time: this.now() };
    // Keys sorted, so lines of metrics.jsonl diff cleanly between runs.
    for (const key of [...this.pending.keys()].sort()) {
      const list = this.pending.get(key)!;
      record[key] = list.reduce((a, b) => a + b, 0) / list.length;
    }
    this.pending.clear();
    for (const sink of this.sinks) sink.write(record);
    return record;
  }

  /** Send a line to every sink that shows messages. */
  message(text: string): void {
    for (const sink of this.sinks) sink.message?.(text);
  }

  getState(): LoggerState {
    return Object.fromEntries([...this.pending].map(([k, v]) => [k, [...v]]));
  }

  setState(state: LoggerState): void {
    this.pending = new Map(Object.entries(state).map(([k, v]) => [k, [...v]]));
  }

  /** Close every sink (all of them, even when one fails), then rethrow the first failure. */
  async close(): Promise<void> {
    const results = await Promise.allSettled(this.sinks.map(async (sink) => sink.close?.()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}
