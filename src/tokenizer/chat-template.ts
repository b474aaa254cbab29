// Chat templates: a Hugging Face `chat_template` (Jinja) rendered with @huggingface/jinja the way
// transformers' `apply_chat_template(tokenize=False)` does (trim_blocks/lstrip_blocks, special-token variables).
import { Template } from '@huggingface/jinja';
import { ConfigError } from '../util/index.js';

/** One chat message, OpenAI/transformers style. */
export interface ChatMessage {
  role: string;
  content: string;
}

/** Options of `renderChatTemplate`, named as transformers names them. */
export interface ChatTemplateOptions {
  /** Append the assistant header so the model continues as the assistant. @default false */
  addGenerationPrompt?: boolean;
  /** Extra variables passed to the template (e.g. `enable_thinking` for Qwen3). */
  extra?: Record<string, unknown>;
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

  /** Render `messages` to the prompt string. */
  render(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    return this.template.render({
      ...this.specialVars,
      ...options.extra,
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      add_generation_prompt: options.addGenerationPrompt ?? false,
    });
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
