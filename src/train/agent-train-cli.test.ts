// `ragen train --config file.yaml` with an agent entry, as a user runs it: the CLI trains through the gateway, and
// Ctrl-C (SIGINT) during a rollout exits 130 with the running program's process group killed, not left behind.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMetricsFile } from '../metrics/index.js';
import { writeMicroModel } from './testing.js';

let root: string;
let model: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-agent-cli-'));
  model = await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A config file training `program` (a file under root) for `steps` steps on the micro model. */
function configFile(name: string, program: string, steps: number): string {
  const file = join(root, `${name}.yaml`);
  writeFileSync(
    file,
    `model: {path: ${JSON.stringify(model)}}
env:
  train:
    - agent: {command: "node ${join(root, program)}", timeoutS: 60, concurrency: 1}
      groups: 1
      groupSize: 2
  val: []
algo: {advEstimator: grpo}
agent: {maxNewTokens: 4, maxContextTokens: 1024}
trainer: {steps: ${steps}, miniBatchSize: 2, microBatchSize: 2, valBeforeTrain: false, valEvery: 0, collapse: {every: 0}}
logging: {runDir: ${JSON.stringify(join(root, name))}, console: none}
`,
  );
  return file;
}

/** `ragen train --config <file>` in a child process (the CLI's own entry, through tsx). */
function ragenTrain(file: string) {
  const script = `const m = await import('./src/cli/main.ts'); process.exitCode = await m.main(['train', '--config', ${JSON.stringify(file)}]);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<{ code: number | null; signal: string | null; out: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, out })),
  );
  return { child, exit };
}

describe('ragen train --config with an agent program', () => {
  it('trains a step and writes its gateway metrics', async () => {
    writeFileSync(
      join(root, 'agent.mjs'),
      `
const r = await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'hi ' + process.env.RAGEN_SEED }], max_tokens: 2 }) });
const text = (await r.json()).choices[0].message.content ?? '';
await fetch(process.env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: text.length % 3 }) });
`,
    );
    const { code, out } = await ragenTrain(configFile('run', 'agent.mjs', 1)).exit;
    expect(code, out).toBe(0);
    const [m] = readMetricsFile(join(root, 'run', 'metrics.jsonl'));
    expect([m!['gateway/calls'], m!['gateway/episodes_ok']]).toEqual([2, 2]);
    expect(existsSync(join(root, 'run', 'checkpoints', 'step-1'))).toBe(true);
  }, 120_000);

  it('exits 130 on SIGINT during a rollout and kills the program it was waiting for', async () => {
    const pidFile = join(root, 'hang.pid');
    writeFileSync(
      join(root, 'hang.mjs'),
      `
import { writeFileSync } from 'node:fs';
writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
setTimeout(() => {}, 120_000);
`,
    );
    const { child, exit } = ragenTrain(configFile('hang', 'hang.mjs', 1));
    const t0 = Date.now();
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8') === '') {
      if (Date.now() - t0 > 90_000) throw new Error('the program never started');
      await new Promise((r) => setTimeout(r, 100));
    }
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(alive(pid)).toBe(true);
    child.kill('SIGINT');
    const { code, out } = await exit;
    expect(code, out).toBe(130);
    await new Promise((r) => setTimeout(r, 200)); // SIGKILL is delivered asynchronously
    expect(alive(pid)).toBe(false);
  }, 120_000);

  it('issue 38 item 3: Ctrl-C with agent programs exits 130 saying what was kept and the resume command', async () => {
    const pidFile = join(root, 'later.pid');
    const count = join(root, 'later.count');
    // the first step's two episodes answer; later ones hang (and say so), so SIGINT lands in step 2's rollout
    writeFileSync(
      join(root, 'later.mjs'),
      `
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(count)}, 'x');
if (readFileSync(${JSON.stringify(count)}, 'utf8').length > 2) {
  writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
  setTimeout(() => {}, 120_000);
} else {
  await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', { method: 'POST', body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }) });
  await fetch(process.env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: 1 }) });
}
`,
    );
    const file = configFile('later', 'later.mjs', 3);
    writeFileSync(file, readFileSync(file, 'utf8').replace('valEvery: 0,', 'valEvery: 0, checkpointEvery: 1,'));
    const { child, exit } = ragenTrain(file);
    const t0 = Date.now();
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8') === '') {
      if (Date.now() - t0 > 90_000) throw new Error('step 2 never started');
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGINT');
    const { code, out } = await exit;
    expect(code, out).toBe(130);
    const run = join(root, 'later');
    const said = `ragen: interrupted by SIGINT during step 2 of 3. Kept: the checkpoint of step 1, ${join(run, 'checkpoints', 'step-1')}.\nContinue with: ragen train --resume ${run}\n`;
    expect(out).toContain(said);
    expect(readFileSync(join(run, 'console.log'), 'utf8')).toContain(said);
    await new Promise((r) => setTimeout(r, 200));
    expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  }, 120_000);
});

/** Whether `pid` runs: a zombie (killed, not yet reaped: a container's PID 1 may never reap it) counts as gone. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = join('/proc', String(pid), 'stat');
  return !existsSync(stat) || readFileSync(stat, 'utf8').split(') ')[1]?.[0] !== 'Z';
}
