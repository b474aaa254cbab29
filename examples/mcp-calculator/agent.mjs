// The calculator task as an agent program, for the training gateway (docs/agents.md): the `openai` client talks to
// OPENAI_BASE_URL (the policy being trained), the MCP SDK client to the server named by RAGEN_MCP_* (mcpAgentEnv in
// src/envs/mcp); the reward (verify.mjs, as the MCP env scores it) goes to RAGEN_REWARD_URL.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { verify } from './verify.mjs';

const env = process.env;
const here = dirname(fileURLToPath(import.meta.url));
const json = (name, fallback) => (env[name] ? JSON.parse(env[name]) : fallback);

if (!env.RAGEN_MCP_URL && !env.RAGEN_MCP_COMMAND) {
  console.error(
    'agent.mjs: set RAGEN_MCP_URL (streamable HTTP) or RAGEN_MCP_COMMAND and RAGEN_MCP_ARGS (stdio), e.g. RAGEN_MCP_COMMAND=node RAGEN_MCP_ARGS=\'["examples/mcp-calculator/server.mjs"]\'.',
  );
  process.exit(2);
}
const transport = env.RAGEN_MCP_URL
  ? new StreamableHTTPClientTransport(new URL(env.RAGEN_MCP_URL), {
      requestInit: { headers: json('RAGEN_MCP_HEADERS', {}) },
    })
  : new StdioClientTransport({
      command: env.RAGEN_MCP_COMMAND,
      args: json('RAGEN_MCP_ARGS', []),
      env: { ...getDefaultEnvironment(), ...json('RAGEN_MCP_ENV', {}) },
      ...(env.RAGEN_MCP_CWD ? { cwd: env.RAGEN_MCP_CWD } : {}),
    });
const mcp = new Client({ name: 'calculator-agent', version: '1.0.0' });
await mcp.connect(transport, { timeout: 30_000 });
// MCP tools -> OpenAI function tools (the gateway shows them to the model in its chat template's tool format)
const { tools } = await mcp.listTools();
const functions = tools
  .filter((t) => t.name === 'calculate')
  .map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.inputSchema },
  }));

const tasks = readFileSync(join(here, 'tasks.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));
const seed = Number(env.RAGEN_SEED ?? 0);
const task = tasks[seed % tasks.length];
const client = new OpenAI({ maxRetries: 0 });
const messages = [
  { role: 'system', content: 'Use the calculate tool, then answer with the number.' },
  { role: 'user', content: task.prompt },
];
const calls = [];
let answer = '';
for (let turn = 0; turn < Number(env.AGENT_MAX_TURNS ?? 3); turn++) {
  const r = await client.chat.completions.create({
    model: 'policy',
    messages,
    tools: functions,
    max_tokens: Number(env.AGENT_MAX_TOKENS ?? 48),
  });
  const msg = r.choices[0].message;
  messages.push({
    role: 'assistant',
    content: msg.content,
    ...(msg.tool_calls?.length ? { tool_calls: msg.tool_calls } : {}),
  });
  if (!msg.tool_calls?.length) {
    answer = msg.content ?? '';
    break;
  }
  for (const c of msg.tool_calls) {
    let result;
    let isError = true;
    try {
      const out = await mcp.callTool(
        { name: c.function.name, arguments: JSON.parse(c.function.arguments) },
        undefined,
        { timeout: 10_000 },
      );
      result = out.content.map((p) => p.text ?? `[${p.type}]`).join('\n');
      isError = out.isError === true;
    } catch (err) {
      result = `error: ${err.message}`; // a bad call is the model's mistake: it sees the error and may try again
    }
    calls.push({ name: c.function.name, arguments: c.function.arguments, result, isError });
    messages.push({ role: 'tool', tool_call_id: c.id, content: result });
  }
}
const { reward } = verify({ task, calls, answer, seed, mode: 'train' });
await fetch(env.RAGEN_REWARD_URL, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ reward }),
});
await mcp.close();
