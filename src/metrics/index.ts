// metrics: metric names, the logger that averages per interval, its sinks (console, JSONL, TensorBoard, W&B), the run
// directory, its console log, and its one reader (JSONL lines, run summaries) for the dashboard, the trainer's tests
// and the lab.
export {
  METRICS,
  METRIC_FAMILIES,
  GRAD_ANALYSIS_NAMES,
  MISMATCH_TAG_NAMES,
  describeMetric,
  isMetricKey,
  trainEnvMetric,
  mismatchTagMetric,
  valEnvMetric,
  type FixedMetricKey,
  type MetricKey,
} from './names.js';
export { MetricLogger, type MetricRecord, type MetricSink, type MetricValues, type LoggerState } from './logger.js';
export { JsonlSink } from './jsonl-sink.js';
export { parseJsonl, readJsonl, readMetricsFile, type JsonlRead } from './jsonl.js';
export {
  RunIndex,
  runDetail,
  summarize,
  isRunDir,
  readRunConfig,
  LIVE_SECONDS,
  type RunDetail,
  type RunStatus,
  type RunSummary,
} from './runs.js';
export {
  ConsoleSink,
  formatDuration,
  summaryTable,
  valSuccessOf,
  type ConsoleMode,
  type ConsoleSinkOptions,
  type SummaryRow,
} from './console-sink.js';
export { TensorBoardSink, type TensorBoardSinkOptions } from './tensorboard-sink.js';
export { WandbSink, WANDB_PACKAGE, type WandbSinkOptions } from './wandb-sink.js';
export { ConsoleLog, plainText, untranscribed } from './console-log.js';
export { openRunSinks, type RunSinks, type RunSinksOptions, type SinkName } from './run-sinks.js';
export {
  assertNewRunDir,
  createRunDir,
  rolloutFile,
  runDirName,
  runPaths,
  timestamp,
  type RunPaths,
} from './run-dir.js';
export {
  ALLOW_UNVERIFIED_FLAG,
  CHECKPOINT_FORMAT,
  DamagedCheckpointError,
  UnverifiedCheckpointError,
  CHECKPOINT_VERSION,
  MANIFEST_FILE,
  filesIn,
  isCompleteCheckpoint,
  readManifest,
  sha256File,
  sha256BaseFile,
  verifyCheckpoint,
  BaseModelChangedError,
  type CheckpointManifest,
  type ManifestBase,
  type ManifestFile,
  type VerifiedCheckpoint,
  type VerifyCheckpointOptions,
} from './checkpoint-manifest.js';
export { modelCard, type ModelCardInput } from './model-card.js';
export {
  boardHtml,
  buildBoard,
  parseEvalFile,
  wilson,
  type Board,
  type BoardCell,
  type BoardEntry,
} from './leaderboard.js';
