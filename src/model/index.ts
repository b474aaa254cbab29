// model: the Llama / Qwen2 / Qwen3 decoder, Qwen2.5-VL (vision tower, multimodal rotary), LoRA, value head,
// KV-cached generation, safetensors + config.json I/O.
export {
  MODEL_TYPES,
  modelConfig,
  validateConfig,
  configFromHF,
  configToHF,
  generationConfigToHF,
  countParameters,
} from './config.js';
export type { ModelConfig, ModelType } from './config.js';
export {
  parseSafetensors,
  serializeSafetensors,
  readSafetensors,
  readSafetensorsFile,
  writeSafetensors,
  loadWeights,
  loadWeightFiles,
  saveWeights,
  expectWeight,
  halfToFloat,
  DEFAULT_MAX_SHARD_BYTES,
  type SaveWeightsOptions,
} from './safetensors.js';
export type { WeightData, WeightMap } from './safetensors.js';
export { Transformer, weightShapes, layerWeightNames } from './transformer.js';
export type { ForwardOptions, LayerKV, Proj } from './transformer.js';
export { LoraAdapters, LINEAR_MODULES, peftKey } from './lora.js';
export type { AdapterNaming, LoraConfig } from './lora.js';
export {
  ValueHead,
  commonPrefixLength,
  packTokens,
  packSequences,
  tokenForward,
  tokenAligned,
  packedGradient,
} from './forward.js';
export type { PackedBatch, PaddedTokens, TokenOutputs } from './forward.js';
export { KVCache } from './kv-cache.js';
export { generate, generateYielding, contextPastPositions, NonFiniteLogitsError, refuseImages } from './generate.js';
export type { GenerateOptions, SamplingParams, SampledToken, Completion } from './generate.js';
export {
  saveModel,
  loadModel,
  loadModelConfig,
  loadTextConfig,
  weightsDir,
  baseWeightFiles,
  ADAPTER_DIR,
  VALUE_HEAD_FILE,
} from './checkpoint.js';
export type { SaveOptions } from './checkpoint.js';
export { Sampler, argmax } from './sampling.js';
export type { SamplerSettings } from './sampling.js';
export { writeRandomWeights, planShards } from './random-init.js';
export type { InitDtype, RandomWeightsOptions, PlannedTensor } from './random-init.js';
export { modelShape, shapeNames, shapeTablePath } from './shapes.js';
export { isVisionLanguageConfig, vlTextConfig, vlWeightShapes } from './vl-shapes.js';
export type { ModelShape, ShapeFamily } from './shapes.js';
export { isHubId, hubCacheDir, hubRepoDir, cachedHubModel, hubModel } from './hub.js';
export {
  checkRepoId,
  hubToken,
  pushModel,
  HUB_URL,
  type PushFile,
  type PushOptions,
  type PushResult,
} from './hub-push.js';
export type { HubModelOptions } from './hub.js';
export { findModelPath, resolveModelPath, shippedModels, shippedModelsDir } from './model-path.js';
export { FastDecoder } from './decode-fast.js';
export { vlConfigFromHF, vlConfigToHF } from './qwen2-vl-config.js';
export { refuseStrayVisionToken, strayVisionToken, visionTokenIdsFromHF, visionTokens } from './vision-tokens.js';
export type { StrayVisionToken, VisionTokenIds } from './vision-tokens.js';
export { SUPPRESSED_LOGIT, suppressLogits, suppressRow } from './suppress.js';
export type { VLConfig, VisionConfig } from './qwen2-vl-config.js';
export { Qwen25VL, publishedName, isVLConfig } from './qwen2-vl.js';
export type { VisionInput, VLForwardOptions } from './qwen2-vl.js';
export { VisionTower, visionWeightShapes, visionWindows, patchCoordinates } from './vision-tower.js';
export { applyRotary, mropePositions, mropeRotary, visionRotary } from './qwen2-vl-rotary.js';
export type { GridTHW, RotaryTables } from './qwen2-vl-rotary.js';
export {
  generateVL,
  generateVLYielding,
  vlBatchOutputs,
  vlPrefill,
  vlTokenLogprobs,
  vlTokenOutputs,
} from './qwen2-vl-generate.js';
export type { VLTokenOutputOptions } from './qwen2-vl-generate.js';
