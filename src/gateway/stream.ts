// The gateway's hold on streamed content: the server's stream (serve/stream.ts) lets text out as the policy samples
// it, except from where a Qwen `<tool_call>` may begin; the parsed calls and the rest of the content go out when
// generation ends, so the deltas sum to the whole answer.
import type { TextHold } from '../serve/index.js';

const OPEN = '<tool_call>';

/**
 * Text deltas that stop short of a tool call: with tools, the longest tail that is whitespace or a prefix of
 * `<tool_call>` is held, and nothing is released once `<tool_call>` appears (parseToolCalls decides at the end
 * whether it is a call or content). Without tools every stable piece goes out at once.
 */
export class ToolHold implements TextHold {
  private text = '';
  private sent = 0;
  private blocked = false;

  constructor(private readonly tools: boolean) {}

  /** Add stable text; returns what may be sent now. */
  push(piece: string): string {
    this.text += piece;
    if (!this.tools) return this.release(this.text.length);
    if (this.blocked) return '';
    const at = this.text.indexOf(OPEN);
    if (at >= 0) {
      this.blocked = true;
      return this.release(trimEndLength(this.text.slice(0, at)));
    }
    let end = this.text.length;
    for (let k = Math.min(OPEN.length - 1, end); k > 0; k--) {
      if (OPEN.startsWith(this.text.slice(end - k))) {
        end -= k;
        break;
      }
    }
    return this.release(trimEndLength(this.text.slice(0, end)));
  }

  /** Text sent so far. */
  get sentText(): string {
    return this.text.slice(0, this.sent);
  }

  private release(end: number): string {
    if (end <= this.sent) return '';
    const piece = this.text.slice(this.sent, end);
    this.sent = end;
    return piece;
  }
}

/**
 * Length of `s` without its trailing whitespace (a newline before `<tool_call>` is not content, see parseToolCalls).
 */
function trimEndLength(s: string): number {
  return s.replace(/\s+$/, '').length;
}
