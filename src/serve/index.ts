// serve: the OpenAI-compatible HTTP server over any Engine (`ragen serve`; the training gateway is its episode mode),
// with request batching.
export {
  OpenAIServer,
  type AnsweredCall,
  type RequestTransform,
  type RoutePrefix,
  type ServeOptions,
  type Transformed,
} from './server.js';
export {
  Batcher,
  BATCHER_DEFAULTS,
  ClientGone,
  cut,
  type BatchJob,
  type BatcherStats,
  type BatcherOptions,
} from './batcher.js';
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
export type { TextHold } from './stream.js';
export type { Answer, ToolCall } from './responses.js';
// The OpenAI error type and its helpers live in util/http.ts (every server's); re-exported for serve's users.
export { ApiError, badParam, preview } from '../util/index.js';
