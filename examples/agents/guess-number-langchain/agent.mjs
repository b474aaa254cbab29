// Guess-the-number played by an agent written with LangChain.js (`@langchain/openai` + `@langchain/core`): a
// `guess` tool bound to ChatOpenAI, the tool-calling loop LangChain's docs write by hand, the reward posted back.
// Started once per episode by the training gateway (OPENAI_BASE_URL, RAGEN_SEED, RAGEN_REWARD_URL); docs/agents.md.
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage } from '@langchain/core/messages';
import { ToolInputParsingException, tool } from '@langchain/core/tools';
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

const guess = tool(
  async ({ n }) => {
    if (found || guesses >= MAX_GUESSES) return 'no guesses left';
    guesses++;
    const reply = answer(n, secret);
    found = reply === 'correct';
    return reply;
  },
  // As a user writes it: a zod schema with the range (sent with `$schema` and `additionalProperties`, which the
  // gateway leaves out of the prompt: docs/agents.md, "Tool schemas").
  {
    name: 'guess',
    description: GUESS_TOOL.description,
    schema: z.object({ n: z.number().int().min(1).max(MAX_NUMBER) }),
  },
);

// ChatOpenAI reads OPENAI_API_KEY itself; the gateway's URL is passed on explicitly. Chat completions is its
// default API for a model name like this one (the gateway has no Responses API).
const model = new ChatOpenAI({
  model: 'policy',
  maxTokens: 64,
  maxRetries: 0,
  configuration: { baseURL: process.env.OPENAI_BASE_URL },
}).bindTools([guess]);

// One model call per guess; stop once the number is found, the guesses are spent or the model answers in text.
const messages = [new HumanMessage(PROMPT)];
for (let turn = 0; turn < MAX_GUESSES && !found; turn++) {
  const reply = await model.invoke(messages);
  messages.push(reply);
  if (!reply.tool_calls?.length) break;
  for (const call of reply.tool_calls) {
    if (call.name !== 'guess') {
      // An unknown tool is the model's mistake: it scores 0 like a wrong guess.
      console.error(
        `episode ${process.env.RAGEN_EPISODE}: the model called an unknown tool ${JSON.stringify(call.name)}`,
      );
      turn = MAX_GUESSES;
      break;
    }
    try {
      messages.push(await guess.invoke(call)); // a ToolMessage answering this call
    } catch (err) {
      // Arguments that fail the schema: LangChain throws ToolInputParsingException; the model's mistake too.
      if (!(err instanceof ToolInputParsingException)) throw err;
      console.error(`episode ${process.env.RAGEN_EPISODE}: ToolInputParsingException: ${err.message}`);
      turn = MAX_GUESSES;
      break;
    }
  }
}

const res = await fetch(process.env.RAGEN_REWARD_URL, {
  method: 'POST',
  body: JSON.stringify({ reward: found ? 1 : 0 }),
});
if (!res.ok) throw new Error(`reporting the reward failed: ${res.status} ${await res.text()}`);
