// Issue 34 item 1 as an integration test: `ragen train` (the trainer's code path) on an honest agent program (one call,
// a wait, reward 0), while a second process that found the gateway's port posts rewards and calls to every episode id
// the naming scheme gives. Nothing it sends lands: it gets 404 everywhere, the run's rewards are the program's, and
// the refusals are counted and said on the console, for the training and the validation episodes.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMetricsFile } from '../metrics/index.js';
import { microConfig, writeMicroModel } from './testing.js';
import { train } from './trainer.js';

let root: string;
let model: string;

// The honest program: one call, tell the test its gateway's port (what an attacker finds with `ss -ltn`), wait until
// the attack is over, report reward 0.
const HONEST = `
import { existsSync, renameSync, writeFileSync } from 'node:fs';
const env = process.env;
const [dir] = process.argv.slice(2);
const r = await fetch(env.OPENAI_BASE_URL + '/chat/completions', { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }) });
if (!r.ok) throw new Error('chat ' + r.status);
const split = env.RAGEN_EPISODE.startsWith('val') ? 'val' : 'train';
writeFileSync(dir + '/port-' + split + '.tmp', new URL(env.OPENAI_BASE_URL).port);
renameSync(dir + '/port-' + split + '.tmp', dir + '/port-' + split); // whole when it appears
for (let i = 0; i < 300 && !existsSync(dir + '/attacked-' + split); i++) await new Promise((res) => setTimeout(res, 100));
const rr = await fetch(env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: 0 }) });
if (!rr.ok) throw new Error('reward ' + rr.status);
`;

// The attacker: a separate process with the port and the naming scheme (s<step>-e<entry>-g<g>-m<m>, val-e...).
const ATTACKER = `
const [port] = process.argv.slice(2);
const ids = ['s1', 's2', 'val'].flatMap((p) => [0, 1].flatMap((g) => [0, 1].map((m) => p + '-e0-g' + g + '-m' + m)));
const statuses = [];
for (const id of ids) {
  const base = 'http://127.0.0.1:' + port + '/episodes/' + id;
  statuses.push((await fetch(base + '/reward', { method: 'POST', body: JSON.stringify({ reward: 1 }) })).status);
  statuses.push((await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { authorization: 'Bearer ragen-gateway' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'injected' }], max_tokens: 2 }) })).status);
}
process.stdout.write(JSON.stringify(statuses));
`;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-agent-attack-'));
  model = await writeMicroModel(join(root, 'model'));
  writeFileSync(join(root, 'honest.mjs'), HONEST);
  writeFileSync(join(root, 'attacker.mjs'), ATTACKER);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Run the attacker against `port`; resolves with the HTTP statuses it got. */
function attack(port: string): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'attacker.mjs'), port], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`attacker exited ${code}`)),
    );
  });
}

describe('the gateway under attack during ragen train (item 1)', () => {
  it("item 1: a second process with the port and the naming scheme cannot post a call or a reward into any episode; the run's rewards are the honest program's", async () => {
    const dir = join(root, 'shared');
    mkdirSync(dir);
    const block = `{command: "node ${join(root, 'honest.mjs')} ${dir}", timeoutS: 60, concurrency: 4}`;
    const config = microConfig(model, join(root, 'run'), [
      `env.train=[{agent: ${block}, groups: 2, groupSize: 2}]`,
      `env.val=[{agent: ${block}, groups: 2}]`,
      'algo.advEstimator=grpo',
      'trainer.steps=1',
      'trainer.valBeforeTrain=true',
      'logging.console=plain',
    ]);
    let printed = '';
    const stream = Object.assign(new Writable({ write: (c, _e, cb) => ((printed += String(c)), cb()) }), {
      isTTY: false,
    });
    // The watcher: as each split's gateway shows up, attack it once, then let its programs finish.
    const attacks: Record<string, number[]> = {};
    let running = true;
    const watcher = (async () => {
      while (running) {
        for (const split of ['val', 'train']) {
          if (attacks[split] || !existsSync(join(dir, `port-${split}`))) continue;
          try {
            attacks[split] = await attack(readFileSync(join(dir, `port-${split}`), 'utf8'));
          } finally {
            writeFileSync(join(dir, `attacked-${split}`), '');
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    watcher.catch(() => (running = false)); // an attacker that failed is reported by `await watcher` below
    try {
      await train({ config, stream });
    } finally {
      running = false;
      await watcher;
    }
    const sent = 24; // 12 ids x (a reward, a call)
    expect(attacks['val']).toEqual(new Array(sent).fill(404));
    expect(attacks['train']).toEqual(new Array(sent).fill(404));
    const [m0, m1] = readMetricsFile(join(root, 'run', 'metrics.jsonl'));
    expect(m0!['val/agent/success']).toBe(0);
    expect([m1!['train/reward_mean'], m1!['train/success']]).toEqual([0, 0]);
    expect([
      m1!['gateway/calls'],
      m1!['gateway/episodes_ok'],
      m1!['gateway/duplicate_rewards'],
      m1!['gateway/unauthorized_calls'],
    ]).toEqual([4, 4, 0, sent]);
    // nothing injected was trained: every recorded episode is the program's one call
    const records = readFileSync(join(root, 'run', 'rollouts', 'step-1.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { turns: unknown[] });
    expect(records.map((r) => r.turns.length)).toEqual([1, 1, 1, 1]);
    expect(printed).toMatch(
      new RegExp(`validation: the gateway refused ${sent} request\\(s\\) that named no open episode`),
    );
    expect(printed).toMatch(
      new RegExp(`step 1: the gateway refused ${sent} request\\(s\\) that named no open episode`),
    );
  }, 120_000);
});
