// SFT demonstrations of the AI SDK agent: binary search played as `guess` tool calls, rendered as the gateway
// renders the agent's calls (src/gateway/tool-demos.ts), with the words and tool schema of task.mjs.
import type { Tokenizer, TrainingSample } from '../../../src/index.js';
import { toolDemoSamples, type ToolDemo } from '../../../src/gateway/index.js';
import { binarySearchGuesses } from '../../../src/envs/index.js';
import { GUESS_TOOL, MAX_NUMBER, PROMPT, answer, secretOf } from './task.mjs';

/**
 * `tools` as the AI SDK's OpenAI chat provider sends `{guess: tool({description, inputSchema})}` (checked by
 * agent.test.ts).
 */
export const SDK_TOOLS = [
  {
    type: 'function',
    function: { name: 'guess', description: GUESS_TOOL.description, parameters: GUESS_TOOL.parameters },
  },
];

/** The demonstration of one seed: binary search's guesses, each answered by the agent's own tool logic. */
export function guessNumberDemo(seed: number): ToolDemo {
  const secret = secretOf(seed);
  return {
    messages: [{ role: 'user', content: PROMPT }],
    tools: SDK_TOOLS,
    steps: binarySearchGuesses(secret, MAX_NUMBER).map((n) => ({
      name: 'guess',
      arguments: { n },
      result: answer(n, secret),
    })),
  };
}

/** Samples of `episodes` demos on seeds from `firstSeed` (the train split: 10000 as RAGEN's seed.train). */
export function guessNumberToolSamples(tokenizer: Tokenizer, episodes: number, firstSeed = 10000): TrainingSample[] {
  return toolDemoSamples(
    tokenizer,
    Array.from({ length: episodes }, (_, i) => guessNumberDemo(firstSeed + i)),
    'GuessNumberAgent',
  );
}
