// Agent programs (tiny .mjs files using the official `openai` client) run against the gateway over ragen-tiny:
// a good one, one that crashes, hangs (with a child of its own), reports nothing, floods; and the concurrency bound.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgentEpisode, runAgentEpisodes, stderrGist } from './runner.js';
import { samplesFromCalls } from './samples.js';
import type { Gateway } from './server.js';
import { tinyGateway } from './testing.js';

const OPENAI = pathToFileURL(join(import.meta.dirname, '..', '..', 'node_modules', 'openai', 'index.mjs')).href;
const dir = mkdtempSync(join(os.tmpdir(), 'ragen-agents-'));
let gateway: Gateway;

/** Write an agent program (an ES module with `client`, `env` and `reward()` in scope) and return its command. */
function agent(name: string, body: string): string {
  const file = join(dir, `${name}.mjs`);
  writeFileSync(
    file,
    `import OpenAI from '${OPENAI}';
const env = process.env;
const client = new OpenAI({ maxRetries: 0 }); // OPENAI_BASE_URL and OPENAI_API_KEY come from the runner
const reward = (r) => fetch(env.RAGEN_REWARD_URL, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ reward: r }) });
${body}
`,
  );
  return `node ${JSON.stringify(file)}`;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return !/State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'utf8')); // a zombie is dead, only unreaped
  } catch {
    return false;
  }
};

