// Guess-the-number played by an agent written with the Vercel AI SDK (`ai` + `@ai-sdk/openai`): a `guess` tool
// answers higher/lower/correct, the model calls it through chat completions, and the reward is posted back.
// Started once per episode by the training gateway (OPENAI_BASE_URL, RAGEN_SEED, RAGEN_REWARD_URL); docs/agents.md.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { GUESS_TOOL, MAX_GUESSES, PROMPT, answer, secretOf } from './task.mjs';

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

const guess = tool({
  description: GUESS_TOOL.description,
  inputSchema: jsonSchema(GUESS_TOOL.parameters),
  execute: async ({ n }) => {
    if (found || guesses >= MAX_GUESSES) return 'no guesses left';
    guesses++;
    const reply = answer(n, secret);
    found = reply === 'correct';
    return reply;
  },
});

// The gateway serves /v1/chat/completions, so the chat model (`.chat`), not the Responses API.
const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
try {
  await generateText({
    model: openai.chat('policy'),
    prompt: PROMPT,
    tools: { guess },
    // one model call per guess; stop once the number is found or the guesses are spent
    stopWhen: [stepCountIs(MAX_GUESSES), () => found],
    maxOutputTokens: 64, // a call in Qwen's format is ~50 tokens of the tiny tokenizer
    maxRetries: 0,
  });
} catch (err) {
  // A reply the SDK cannot use (an unknown tool, arguments that are not JSON) is the model's mistake: it scores 0
  // like a wrong guess. Anything else (the gateway unreachable) is a real failure: exit non-zero.
  if (!['AI_NoSuchToolError', 'AI_InvalidToolInputError', 'AI_ToolCallRepairError'].includes(err?.name)) throw err;
  console.error(`episode ${process.env.RAGEN_EPISODE}: ${err.name}: ${err.message}`);
}

const res = await fetch(process.env.RAGEN_REWARD_URL, {
  method: 'POST',
  body: JSON.stringify({ reward: found ? 1 : 0 }),
});
if (!res.ok) throw new Error(`reporting the reward failed: ${res.status} ${await res.text()}`);
