// Response bodies in OpenAI's shapes: completion/chat choices, logprobs (chat and legacy forms), SSE chunks,
// usage; plus the token ids extension. The text follows OpenAI: stop sequences and a final stop token are
// not in it; `token_ids` and `logprobs` keep every sampled token (what a trainer must see).
import type { Generation } from '../engine/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import type { TopLogprob } from './top-logprobs.js';

/** One finished choice. */
export interface ChoiceResult {
  index: number;
  prompt: number[];
  gen: Generation;
  /** What OpenAI's `text` / `content` holds. */
  text: string;
  /** Alternatives per sampled token, when asked. */
  top: TopLogprob[][] | undefined;
  /** A completion with `echo`: log p(prompt token t | prompt tokens < t), t ≥ 1 (entry 0 is the first token's: null). */
  promptLogprobs?: (number | null)[];
}

/** One function call as OpenAI's chat API carries it (`arguments` is a JSON string). */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A chat choice's reply: its content (null when it is only calls) and the tool calls parsed from its text. */
export interface Answer {
  content: string | null;
  toolCalls: readonly ToolCall[];
}

/** The text of a generation: a final stop token left out, cut before the first stop sequence. */
export function completionText(
  tok: Tokenizer,
  gen: Generation,
  stopTokenIds: readonly number[],
  stop: readonly string[],
): string {
  const ids = contentIds(gen, stopTokenIds);
  const full = tok.decode(ids);
  let end = full.length;
  for (const s of stop) {
    const at = full.indexOf(s);
    if (at >= 0 && at < end) end = at;
  }
  return full.slice(0, end);
}

function contentIds(gen: Generation, stopTokenIds: readonly number[]): number[] {
  const last = gen.tokens[gen.tokens.length - 1];
  return gen.finishReason === 'stop' && last !== undefined && stopTokenIds.includes(last)
    ? gen.tokens.slice(0, -1)
    : gen.tokens;
}

/** Chat-style logprobs (`choices[i].logprobs.content`) of tokens [from, to) of a choice. */
export function chatLogprobs(
  tok: Tokenizer,
  c: ChoiceResult,
  from = 0,
  to = c.gen.tokens.length,
): { content: unknown[] } {
  const entry = (id: number, logprob: number) => {
    const token = tok.decode([id]);
    return { token, logprob, bytes: [...Buffer.from(token, 'utf8')] };
  };
  const content = [];
  for (let i = from; i < to; i++) {
    content.push({
      ...entry(c.gen.tokens[i]!, c.gen.logprobs[i]!),
      top_logprobs: (c.top?.[i] ?? []).map((t) => entry(t.id, t.logprob)),
    });
  }
  return { content };
}

/** Legacy completion logprobs (`tokens`, `token_logprobs`, `top_logprobs`, `text_offset`) of tokens [from, to). */
export function completionLogprobs(
  tok: Tokenizer,
  c: ChoiceResult,
  from = 0,
  to = c.gen.tokens.length,
  offset0 = 0,
): Record<string, unknown> {
  const tokens: string[] = [];
  const offsets: number[] = [];
  let offset = offset0;
  for (let i = from; i < to; i++) {
    const t = tok.decode([c.gen.tokens[i]!]);
    tokens.push(t);
    offsets.push(offset);
    offset += t.length;
  }
  const top = c.top
    ? c.top.slice(from, to).map((alts) => Object.fromEntries(alts.map((a) => [tok.decode([a.id]), a.logprob])))
    : null;
  return { tokens, token_logprobs: c.gen.logprobs.slice(from, to), top_logprobs: top, text_offset: offsets };
}

/**
 * Legacy logprobs of an `echo` choice: the prompt's tokens, then the completion's (OpenAI's layout: the first prompt
 * token's log-prob is null, and prompt positions carry no alternatives).
 */
export function echoLogprobs(tok: Tokenizer, c: ChoiceResult): Record<string, unknown> {
  const tokens: string[] = [];
  const offsets: number[] = [];
  let offset = 0;
  for (const id of c.prompt) {
    const t = tok.decode([id]);
    tokens.push(t);
    offsets.push(offset);
    offset += t.length;
  }
  const rest = completionLogprobs(tok, c, 0, c.gen.tokens.length, tok.decode(c.prompt).length);
  const top = rest['top_logprobs'] as unknown[] | null;
  return {
    tokens: [...tokens, ...(rest['tokens'] as string[])],
    token_logprobs: [...c.promptLogprobs!, ...(rest['token_logprobs'] as number[])],
    top_logprobs: top ? [...c.prompt.map(() => null), ...top] : null,
    text_offset: [...offsets, ...(rest['text_offset'] as number[])],
  };
}

/** OpenAI's usage block: prompt tokens counted once per prompt, completion tokens over every choice. */
export function usage(
  prompts: readonly number[][],
  choices: readonly ChoiceResult[],
): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const p = prompts.reduce((a, x) => a + x.length, 0);
  const c = choices.reduce((a, x) => a + x.gen.tokens.length, 0);
  return { prompt_tokens: p, completion_tokens: c, total_tokens: p + c };
}
