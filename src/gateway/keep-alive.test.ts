// A call the gateway had not read yet must not be cut by the server's idle timer: the local engine generates
// synchronously, and an agent that sends its next call on its kept-alive connection while another episode's call
// holds the event loop past Node's 5 s keep-alive got ECONNRESET and crashed (bench learning's gateway runs lost one
// validation episode in some runs and not others, at load ~10-20).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SamplingParams } from '../engine/index.js';
import { localServeTarget } from '../serve/index.js';
import { TINY_MODEL_DIR } from '../serve/testing.js';
import { runAgentEpisodes } from './runner.js';
import { Gateway } from './server.js';

const dir = mkdtempSync(join(os.tmpdir(), 'ragen-keepalive-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Episode 0 calls, tells episode 1 (a file), waits 1.5 s and calls again on the same connection (fetch keeps it
// alive); episode 1 waits for the file, then makes the call the engine takes 6.5 s on, blocking the event loop.
const AGENT = `
import { existsSync, writeFileSync } from 'node:fs';
const env = process.env;
const flag = ${JSON.stringify(join(dir, 'first-call-answered'))};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const call = async (content) => {
  const res = await fetch(env.OPENAI_BASE_URL + '/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'policy', max_tokens: 4, messages: [{ role: 'user', content }] }),
  });
  if (!res.ok) throw new Error(res.status + ' ' + (await res.text()));
  await res.json();
};
if (env.RAGEN_SEED === '0') {
  await call('first call');
  writeFileSync(flag, '');
  await sleep(1500);
  await call('second call');
} else {
  while (!existsSync(flag)) await sleep(20);
  await call('SLOW call');
}
await fetch(env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: 1 }) });
`;

describe('gateway connections', () => {
  it('answers a call that arrived on a kept-alive connection while the engine held the event loop past 5 s', async () => {
    const target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
    const generate = target.engine.generate.bind(target.engine);
    target.engine.generate = (prompts: readonly (readonly number[])[], params: SamplingParams) => {
      if (prompts.some((p) => target.tokenizer.decode([...p]).includes('SLOW'))) {
        const until = Date.now() + 6500; // a synchronous engine on a loaded machine: nothing else runs meanwhile
        while (Date.now() < until);
      }
      return generate(prompts, params);
    };
    const gateway = new Gateway(target);
    await gateway.listen(0);
    try {
      const file = join(dir, 'agent.mjs');
      writeFileSync(file, AGENT);
      const tasks = [0, 1].map((seed) => ({ episodeId: `ep${seed}`, seed, group: seed }));
      const outs = await runAgentEpisodes(gateway, { command: `node ${JSON.stringify(file)}`, timeoutS: 60 }, tasks, {
        concurrency: 2,
      });
      expect(outs.map((o) => [o.status, o.log.calls.length, o.stderrTail])).toEqual([
        ['ok', 2, ''],
        ['ok', 1, ''],
      ]);
    } finally {
      await gateway.close();
      target.dispose();
    }
  }, 120_000);
});
