// What the training gateway costs: one chat call through it (openai client, HTTP, chat template, recording) against
// engine.generate on the same prompt, and whole agent-program episodes per second (one node process each).
//   npx tsx src/bench/scripts/gateway-overhead.ts [--calls 40] [--episodes 8]
import '../../envs/index.js'; // the built-in environments
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { Gateway, runAgentEpisodes } from '../../gateway/index.js';
import { localServeTarget } from '../../serve/index.js';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const N = arg('calls', 40);
const EPISODES = arg('episodes', 8);
const root = fileURLToPath(new URL('../../..', import.meta.url));
const target = await localServeTarget(join(root, 'models', 'ragen-tiny'), (d) => d, { name: 'tiny' });
const eos = target.tokenizer.eosTokenId;

// 1. One call at a time, greedy, 16 new tokens: the engine directly, then through the gateway (no batch window).
const gw = new Gateway({ ...target, batchWindowMs: 0 });
await gw.listen(0);
const client = new OpenAI({ baseURL: gw.open('bench', { maxCalls: 1e9 }).baseUrl, apiKey: 'x', maxRetries: 0 });
const messages = [{ role: 'user' as const, content: 'Turn 1: State:\n#P_#\nYou have 5 actions left.' }];
const prompt = target.tokenizer.encode(target.tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true }));
const direct = () =>
  target.engine.generate([prompt], { maxNewTokens: 16, temperature: 0, stopTokenIds: [eos], seed: 0 });
const viaGateway = () => client.chat.completions.create({ model: 'm', messages, max_tokens: 16, temperature: 0 });
const msPerCall = async (f: () => Promise<unknown>): Promise<number> => {
  const t = performance.now();
  for (let i = 0; i < N; i++) await f();
  return (performance.now() - t) / N;
};
for (let i = 0; i < 5; i++) await Promise.all([direct(), viaGateway()]); // warm-up
// Interleaved halves, so a machine whose load changes during the run biases both sides alike.
const d = await msPerCall(direct);
const g1 = await msPerCall(viaGateway);
const d2 = await msPerCall(direct);
const g2 = await msPerCall(viaGateway);
console.log(
  `per call: engine ${((d + d2) / 2).toFixed(1)} ms, gateway ${((g1 + g2) / 2).toFixed(1)} ms, overhead ${((g1 + g2 - d - d2) / 2).toFixed(1)} ms (N=${2 * N} each)`,
);
await gw.close();

// 2. Whole episodes: a node program making one call and reporting, at concurrency 1 and 2.
const dir = mkdtempSync(join(os.tmpdir(), 'ragen-gw-bench-'));
const program = join(dir, 'one-call.mjs');
writeFileSync(
  program,
  `import OpenAI from '${pathToFileURL(join(root, 'node_modules', 'openai', 'index.mjs')).href}';
await new OpenAI({ maxRetries: 0 }).chat.completions.create({ model: 'p', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16, temperature: 0 });
await fetch(process.env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: 1 }) });`,
);
const gw2 = new Gateway({ ...target });
await gw2.listen(0);
for (const concurrency of [1, 2]) {
  const tasks = Array.from({ length: EPISODES }, (_, i) => ({ episodeId: `c${concurrency}-${i}`, seed: i, group: 0 }));
  const t = performance.now();
  const outs = await runAgentEpisodes(gw2, { command: `node ${JSON.stringify(program)}`, timeoutS: 60 }, tasks, {
    concurrency,
  });
  const s = (performance.now() - t) / 1000;
  console.log(
    `episodes at concurrency ${concurrency}: ${(EPISODES / s).toFixed(2)}/s (${outs.filter((o) => o.status === 'ok').length}/${EPISODES} ok)`,
  );
}
await gw2.close();
rmSync(dir, { recursive: true, force: true });
