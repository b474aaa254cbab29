// An env server killed (SIGKILL) during a training step over `remote:`: the step fails with a sentence naming the
// server and the session, nothing of it is written, and `--resume` once the server is back ends with the metrics
// of an uninterrupted run.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { freePort } from '../../util/index.js';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../envs/index.js';
import { readMetricsFile } from '../../metrics/index.js';
import { deterministic, microConfig, writeMicroModel } from '../../train/testing.js';
import { train } from '../../train/index.js';
import { RemoteEnvError } from './index.js';

let root: string;
let model: string;
let port: number;
const children: ChildProcess[] = [];

/** `ragen env serve Bandit` in a child process on `port`; resolves once it listens. */
async function startServer(): Promise<ChildProcess> {
  const script = `const { main } = await import(${JSON.stringify(resolve('src/cli/main.ts'))}); process.exitCode = await main(${JSON.stringify(['env', 'serve', 'Bandit', '--port', String(port), '--step-delay-ms', '20'])});`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  await new Promise<void>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => ((out += String(d)), out.includes('remote:ws://') && ok()));
    child.once('exit', (code) => fail(new Error(`env server exited (${code}) before listening: ${out}`)));
  });
  return child;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-server-death-'));
  model = await writeMicroModel(join(root, 'model'));
  port = await freePort();
}, 120_000);
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

const config = (runDir: string) =>
  microConfig(model, runDir, [
    `env.train=[{tag: "remote:ws://127.0.0.1:${port}/Bandit", groups: 2, groupSize: 4}]`,
    `env.val=[{tag: "remote:ws://127.0.0.1:${port}/Bandit", groups: 2}]`,
    'agent.maxTurns=1',
    'agent.maxActionsPerTurn=1',
    'trainer.steps=4',
    'trainer.keepCheckpoints=4',
  ]);

describe('an env server that dies mid-run', () => {
  it('fails the step by name, writes nothing of it, and --resume after a restart equals an uninterrupted run', async () => {
    let server = await startServer();
    const run = join(root, 'killed');
    const metrics = join(run, 'metrics.jsonl');
    // Kill the server as soon as step 2's metrics are written: step 3 meets a dead server.
    const watch = setInterval(() => {
      if (
        existsSync(metrics) &&
        readFileSync(metrics, 'utf8').trim().split('\n').length >= 2 &&
        server.exitCode === null
      )
        server.kill('SIGKILL');
    }, 5);
    const err = await train({ config: config(run) }).catch((e: unknown) => e);
    clearInterval(watch);
    expect(err).toBeInstanceOf(RemoteEnvError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^step 3 failed: .*env server at ws://127\\.0\\.0\\.1:${port}/Bandit.*(session #\\d+|new session) \\(episode seed \\d+.*Nothing of step 3 was saved; once the server is back, \`ragen train --resume ${run.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\` continues after step 2`,
      ),
    );
    expect(readMetricsFile(metrics).map((r) => r.step)).toEqual([1, 2]);
    expect(readdirSync(join(run, 'checkpoints')).sort()).toEqual(['step-1', 'step-2']);
    expect(existsSync(join(run, 'rollouts', 'step-3.jsonl'))).toBe(false);

    server = await startServer();
    const resumed = await train({ resume: run });
    expect(resumed).toMatchObject({ startStep: 2, lastStep: 4 });
    const whole = await train({ config: config(join(root, 'whole')) });
    expect(deterministic(readMetricsFile(metrics))).toEqual(
      deterministic(readMetricsFile(join(whole.runDir, 'metrics.jsonl'))),
    );
    server.kill('SIGKILL');
  }, 300_000);
});
