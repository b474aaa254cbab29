// The sinks of one training run, as `logging.sinks` and `logging.console` choose them: metrics.jsonl always, then
// TensorBoard and W&B when named, the console last; and the run's console log beside them.
import { ConsoleLog } from './console-log.js';
import { ConsoleSink, type ConsoleMode } from './console-sink.js';
import { JsonlSink } from './jsonl-sink.js';
import type { MetricSink } from './logger.js';
import type { RunPaths } from './run-dir.js';
import { TensorBoardSink } from './tensorboard-sink.js';
import { WandbSink, wandbMode, wandbOfflineNote } from './wandb-sink.js';

export type SinkName = 'jsonl' | 'tensorboard' | 'wandb';

export interface RunSinksOptions {
  paths: RunPaths;
  /** `logging.sinks`. */
  sinks: readonly SinkName[];
  /** `logging.wandb`; a null name uses the run directory's name. */
  wandb: { readonly project: string; readonly entity: string | null; readonly name: string | null };
  /** The resolved config, for W&B's config panel. */
  config: unknown;
  console: ConsoleMode;
  totalSteps: number;
  /** The step a resumed run starts after. */
  startStep: number;
  /** The console's stream (tests pass one). @default process.stderr */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
}

export interface RunSinks {
  sinks: MetricSink[];
  /** Lines to print once the logger exists (where W&B shows the run). */
  notes: string[];
  /** The console log; close it after the logger. */
  consoleLog: ConsoleLog;
}

/** Open the run's sinks; what opened before a failure (W&B refusing the run) is closed again. */
export async function openRunSinks(o: RunSinksOptions): Promise<RunSinks> {
  const consoleLog = ConsoleLog.open(o.paths.consoleLog);
  const sinks: MetricSink[] = [new JsonlSink(o.paths.metrics)];
  const notes: string[] = [];
  let consoleSink: ConsoleSink | undefined; // made last; W&B's line about a lost server goes above its progress bar
  const warn = (line: string): void => {
    if (consoleSink && o.console !== 'none') consoleSink.message(line);
    else (o.stream ?? process.stderr).write(`${line}\n`); // stderr is transcribed into console.log
  };
  try {
    if (o.sinks.includes('tensorboard')) {
      sinks.push(new TensorBoardSink({ dir: o.paths.tensorboard, startStep: o.startStep }));
      notes.push(`TensorBoard: tensorboard --logdir ${o.paths.tensorboard}`);
    }
    if (o.sinks.includes('wandb') && wandbMode() === 'offline') notes.push(wandbOfflineNote());
    else if (o.sinks.includes('wandb')) {
      const name = o.wandb.name ?? o.paths.root.split(/[\\/]/).filter(Boolean).pop()!;
      const wandb = await WandbSink.open({
        project: o.wandb.project,
        entity: o.wandb.entity,
        name,
        config: o.config,
        warn,
      });
      sinks.push(wandb);
      notes.push(`W&B: ${wandb.url}`);
    }
  } catch (err) {
    consoleLog.append(`${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}\n`); // printed by the CLI after the log closes
    consoleLog.close();
    throw err;
  }
  consoleSink = new ConsoleSink({
    totalSteps: o.totalSteps,
    startStep: o.startStep,
    mode: o.console,
    transcript: consoleLog,
    ...(o.stream ? { stream: o.stream } : {}),
  });
  sinks.push(consoleSink);
  return { sinks, notes, consoleLog };
}
