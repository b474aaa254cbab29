// Chat templates: a Hugging Face `chat_template` (Jinja) rendered with @huggingface/jinja the way
// transformers' `apply_chat_template(tokenize=False)` does (trim_blocks/lstrip_blocks, special-token variables).
import { Template } from '@huggingface/jinja';
import { ConfigError, type RgbImage } from '../util/index.js';
import { expandImagePads, type VisionProcessor } from './vision.js';

/** One chat message, OpenAI/transformers style. */
export interface ChatMessage {
  role: string;
  /** The text; each image of `images` sits at an `IMAGE_PLACEHOLDER` (`<|vision_start|><|image_pad|><|vision_end|>`). */
  content: string;
  /** The message's images, in the order of their placeholders in `content`. */
  images?: readonly RgbImage[];
}

/** Options of `renderChatTemplate`, named as transformers names them. */
export interface ChatTemplateOptions {
  /** Append the assistant header so the model continues as the assistant. @default false */
  addGenerationPrompt?: boolean;
  /** Extra variables passed to the template (e.g. `enable_thinking` for Qwen3). */
  extra?: Record<string, unknown>;
  /**
   * A vision-language model's image processor: each image placeholder's `<|image_pad|>` is widened to the image's
   * tokens. Without it, messages with images are refused (a text-only model cannot read them). @default undefined
   */
  vision?: VisionProcessor;
}

/** A parsed chat template plus the special-token variables transformers passes to it. */
export class ChatTemplate {
  private readonly template: Template;

  /**
   * @param source the Jinja source (tokenizer_config.json's `chat_template`)
   * @param specialVars `bos_token`, `eos_token`, `pad_token`, `unk_token` as strings (transformers passes these)
   */
  constructor(
    readonly source: string,
    private readonly specialVars: Record<string, string>,
  ) {
    try {
      this.template = new Template(source);
    } catch (err) {
      throw new ConfigError(
        `The chat template does not parse as Jinja: ${(err as Error).message}. Check tokenizer_config.json's \`chat_template\`.`,
      );
    }
  }

  /** Render `messages` to the prompt string (with `options.vision`, each image's vision tokens in full). */
  render(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    const images = messages.flatMap((m) => m.images ?? []);
    if (images.length > 0 && options.vision === undefined)
      throw new ConfigError(
        `The messages carry ${images.length} image(s) but this model is text-only (no vision processor); send text only, or use a vision-language model.`,
      );
    const text = this.template.render({
      ...this.specialVars,
      ...options.extra,
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      add_generation_prompt: options.addGenerationPrompt ?? false,
    });
    if (options.vision === undefined) return text;
    return expandImagePads(text, images, options.vision);
  }
}

/** The special-token string of a tokenizer_config.json field (a string or an AddedToken object), if any. */
export function tokenString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string')
    return (value as { content: string }).content;
  return undefined;
}

/**
 * The chat template of a tokenizer_config.json: `chat_template` as a string, or the entry named
 * `default` of the list form (`[{name, template}]`) that some models use.
 */
export function chatTemplateSource(config: Record<string, unknown>): string | undefined {
  const t = config['chat_template'];
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) {
    const entry = t.find((e) => e && typeof e === 'object' && (e as { name?: unknown }).name === 'default') as
      { template?: unknown } | undefined;
    if (entry && typeof entry.template === 'string') return entry.template;
  }
  return undefined;
}
