// SFT demonstrations for agent programs: scripted tool-calling conversations rendered exactly as the gateway renders
// a program's calls (OpenAI messages -> Qwen tool format -> chat template), merged into samples by the gateway's rule.
import type { TrainingSample } from '../agent/index.js';
import type { ChatMessage, Tokenizer } from '../tokenizer/index.js';
import type { CallRecord } from './episodes.js';
import { callText, lowerToolMessages } from './qwen-tools.js';
import { samplesFromCalls } from './samples.js';

/** One demonstrated tool call and the result the program's tool returned for it. */
export interface DemoToolStep {
  name: string;
  arguments: Record<string, unknown>;
  result: string;
}

/** A whole demonstrated episode, as the program would send it. */
export interface ToolDemo {
  /** The messages of the program's first call (e.g. one user turn). */
  messages: readonly Record<string, unknown>[];
  /** `tools` exactly as the program's framework sends them (key order matters: it is rendered into the prompt). */
  tools: readonly unknown[];
  /** The calls, one per model call, in order. */
  steps: readonly DemoToolStep[];
  /** A closing text reply after the last result (when the program makes one more call); none by default. */
  finalText?: string;
}

/**
 * The calls the program would make while the policy plays `demo`: call k's prompt is the chat template over the
 * first messages plus k (assistant tool call, tool result) pairs, written as the OpenAI chat API carries them
 * (content null, arguments as a JSON string) and lowered as the gateway lowers them; its completion is the call in
 * Qwen's `<tool_call>` format followed by the end-of-turn token.
 */
export function toolDemoCalls(tokenizer: Tokenizer, demo: ToolDemo): CallRecord[] {
  const messages: Record<string, unknown>[] = [...demo.messages];
  const calls: CallRecord[] = [];
  const answer = (text: string): void => {
    const lowered = lowerToolMessages(messages, demo.tools, 'auto', tokenizer.toolFormat);
    const rendered = tokenizer.applyChatTemplate(lowered as ChatMessage[], { addGenerationPrompt: true });
    const completionIds = [...tokenizer.encode(text), tokenizer.eosTokenId];
    calls.push({
      index: calls.length,
      promptIds: tokenizer.encode(rendered),
      completionIds,
      logprobs: completionIds.map(() => 0),
      finishReason: 'stop',
      text,
      messages: [...messages],
      tools: [...demo.tools],
    });
  };
  demo.steps.forEach((step, k) => {
    answer(callText({ name: step.name, arguments: step.arguments }, tokenizer.toolFormat));
    const id = `call_${k}`;
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: step.name, arguments: JSON.stringify(step.arguments) } }],
    });
    messages.push({ role: 'tool', tool_call_id: id, content: step.result });
  });
  if (demo.finalText !== undefined) answer(demo.finalText);
  return calls;
}

/**
 * Training samples of demos (loss mask = the demonstrated replies), one group per demo, merged by the gateway's rule.
 */
export function toolDemoSamples(tokenizer: Tokenizer, demos: readonly ToolDemo[], tag: string): TrainingSample[] {
  return demos.flatMap((demo, i) => samplesFromCalls(toolDemoCalls(tokenizer, demo), 1, { episode: i, group: i, tag }));
}
