// Incremental detokenization for streaming: the text each new token adds, holding back what is not yet stable
// (a character whose bytes are still arriving, a tail that may begin a stop sequence). The pieces concatenate
// to the whole response's text (`completionText`).
import type { Tokenizer } from '../tokenizer/index.js';

/** Tokens decoded again before the newest (so a decoder that joins neighbours, e.g. around spaces, sees them). */
const CONTEXT_TOKENS = 4;

/**
 * Turns sampled token ids, one at a time, into text deltas. `push` returns the text that is certain now; `finish`
 * returns the rest, given the final text (what the non-streamed response says), so the deltas always sum to it.
 * A stop token is not text (OpenAI leaves it out); text from a stop sequence on is never sent.
 */
export class StreamText {
  private readonly ids: number[] = [];
  /** ids[start, read) were decoded into text already sent or held; ids from `read` on are not yet in it. */
  private start = 0;
  private read = 0;
  /** Stable text so far (sent + held back). */
  private text = '';
  /** Characters of `text` sent. */
  private sent = 0;
  private stopped = false;
  private readonly longestStop: number;

  constructor(
    private readonly tok: Tokenizer,
    private readonly stopTokenIds: readonly number[],
    private readonly stops: readonly string[],
  ) {
    this.longestStop = Math.max(0, ...stops.map((s) => s.length));
  }

  /** The text token `id` makes certain ('' while a character or a possible stop sequence is incomplete). */
  push(id: number): string {
    if (this.stopped || this.stopTokenIds.includes(id)) return '';
    this.ids.push(id);
    const before = this.tok.decode(this.ids.slice(this.start, this.read));
    const now = this.tok.decode(this.ids.slice(this.start));
    // Only a complete extension counts: a trailing U+FFFD is a character whose bytes are still to come.
    if (now.length > before.length && now.startsWith(before) && !now.endsWith('\uFFFD')) {
      this.text += now.slice(before.length);
      this.read = this.ids.length;
      this.start = Math.max(0, this.read - CONTEXT_TOKENS);
    }
    return this.release();
  }

  /** What is left to send of `finalText` (the response's whole text) after the deltas so far. */
  finish(finalText: string): string {
    const sentText = this.text.slice(0, this.sent);
    this.stopped = true;
    if (!finalText.startsWith(sentText)) {
      throw new Error(
        `streamed text ${JSON.stringify(sentText)} is not a prefix of the final text ${JSON.stringify(finalText)}`,
      );
    }
    this.sent = finalText.length;
    return finalText.slice(sentText.length);
  }

  /** Send up to a stop sequence (and stop), or up to the longest tail that may still become one. */
  private release(): string {
    let end = this.text.length;
    if (this.stops.length > 0) {
      const from = Math.max(0, this.sent - this.longestStop);
      let cut = -1;
      for (const s of this.stops) {
        const at = this.text.indexOf(s, from);
        if (at >= 0 && (cut < 0 || at < cut)) cut = at;
      }
      if (cut >= 0) {
        end = cut;
        this.stopped = true;
      } else {
        end = this.text.length - heldTail(this.text, this.stops, this.longestStop);
      }
    }
    if (end <= this.sent) return '';
    const piece = this.text.slice(this.sent, end);
    this.sent = end;
    return piece;
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of a stop sequence. */
function heldTail(text: string, stops: readonly string[], longest: number): number {
  for (let k = Math.min(longest - 1, text.length); k > 0; k--) {
    const tail = text.slice(text.length - k);
    if (stops.some((s) => s.startsWith(tail))) return k;
  }
  return 0;
}
