// What the MCP env costs per episode: reset (connect + list tools with `session: episode`, or none with `session: env`)
// and one tool call, over stdio (examples/mcp-calculator/server.mjs) and streamable HTTP (the same server with --http).
//   npx tsx src/bench/scripts/mcp-env-cost.ts [--episodes 8]     (from the repository root)
import { spawn } from 'node:child_process';
import { makeEnv } from '../../env/index.js';
import { freePort } from '../../util/index.js';
import '../../envs/index.js';

const at = process.argv.indexOf('--episodes');
const episodes = at >= 0 ? Number(process.argv[at + 1]) : 8;
const base = {
  tasks: { file: 'examples/mcp-calculator/tasks.jsonl' },
  verifier: { module: 'examples/mcp-calculator/verify.mjs' },
};
const call = '<tool_call>{"name": "calculate", "arguments": {"expression": "2 * 21"}}</tool_call>';

async function measure(label: string, config: Record<string, unknown>): Promise<void> {
  const env = makeEnv('MCP', { ...base, ...config });
  let reset = 0;
  let step = 0;
  try {
    for (let i = 0; i < episodes; i++) {
      const t0 = performance.now();
      await env.reset({ seed: i });
      const t1 = performance.now();
      await env.step(call);
      reset += t1 - t0;
      step += performance.now() - t1;
    }
  } finally {
    await env.close();
  }
  console.log(
    `${label.padEnd(28)} reset ${(reset / episodes).toFixed(1).padStart(7)} ms   tool call ${(step / episodes).toFixed(2).padStart(6)} ms   (${episodes} episodes)`,
  );
}

const stdio = { command: process.execPath, args: ['examples/mcp-calculator/server.mjs'] };
await measure('stdio, session episode', { server: stdio });
await measure('stdio, session env', { server: stdio, session: 'env' });
const port = await freePort();
const http = spawn(process.execPath, ['examples/mcp-calculator/server.mjs', '--http', String(port)], {
  stdio: ['ignore', 'ignore', 'pipe'],
});
await new Promise<void>((resolve) => http.stderr!.once('data', () => resolve())); // it prints its URL when listening
try {
  await measure('http, session episode', { server: { url: `http://127.0.0.1:${port}/mcp` } });
  await measure('http, session env', { server: { url: `http://127.0.0.1:${port}/mcp` }, session: 'env' });
} finally {
  http.kill();
}
