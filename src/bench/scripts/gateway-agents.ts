// What the ways of writing an agent cost on the gateway: episodes/s of an in-process function against a node program
// (same one call, same reward), and time to the first streamed content delta against the whole answer, from a client
// in the same process and from curl.
//   npx tsx src/bench/scripts/gateway-agents.ts [--episodes 8] [--calls 10]
import '../../envs/index.js'; // the built-in environments
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { Gateway, runAgentEpisodes, type AgentContext, type AgentProgram } from '../../gateway/index.js';
import { localServeTarget } from '../../serve/index.js';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const EPISODES = arg('episodes', 8);
const CALLS = arg('calls', 10);
const root = fileURLToPath(new URL('../../..', import.meta.url));
const target = await localServeTarget(join(root, 'models', 'ragen-tiny'), (d) => d, { name: 'tiny' });
const gw = new Gateway({ ...target, maxTokens: 128 });
await gw.listen(0);
const ask = { model: 'p', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 16, temperature: 0 };

// 1. Episodes/s: one call + a reward, as a node program (a process each) and as an in-process function.
const dir = mkdtempSync(join(os.tmpdir(), 'ragen-gw-agents-'));
const file = join(dir, 'one-call.mjs');
writeFileSync(
  file,
  `import OpenAI from '${pathToFileURL(join(root, 'node_modules', 'openai', 'index.mjs')).href}';
await new OpenAI({ maxRetries: 0 }).chat.completions.create(${JSON.stringify(ask)});
console.log(JSON.stringify({ reward: 1 }));`,
);
const inProcess = async (ctx: AgentContext) => {
  await new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 }).chat.completions.create(ask, {
    signal: ctx.signal,
  });
  return 1;
};
const programs: [string, AgentProgram][] = [
  ['node program', { command: `node ${JSON.stringify(file)}`, timeoutS: 60 }],
  ['in-process', { agent: inProcess, timeoutS: 60 }],
];
for (const concurrency of [1, 2]) {
  for (const [name, program] of programs) {
    const tasks = Array.from({ length: EPISODES }, (_, i) => ({
      episodeId: `${name.replace(/\W/g, '')}-c${concurrency}-${i}`,
      seed: i,
      group: 0,
    }));
    const t = performance.now();
    const outs = await runAgentEpisodes(gw, program, tasks, { concurrency });
    const s = (performance.now() - t) / 1000;
    console.log(
      `${name}, concurrency ${concurrency}: ${(EPISODES / s).toFixed(2)} episodes/s (${outs.filter((o) => o.status === 'ok').length}/${EPISODES} ok)`,
    );
  }
}
rmSync(dir, { recursive: true, force: true });

// 2. Streaming: a 64-token sampled answer; ms to the first content delta and to the end, streamed and not.
const client = new OpenAI({ baseURL: gw.open('stream', { maxCalls: 1e9 }).baseUrl, apiKey: 'x', maxRetries: 0 });
const long = {
  model: 'p',
  messages: [{ role: 'user' as const, content: 'Tell me a long story about boxes.' }],
  max_tokens: 64,
  temperature: 1,
};
let first = 0;
let streamEnd = 0;
let whole = 0;
let tokens = 0;
const streamed = async (seed: number): Promise<void> => {
  const t = performance.now();
  let seen = false;
  const stream = await client.chat.completions.create({
    ...long,
    seed,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of stream) {
    if (!seen && chunk.choices[0]?.delta.content) ((first += performance.now() - t), (seen = true));
    tokens += chunk.usage?.completion_tokens ?? 0;
  }
  streamEnd += performance.now() - t;
};
const plain = async (seed: number): Promise<void> => {
  const t = performance.now();
  await client.chat.completions.create({ ...long, seed });
  whole += performance.now() - t;
};
await plain(-1); // warm-up, not counted
whole = 0;
for (let i = 0; i < CALLS; i++) {
  // Alternate which goes first, so a machine whose load changes biases both alike.
  if (i % 2 === 0) (await streamed(i), await plain(i));
  else (await plain(i), await streamed(i));
}
console.log(
  `streaming (${(tokens / CALLS).toFixed(1)} tokens/answer, N=${CALLS}): first delta ${(first / CALLS).toFixed(1)} ms, stream end ${(streamEnd / CALLS).toFixed(1)} ms, non-streamed answer ${(whole / CALLS).toFixed(1)} ms`,
);

// 3. The same from a client in another process (curl, when on PATH): the gateway's own cost per streamed token,
// without a client parsing chunks on the gateway's event loop.
const curl = (stream: boolean, seed: number) =>
  new Promise<number>((resolve) => {
    const p = spawn('curl', [
      '-sN',
      '-o',
      '/dev/null',
      '-w',
      '%{time_total}',
      '-d',
      JSON.stringify({ ...long, seed, stream }),
      `${client.baseURL}/chat/completions`,
    ]);
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', () => resolve(NaN));
    p.on('close', () => resolve(Number(out) * 1000));
  });
let curlStream = 0;
let curlWhole = 0;
for (let i = 0; i < CALLS; i++) ((curlStream += await curl(true, i)), (curlWhole += await curl(false, i)));
if (Number.isFinite(curlStream))
  console.log(
    `from curl: streamed ${(curlStream / CALLS).toFixed(1)} ms, not streamed ${(curlWhole / CALLS).toFixed(1)} ms`,
  );
else console.log('from curl: skipped (no curl on PATH)');
await gw.close();
