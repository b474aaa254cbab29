// Guess-the-number played by an agent written with the OpenAI Agents SDK (`@openai/agents`): a `guess` tool
// answers higher/lower/correct, the SDK's run loop calls the model and the tool, and the reward is posted back.
// Started once per episode by the training gateway (OPENAI_BASE_URL, RAGEN_SEED, RAGEN_REWARD_URL); docs/agents.md.
import {
  Agent,
  MaxTurnsExceededError,
  ModelBehaviorError,
  run,
  setOpenAIAPI,
  setTracingDisabled,
  tool,
} from '@openai/agents';
import { z } from 'zod';
import { GUESS_TOOL, MAX_GUESSES, MAX_NUMBER, PROMPT, answer, secretOf } from '../guess-number-ai-sdk/task.mjs';

const seed = Number(process.env.RAGEN_SEED);
if (!Number.isSafeInteger(seed)) {
  console.error(
    `RAGEN_SEED must be an integer, got ${JSON.stringify(process.env.RAGEN_SEED)}; run this agent through the gateway (docs/agents.md).`,
  );
  process.exit(2);
}
const secret = secretOf(seed);
let guesses = 0;
let found = false;

// The gateway serves /v1/chat/completions: the SDK's default is the Responses API. Its traces go to OpenAI's
// servers by default; an episode has no business there.
setOpenAIAPI('chat_completions');
setTracingDisabled(true);

const guess = tool({
  name: 'guess',
  description: GUESS_TOOL.description,
  // As a user writes it: a zod schema with the range. The SDK sends it with `$schema`, `additionalProperties` and
  // `strict`; the gateway renders only what a tool schema says to the model (docs/agents.md, "Tool schemas").
  parameters: z.object({ n: z.number().int().min(1).max(MAX_NUMBER) }),
  execute: async ({ n }) => {
    if (found || guesses >= MAX_GUESSES) return 'no guesses left';
    guesses++;
    const reply = answer(n, secret);
    found = reply === 'correct';
    return reply;
  },
});

const agent = new Agent({
  name: 'guesser',
  model: 'policy',
  tools: [guess],
  modelSettings: { maxTokens: 64 }, // a call in Qwen's format is ~50 tokens of the tiny tokenizer
  // one model call per guess; stop once the number is found or the guesses are spent
  toolUseBehavior: () =>
    found || guesses >= MAX_GUESSES
      ? { isFinalOutput: true, isInterrupted: undefined, finalOutput: found ? 'found' : 'not found' }
      : { isFinalOutput: false, isInterrupted: undefined },
});

try {
  await run(agent, PROMPT, { maxTurns: MAX_GUESSES });
} catch (err) {
  // A reply the SDK cannot use (an unknown tool, arguments that fail the schema) or guesses that never end is the
  // model's mistake: it scores 0 like a wrong guess. Anything else (the gateway unreachable) exits non-zero.
  if (!(err instanceof ModelBehaviorError || err instanceof MaxTurnsExceededError)) throw err;
  console.error(`episode ${process.env.RAGEN_EPISODE}: ${err.name}: ${err.message}`);
}

const res = await fetch(process.env.RAGEN_REWARD_URL, {
  method: 'POST',
  body: JSON.stringify({ reward: found ? 1 : 0 }),
});
if (!res.ok) throw new Error(`reporting the reward failed: ${res.status} ${await res.text()}`);
