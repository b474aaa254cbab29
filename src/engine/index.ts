// engine: the Engine interface and its implementations.
export type {
  Engine,
  SamplingParams,
  SampledToken,
  Generation,
  ModelRole,
  SequenceBatch,
  ForwardResult,
  TrainableEngine,
  TrainableRole,
  OutputGradients,
  BackwardOptions,
  OptimizerSettings,
  OptimizerStepResult,
  EngineSaveOptions,
  TokenBudget,
} from './types.js';
export { chunkTokens, fitsOneChunk } from './token-budget.js';
export { sequenceBatch, rowTokens } from './batch.js';
export { LocalEngine, TokenStats, checkCheckpointFits, frozenBf16, storeFrozen } from './local.js';
export { isVisionCheckpoint } from './local-vision.js';
export { memoryPlan, checkArenaFits, loraParameters } from './memory-plan.js';
export type { MemoryPlan, MemoryPlanInput } from './memory-plan.js';
/** What either engine throws when the policy's logits are not finite (src/model/generate.ts). */
export { NonFiniteLogitsError } from '../model/index.js';
export type { LocalEngineOptions, LocalPretrainedOptions } from './local.js';
export { findTorchPython, pythonCandidates, TORCH_MISSING } from './python.js';
export { TorchEngine } from './torch.js';
export type { TorchEngineOptions, TorchWorkerStats } from './torch.js';
export {
  TORCH_TOKEN_BUDGET,
  TorchWorker,
  TorchWorkerError,
  TorchRequestError,
  stopTorchWorkers,
  workerPackageDir,
} from './torch-worker.js';
export type { TorchWorkerOptions, TorchHello } from './torch-worker.js';