beforeAll(async () => {
  gateway = await tinyGateway({ maxCallsPerEpisode: 5, maxBodyBytes: 8192, maxTokens: 16 });
});
afterAll(async () => {
  await gateway.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('agent programs', () => {
  it('runs a program with the episode URL and task in its environment and takes its reward', async () => {
    const cmd = agent(
      'good',
      `
const messages = [{ role: 'user', content: 'Turn 1: say something' }];
const a = await client.chat.completions.create({ model: 'policy', messages, max_tokens: 6 });
messages.push({ role: 'assistant', content: a.choices[0].message.content }, { role: 'user', content: 'Turn 2' });
await client.chat.completions.create({ model: 'policy', messages, max_tokens: 6 });
await reward(Number(env.RAGEN_SEED) / 10 + Number(env.RAGEN_GROUP));
`,
    );
    const out = await runAgentEpisode(
      gateway,
      { command: cmd, timeoutS: 60 },
      { episodeId: 'good-1', seed: 3, group: 2 },
    );
    expect(out.stderrTail).toBe('');
    expect(out.status).toBe('ok');
    expect(out.reward).toBeCloseTo(2.3, 10);
    expect(out.log.calls).toHaveLength(2);
    const samples = samplesFromCalls(out.log.calls, out.reward, { episode: 0, group: 2, tag: 'agent' });
    expect(samples.length).toBeGreaterThan(0);
    expect(samples.flatMap((s) => s.ids.filter((_, t) => s.lossMask[t] === 1))).toEqual(
      out.log.calls.flatMap((c) => c.completionIds),
    );
  }, 60_000);

  it('scores a crashing program and one that reports no reward with the failure reward', async () => {
    const crash = agent(
      'crash',
      `await client.chat.completions.create({ model: 'p', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });\nawait reward(1);\nthrow new Error('agent bug');`,
    );
    const silent = agent(
      'silent',
      `await client.chat.completions.create({ model: 'p', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });`,
    );
    const said: string[] = [];
    const c = await runAgentEpisode(
      gateway,
      { command: crash, timeoutS: 60 },
      { episodeId: 'crash-1', seed: 0, group: 0 },
      { failureReward: -1, log: (l) => said.push(l) },
    );
    const s = await runAgentEpisode(
      gateway,
      { command: silent, timeoutS: 60 },
      { episodeId: 'silent-1', seed: 0, group: 0 },
      { failureReward: -1 },
    );
    // The crashing program did report 1 before it threw: a crash scores the failure reward all the same.
    expect([c.status, c.reward, c.exitCode, c.log.calls.length, c.log.reward]).toEqual(['crashed', -1, 1, 1, 1]);
    expect(c.stderrTail).toMatch(/agent bug/);
    expect(said).toEqual(['episode crash-1: crashed (exit 1), reward -1; stderr: Error: agent bug']); // the error line, not the stack after it
    expect([s.status, s.reward, s.exitCode]).toEqual(['no_reward', -1, 0]);
    const missing = await runAgentEpisode(
      gateway,
      { command: 'definitely-not-a-command-xyz', timeoutS: 60 },
      { episodeId: 'missing-1', seed: 0, group: 0 },
    );
    expect([missing.status, missing.reward]).toEqual(['crashed', 0]);
  }, 60_000);

  it("says a crash by its error line: Node's and Python's messages, not the stack or banner after them", () => {
    const node = spawnSync(process.execPath, [join(dir, 'no-such-agent.mjs')], { encoding: 'utf8' }).stderr;
    expect(node.trim().split('\n').at(-1)).toMatch(/^Node\.js v/); // what the last lines alone showed
    expect(stderrGist(node)).toBe(`Error: Cannot find module '${join(dir, 'no-such-agent.mjs')}'`);
    const python = spawnSync('python3', ['-c', 'def f():\n    raise ValueError("seed 3 has no task")\nf()'], {
      encoding: 'utf8',
    }).stderr;
    expect(stderrGist(python)).toBe('ValueError: seed 3 has no task');
    expect(stderrGist('starting\nboom: the tool server is down\n\n')).toBe('starting | boom: the tool server is down');
  });

  it('kills a hanging program and the child it started at the time budget', async () => {
    const pidFile = join(dir, 'hang.pids');
    const cmd = agent(
      'hang',
      `
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const child = spawn('sleep', ['600'], { stdio: 'ignore' });
writeFileSync(${JSON.stringify(pidFile)}, process.pid + ' ' + child.pid);
await new Promise(() => setInterval(() => {}, 1000));
`,
    );
    const t0 = Date.now();
    const out = await runAgentEpisode(
      gateway,
      { command: cmd, timeoutS: 1.5 },
      { episodeId: 'hang-1', seed: 0, group: 0 },
    );
    const elapsed = Date.now() - t0;
    expect(out.status).toBe('timeout');
    expect(out.reward).toBe(0);
    expect(elapsed).toBeGreaterThanOrEqual(1500);
    expect(elapsed).toBeLessThan(10_000);
    const pids = readFileSync(pidFile, 'utf8').split(' ').map(Number);
    await new Promise((r) => setTimeout(r, 200));
    for (const pid of pids) expect(alive(pid)).toBe(false);
  }, 30_000);

  it('kills the programs still running when the trainer process exits', async () => {
    const pidFile = join(dir, 'orphan.pid');
    const script = join(dir, 'trainer.ts');
    // A stand-in trainer: a gateway that only hands out URLs, one hanging program, then exit mid-episode.
    writeFileSync(
      script,
      `import { writeFileSync } from 'node:fs';
import { runAgentEpisode } from ${JSON.stringify(join(import.meta.dirname, 'runner.ts'))};
const gateway = { open: () => ({ baseUrl: 'http://127.0.0.1:9/v1', rewardUrl: 'http://127.0.0.1:9/r' }), finish: () => ({ id: 'e', calls: [], reward: undefined, refusedCalls: 0 }) };
void runAgentEpisode(gateway as never, { command: 'echo $$ > ${pidFile}; exec sleep 600', timeoutS: 600 }, { episodeId: 'e', seed: 0, group: 0 });
setTimeout(() => process.exit(0), 1000);
`,
    );
    const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
    const r = spawnSync(tsx, [script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await new Promise((res) => setTimeout(res, 200));
    expect(alive(pid)).toBe(false);
  }, 60_000);

  it('survives a flooding program: its calls are capped, its garbage answered as errors, the gateway keeps serving', async () => {
    const cmd = agent(
      'flood',
      `
const ask = () => client.chat.completions.create({ model: 'p', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }).then(() => 'ok', (e) => String(e.status));
const url = env.OPENAI_BASE_URL + '/chat/completions';
const junk = [
  fetch(url, { method: 'POST', body: 'x'.repeat(1 << 20) }).then((r) => String(r.status), () => 'reset'),
  fetch(url, { method: 'POST', body: '{"messages": 5}' }).then((r) => String(r.status)),
  fetch(env.RAGEN_REWARD_URL, { method: 'POST', body: '[[[' }).then((r) => String(r.status)),
];
const results = await Promise.all([...Array.from({ length: 200 }, ask), ...junk]);
process.stderr.write('y'.repeat(1 << 20));
console.log(JSON.stringify(results));
await reward(0.5);
`,
    );
    const out = await runAgentEpisode(
      gateway,
      { command: cmd, timeoutS: 60 },
      { episodeId: 'flood-1', seed: 0, group: 0 },
    );
    expect(out.status).toBe('ok');
    expect(out.log.calls.length).toBeLessThanOrEqual(5);
    expect(out.log.refusedCalls).toBeGreaterThan(150);
    expect(out.stderrTail.length).toBe(4096);
    const after = await runAgentEpisode(
      gateway,
      {
        command: agent(
          'after',
          `await client.chat.completions.create({ model: 'p', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });\nawait reward(1);`,
        ),
        timeoutS: 60,
      },
      { episodeId: 'after-1', seed: 0, group: 0 },
    );
    expect([after.status, after.log.calls.length]).toEqual(['ok', 1]);
  }, 60_000);

  it('runs at most `concurrency` programs at once and returns outcomes in task order', async () => {
    const marks = join(dir, 'marks');
    const cmd = agent(
      'slow',
      `
import { appendFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(marks)}, '+' + env.RAGEN_EPISODE + '\\n');
await new Promise((r) => setTimeout(r, 300));
appendFileSync(${JSON.stringify(marks)}, '-' + env.RAGEN_EPISODE + '\\n');
await reward(Number(env.RAGEN_SEED));
`,
    );
    const tasks = Array.from({ length: 5 }, (_, i) => ({ episodeId: `slow-${i}`, seed: i, group: 0 }));
    const outs = await runAgentEpisodes(gateway, { command: cmd, timeoutS: 60 }, tasks, { concurrency: 2 });
    expect(outs.map((o) => o.reward)).toEqual([0, 1, 2, 3, 4]);
    let running = 0;
    let most = 0;
    for (const line of readFileSync(marks, 'utf8').trim().split('\n')) {
      running += line.startsWith('+') ? 1 : -1;
      most = Math.max(most, running);
    }
    expect(most).toBe(2);
  }, 60_000);
});
