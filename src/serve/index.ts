// serve: an OpenAI-compatible HTTP server over any Engine (`ragen serve`), with request batching.
export { OpenAIServer, type ServeOptions } from './server.js';
export {
  Batcher,
  BATCHER_DEFAULTS,
  ClientGone,
  cut,
  type BatchJob,
  type BatcherStats,
  type BatcherOptions,
} from './batcher.js';
export { ApiError } from './errors.js';
export { localTopLogprobs, topK, type TopLogprob, type TopLogprobsSource } from './top-logprobs.js';
export {
  parseChatRequest,
  parseCompletionRequest,
  type ChatRequest,
  type CompletionRequest,
  type SamplingRequest,
} from './requests.js';
export {
  localServeTarget,
  torchServeTarget,
  type ModelDirResolver,
  type ServeTarget,
  type TorchServeOptions,
} from './load.js';
export { readJsonBody } from './body.js';
export { chatPromptIds, choiceJobs, handlerContext, runChoices, type HandlerContext } from './handlers.js';
export { StreamText } from './stream-text.js';
export { completionText } from './responses.js';
export type { ChoiceResult } from './responses.js';
export { badParam, preview } from './errors.js';
