// A bound on a prompt's text before it is tokenized: no token decodes to more than the vocabulary's longest token, so
// a text longer than contextLength x that many UTF-8 bytes cannot fit the context, and is refused without the work.
import type { Tokenizer } from '../tokenizer/index.js';
import { ApiError } from '../util/index.js';

const longest = new WeakMap<Tokenizer, number>();

/**
 * The most UTF-8 bytes one token of `tokenizer` decodes to (computed once per tokenizer). A byte-level piece that is
 * not whole UTF-8 decodes to U+FFFD (3 bytes for 1), which only loosens the bound: nothing that fits is refused.
 */
export function longestTokenBytes(tokenizer: Tokenizer): number {
  let n = longest.get(tokenizer);
  if (n === undefined) {
    n = 1;
    for (let id = 0; id < tokenizer.vocabSize; id++) n = Math.max(n, Buffer.byteLength(tokenizer.decode([id])));
    longest.set(tokenizer, n);
  }
  return n;
}

/**
 * Throw a 400 (context_length_exceeded) when `text` is too long to fit `contextLength` tokens, before tokenizing it.
 */
export function checkPromptBytes(text: string, tokenizer: Tokenizer, contextLength: number, param: string): void {
  const bytes = Buffer.byteLength(text);
  const most = contextLength * longestTokenBytes(tokenizer);
  if (bytes > most) {
    throw new ApiError(
      400,
      `The prompt is ${bytes} bytes; this model's context of ${contextLength} tokens holds at most ${most} bytes of text (${longestTokenBytes(tokenizer)} per token at most). Shorten the prompt.`,
      'invalid_request_error',
      param,
      'context_length_exceeded',
    );
  }
}
