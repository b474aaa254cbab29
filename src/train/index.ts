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
export { train, type TrainResult } from './trainer.js';
export { openRun, type OpenedRun, type TrainOptions } from './open-run.js';
export { RunState, saveCheckpoint, type StatePiece } from './run-state.js';
export { trainLoop, type Session } from './loop.js';
export {
  starpoStep,
  starpoUpdate,
  collectRollout,
  filterBatch,
  prepareKept,
  stepSeed,
  lossHorizon,
  type StepContext,
  type StepOutput,
  type CollectedRollout,
  type FilteredBatch,
  type PreparedUpdate,
} from './step.js';
export {
  family,
  stepSettings,
  actorLossConfig,
  type StepBatch,
  type StepSettings,
  type StageOutput,
  type TokenArray,
} from './step-batch.js';
export { collateStage } from './stage-collate.js';
export { filterStage } from './stage-filter.js';
export { scoreStage } from './stage-score.js';
export { advantagesStage, type AdvantageInputs } from './stage-advantages.js';
export type { OffPolicyInfo } from './off-policy.js';
export { AsyncRollouts, VersionClock } from './async-rollouts.js';
export {
  runUpdate,
  updateStage,
  updateActor,
  updateCritic,
  actorLossGrad,
  criticLossGrad,
  miniBatches,
  type LossGrad,
  type MicroLoss,
  type UpdateStats,
  type UpdateBatch,
  type BatchSchedule,
  type ActorUpdateStats,
  type CriticUpdateStats,
} from './stage-update.js';
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
export { runSft, presetModelConfig, presetVLConfig, SFT_VL_PROCESSOR, SIZE_PRESETS, VL_SIZE_PRESETS } from './sft.js';
export { buildDemos, DEMO_REASONING } from './sft-demos.js';
