// tokenizer: Hugging Face tokenizer.json loading, chat templates (Jinja), Qwen's tokenizer offline, and our tiny BPE
// tokenizer.
export { HfTokenizer, loadTokenizer, readTokenizerFiles, type Tokenizer, type TokenizerFiles } from './tokenizer.js';
export { ChatTemplate, chatTemplateSource, type ChatMessage, type ChatTemplateOptions } from './chat-template.js';
export {
  pyJson,
  toolCallText,
  toolsBlockText,
  toolsSystemText,
  toolResponseText,
  readToolCallBlocks,
  readToolCall,
  TOOL_FORMATS,
  type ToolFormatName,
  promptTool,
  PROMPT_SCHEMA_KEYS,
  type ToolCallBlock,
} from './tool-format.js';
export {
  CHATML_TEMPLATE,
  QWEN25_CHAT_TEMPLATE,
  QWEN25_DEFAULT_SYSTEM,
  RAGEN_QWEN25_TEMPLATE,
  RAGEN_QWEN3_TEMPLATE,
} from './templates.js';
export {
  qwenTokenizerDir,
  loadQwenTokenizer,
  qwenTokenizerFiles,
  ragenQwenTemplate,
  QWEN25_VOCAB_SIZE,
} from './qwen.js';
export { appendOnlyViolation } from './append-only.js';
export { trainBpe, bytesToUnicode, byteSymbols, type BpeModel } from './bpe-train.js';
export {
  trainTinyTokenizer,
  tinyTokenizerDir,
  tinyVLTokenizerDir,
  byteTokenizer,
  saveTokenizerFiles,
  tinyPreTokens,
  TINY_PRETOKENIZE_PATTERN,
  TINY_SPECIAL_TOKENS,
  TINY_TAG_TOKENS,
  type TinyTokenizerOptions,
} from './tiny.js';
export { runTokenizer, type ChatTemplateChoice } from './run-tokenizer.js';
export {
  expandImagePads,
  imageGrid,
  IMAGE_PAD,
  IMAGE_PLACEHOLDER,
  QWEN25_VL_PROCESSOR,
  VISION_END,
  VISION_START,
  visionProcessorFromJson,
  type ImageGrid,
  type VisionProcessor,
} from './vision.js';
export {
  CLIP_MEAN,
  qwen25PreprocessorConfig,
  CLIP_STD,
  pixelValues,
  resizeBicubic,
  TEMPORAL_PATCH_SIZE,
  type PixelValues,
} from './vision-pixels.js';
