// An agent program for the training gateway (written by `ragen new agent`): one task per seed, chat completions
// against OPENAI_BASE_URL (the policy being trained), and the reward posted to RAGEN_REWARD_URL. Any OpenAI-
// compatible client works the same way (the OpenAI SDK, the Vercel AI SDK, LangChain, the OpenAI Agents SDK in
// chat-completions mode); plain fetch keeps this file free of dependencies. docs/agents.md explains each variable.
const seed = Number(process.env.RAGEN_SEED);
if (!Number.isSafeInteger(seed)) {
  console.error(
    `RAGEN_SEED must be an integer, got ${JSON.stringify(process.env.RAGEN_SEED)}: run me through \`ragen train\`.`,
  );
  process.exit(2);
}

// The task comes from the seed alone, so every member of a group gets the same one.
const a = 1 + (seed % 7);
const b = 1 + (Math.floor(seed / 7) % 7);

const res = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
  body: JSON.stringify({
    model: 'policy',
    messages: [{ role: 'user', content: `What is ${a} + ${b}? Reply with the number only.` }],
    max_tokens: 16,
  }),
});
if (!res.ok) throw new Error(`the gateway answered ${res.status}: ${await res.text()}`);
const reply = (await res.json()).choices[0].message.content ?? '';
const correct = reply.match(/-?\d+/)?.[0] === String(a + b);

const posted = await fetch(process.env.RAGEN_REWARD_URL, {
  method: 'POST',
  body: JSON.stringify({ reward: correct ? 1 : 0 }),
});
if (!posted.ok) throw new Error(`reporting the reward failed: ${posted.status} ${await posted.text()}`);
