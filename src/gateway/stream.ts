// The gateway's streamed chat answer: content deltas go out as the policy samples tokens (decoded by serve's
// StreamText, so a character's bytes are never split), held back from where a Qwen `<tool_call>` may begin; the
// parsed tool calls and the rest of the content go out when generation ends, so deltas sum to the whole answer.
import type { ServerResponse } from 'node:http';
import { StreamText, type HandlerContext } from '../serve/index.js';
import type { ToolCall } from './qwen-tools.js';

const OPEN = '<tool_call>';

/**
 * Text deltas that stop short of a tool call: with tools, the longest tail that is whitespace or a prefix of
 * `<tool_call>` is held, and nothing is released once `<tool_call>` appears (parseToolCalls decides at the end
 * whether it is a call or content). Without tools every stable piece goes out at once.
 */
export class ToolHold {
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

/**
 * One streamed chat answer: `start` sends headers and the role, `token` each sampled id, `finish` the rest and [DONE].
 */
export class ChatStream {
  private readonly decoder: StreamText;
  private readonly hold: ToolHold;

  constructor(
    private readonly res: ServerResponse,
    private readonly head: Record<string, unknown>,
    ctx: HandlerContext,
    stop: readonly string[],
    tools: boolean,
  ) {
    this.decoder = new StreamText(ctx.tokenizer, ctx.stopTokenIds, stop);
    this.hold = new ToolHold(tools);
  }

  start(): void {
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
    });
    this.send([delta({ role: 'assistant', content: '' })]);
  }

  /** A sampled id: its text, once certain and not possibly a tool call, as a content delta. */
  token(id: number): void {
    const piece = this.hold.push(this.decoder.push(id));
    if (piece) this.send([delta({ content: piece })]);
  }

  /**
   * The end of the answer: the content not yet sent (`content` is the whole answer's, as the non-streamed response
   * has it), each tool call in one delta, the finish reason, usage if asked, then [DONE].
   */
  finish(
    content: string | null,
    calls: readonly ToolCall[],
    finishReason: string,
    usage: Record<string, number> | undefined,
  ): void {
    const sent = this.hold.sentText;
    const whole = content ?? '';
    if (!whole.startsWith(sent))
      throw new Error(
        `streamed content ${JSON.stringify(sent)} is not a prefix of the answer's content ${JSON.stringify(whole)}`,
      );
    if (whole.length > sent.length) this.send([delta({ content: whole.slice(sent.length) })]);
    calls.forEach((c, i) =>
      this.send([delta({ tool_calls: [{ index: i, id: c.id, type: 'function', function: c.function }] })]),
    );
    this.send([delta({}, finishReason)]);
    if (usage) this.send([], { usage });
    if (!this.res.destroyed) this.res.end('data: [DONE]\n\n');
  }

  private send(choices: unknown[], extra: Record<string, unknown> = {}): void {
    if (!this.res.destroyed)
      this.res.write(
        `data: ${JSON.stringify({ ...this.head, object: 'chat.completion.chunk', choices, ...extra })}\n\n`,
      );
  }
}

function delta(d: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return { index: 0, delta: d, logprobs: null, finish_reason: finishReason };
}
