// The console: a progress bar with ETA and the live reward, success, validation success, entropy and step time
// (cli-progress + picocolors) on a terminal, or one plain line per record when output is piped or logged.
import cliProgress from 'cli-progress';
import pc from 'picocolors';
import { untranscribed } from './console-log.js';
import type { MetricRecord, MetricSink } from './logger.js';

/** Console modes: `auto` picks `bar` on a TTY and `plain` otherwise. */
export type ConsoleMode = 'auto' | 'bar' | 'plain' | 'none';

export interface ConsoleSinkOptions {
  /** The run's last step. */
  totalSteps: number;
  /** The step the run starts after (a resumed run's checkpoint step). @default 0 */
  startStep?: number;
  /** @default 'auto' */
  mode?: ConsoleMode;
  /** @default process.stderr */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Clock in ms, for the plain mode's ETA (tests pass a fake one). @default Date.now */
  now?: () => number;
  /**
   * The run's console log. With one, the bar draws past it (its redraws would fill the file) and each record's plain
   * line and each message go to it instead, so the log reads like piped output.
   */
  transcript?: { append(text: string): void };
}

/** The latest of the numbers the console shows, remembered across records (validation is not every step). */
interface Live {
  reward?: number;
  success?: number;
  val?: number;
  entropy?: number;
  stepTime?: number;
}

const fmt = (v: number | undefined, digits = 3): string =>
  v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits);

/** "1h02m", "12m05s", "42s". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '-';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h > 0) return `${h}h${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

/** The mean of the `val/<tag>/success` keys in a record (or its `val/success`), if any. */
export function valSuccessOf(record: MetricRecord): number | undefined {
  if (record['val/success'] !== undefined) return record['val/success'];
  const vals = Object.entries(record)
    .filter(([k]) => /^val\/[^/]+\/success$/.test(k))
    .map(([, v]) => v);
  return vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : undefined;
}

/** Prints progress; write() takes the logger's records, message() prints a line above the bar. */
export class ConsoleSink implements MetricSink {
  private readonly mode: Exclude<ConsoleMode, 'auto'>;
  private readonly stream: NodeJS.WritableStream;
  private readonly total: number;
  private readonly now: () => number;
  private readonly started: { time: number; step: number };
  private live: Live = {};
  private multibar?: cliProgress.MultiBar;
  private bar?: cliProgress.SingleBar;
  private readonly transcript?: { append(text: string): void };

  constructor(options: ConsoleSinkOptions) {
    this.stream = options.stream ?? process.stderr;
    const mode = options.mode ?? 'auto';
    this.mode = mode === 'auto' ? ((this.stream as { isTTY?: boolean }).isTTY ? 'bar' : 'plain') : mode;
    this.total = options.totalSteps;
    this.now = options.now ?? Date.now;
    this.started = { time: this.now(), step: options.startStep ?? 0 };
    if (this.mode === 'bar') {
      this.transcript = options.transcript;
      this.multibar = new cliProgress.MultiBar(
        {
          stream: this.transcript ? untranscribed(this.stream) : this.stream,
          format: `${pc.cyan('{bar}')} {value}/{total} steps | ETA {eta_formatted} | {stats}`,
          hideCursor: true,
          etaBuffer: 20,
          fps: 5,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar = this.multibar.create(this.total, this.started.step, {
        stats: pc.dim('waiting for the first step...'),
      });
    }
  }

  write(record: MetricRecord): void {
    const r = record;
    this.live = {
      reward: r['train/reward_mean'] ?? this.live.reward,
      success: r['train/success'] ?? this.live.success,
      val: valSuccessOf(r) ?? this.live.val,
      entropy: r['actor/entropy'] ?? this.live.entropy,
      stepTime: r['timing_s/step'] ?? this.live.stepTime,
    };
    const plain = `step ${record.step}/${this.total} | ${this.stats(false)} | eta ${formatDuration(this.etaSeconds(record.step))}`;
    if (this.mode === 'bar') {
      this.bar!.update(record.step, { stats: this.stats(true) });
      this.transcript?.append(`${plain}\n`);
    } else if (this.mode === 'plain') this.line(plain);
  }

  message(text: string): void {
    if (this.mode === 'bar') {
      this.multibar!.log(`${text}\n`);
      this.transcript?.append(`${text}\n`);
    } else if (this.mode === 'plain') this.line(text);
  }

  close(): void {
    this.multibar?.stop();
  }

  private stats(color: boolean): string {
    const l = this.live;
    const paint = (s: string, f: (x: string) => string) => (color ? f(s) : s);
    return [
      `reward ${paint(fmt(l.reward), pc.yellow)}`,
      `success ${paint(fmt(l.success), pc.green)}`,
      `val ${paint(fmt(l.val), pc.bold)}`,
      `entropy ${fmt(l.entropy)}`,
      `${fmt(l.stepTime, 2)} s/step`,
    ].join(' | ');
  }

  // Mean wall time per step since the sink started (resumed runs count from their start step).
  private etaSeconds(step: number): number {
    const done = step - this.started.step;
    if (done <= 0) return Number.NaN;
    return (((this.now() - this.started.time) / 1000) * (this.total - step)) / done;
  }

  private line(text: string): void {
    this.stream.write(`${text}\n`);
  }
}

/** One row of the end-of-run table: an env tag's validation success before and after training. */
export interface SummaryRow {
  tag: string;
  before?: number;
  after?: number;
}

/** The end-of-run table, e.g. `SimpleSokoban   0.312 -> 0.547  (+0.234)`, aligned, plain text. */
export function summaryTable(rows: readonly SummaryRow[]): string {
  const width = Math.max(3, ...rows.map((r) => r.tag.length));
  const head = `${'env'.padEnd(width)}  before    after     change`;
  const body = rows.map((r) => {
    const change =
      r.before !== undefined && r.after !== undefined
        ? `${r.after - r.before >= 0 ? '+' : ''}${(r.after - r.before).toFixed(3)}`
        : '-';
    return `${r.tag.padEnd(width)}  ${fmt(r.before).padEnd(8)}  ${fmt(r.after).padEnd(8)}  ${change}`;
  });
  return [head, ...body].join('\n');
}
