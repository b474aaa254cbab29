// train: the StarPO trainer (`train`, one step, updates, validation), learning-rate schedules, checkpoint I/O and
// run setup, and the engine opened from a run config (the config itself is src/config's).
export { lrAt, lrScheduleOf, optimizerSettings, type LrSchedule } from './lr-schedule.js';
export {
  MANIFEST_FILE,
  checkpointMetrics,
  isCompleteCheckpoint,
  latestCheckpoint,
  listCheckpoints,
  metricsUpTo,
  pruneCheckpoints,
  readCheckpoint,
  writeCheckpoint,
  type CheckpointRef,
  type CheckpointState,
  type WriteCheckpointOptions,
} from './checkpoint-io.js';
export { openModelDir } from './checkpoint-read.js';
export { createRun, recordResume, resumeRun, runEnvName, RESUME_LOG, type ResumedRun } from './run-setup.js';
export { train, type TrainOptions, type TrainResult } from './trainer.js';
export {
  starpoStep,
  starpoUpdate,
  collectRollout,
  stepSeed,
  lossHorizon,
  type StepContext,
  type StepOutput,
  type CollectedRollout,
} from './step.js';
export type { OffPolicyInfo } from './off-policy.js';
export { AsyncRollouts, VersionClock } from './async-rollouts.js';
export {
  updateActor,
  updateCritic,
  miniBatches,
  type UpdateBatch,
  type BatchSchedule,
  type ActorUpdateStats,
  type CriticUpdateStats,
} from './update.js';
export { validate, validationBatch, type Validation } from './validate.js';
export {
  openModels,
  openLocalModels,
  modelTokenizer,
  localEngineOptions,
  needsReference,
  type TrainerModels,
} from './engine-setup.js';
export { EarlyStopTracker, type EarlyStop, type EarlyStopState } from './early-stop.js';
export { collapseDiagnostics, type CollapseSettings, type CollapseEma } from './collapse-step.js';
export {
  gradientAnalysis,
  analyzeStep,
  gradAnalysisMetrics,
  GRAD_COMPONENTS,
  type GradBucket,
  type GradComponent,
  type GradAnalysisSettings,
  type StepGradAnalysis,
} from './grad-analysis.js';
export { probeGradients, formatProbe, type ProbeOptions, type ProbeReport } from './grad-probe.js';
export { prepareUpdate, filterBatch, actorLossConfig, type PreparedUpdate, type FilteredBatch } from './update-data.js';
export { runSft, presetModelConfig, SIZE_PRESETS } from './sft.js';
export { buildDemos } from './sft-demos.js';
