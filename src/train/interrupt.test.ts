// issue 38 item 3: Ctrl-C (SIGINT) during `ragen train` says what was kept and the command that continues the run, on
// the console and in the run's console.log, and that command works. (With agent programs:
// src/train/agent-train-cli.test.ts.)
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMetricsFile } from '../metrics/index.js';
import { runCli } from '../cli/testing.js';
import { isCompleteCheckpoint } from './checkpoint-io.js';
import { writeMicroModel } from './testing.js';

let root: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ragen-interrupt-'));
  await writeMicroModel(join(root, 'model'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** `ragen train <argv>` in a child process (the CLI's own entry, through tsx), its stdout and stderr together. */
function ragenTrain(argv: string[]) {
  const script = `const m = await import('./src/cli/main.ts'); process.exitCode = await m.main(${JSON.stringify(['train', ...argv])});`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<{ code: number | null; signal: string | null; out: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, out })),
  );
  let exited = false;
  void exit.then(() => (exited = true));
  return { child, exit, output: () => out, exited: () => exited };
}

/** Polls `ok` until it holds; fails at once, with the child's output, if the child exits first. */
async function waitFor(
  what: string,
  ok: () => boolean,
  run: ReturnType<typeof ragenTrain>,
  ms = 90_000,
): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (run.exited()) throw new Error(`ragen train exited before ${what}:\n${run.output()}`);
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}:\n${run.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Whether the run keeps a complete checkpoint of some step (the trainer keeps only the newest: step 1's may be gone). */
function hasCheckpoint(dir: string): boolean {
  const root = join(dir, 'checkpoints');
  if (!existsSync(root)) return false;
  return readdirSync(root).some((name) => /^step-\d+$/.test(name) && isCompleteCheckpoint(join(root, name)));
}

describe('issue 38 item 3: Ctrl-C during ragen train', () => {
  it('prints the kept checkpoint and the resume command (console and console.log), and that command continues the run', async () => {
    const dir = join(root, 'run');
    const run = ragenTrain([
      `model.path=${join(root, 'model')}`,
      `logging.runDir=${dir}`,
      'env.train=[{tag: SimpleSokoban, groups: 2, groupSize: 2}]',
      'env.val=[{tag: SimpleSokoban, groups: 2}]',
      'agent.maxNewTokens=4',
      'agent.maxTurns=1',
      'trainer.collapse.every=0',
      'trainer.valBeforeTrain=false',
      'trainer.valEvery=0',
      'trainer.checkpointEvery=1',
      '--steps',
      '50',
    ]);
    await waitFor('a checkpoint', () => hasCheckpoint(dir), run);
    run.child.kill('SIGINT');
    const { code, signal, out } = await run.exit;
    expect(code === 130 || signal === 'SIGINT', out).toBe(true); // stopped as Ctrl-C stops a process
    const m =
      /interrupted by SIGINT during step (\d+) of 50\. Kept: the checkpoint of step (\d+), (\S+)\.\nContinue with: (ragen train --resume (\S+))\n/.exec(
        out,
      );
    expect(m, out).not.toBeNull();
    const [, during, keptStep, keptDir, command, runDir] = m!;
    expect(runDir).toBe(dir);
    expect(Number(keptStep)).toBeGreaterThanOrEqual(1);
    expect(Number(keptStep)).toBeLessThanOrEqual(Number(during));
    expect(keptDir).toBe(join(dir, 'checkpoints', `step-${keptStep}`));
    expect(isCompleteCheckpoint(keptDir!)).toBe(true);
    expect(existsSync(join(dir, 'checkpoints', `step-${Number(keptStep) + 1}`, 'checkpoint.json'))).toBe(false); // it is the newest
    expect(readFileSync(join(dir, 'console.log'), 'utf8')).toContain(
      `Kept: the checkpoint of step ${keptStep}, ${keptDir}.\nContinue with: ${command}`,
    );

    // the printed command, for one more step
    const next = Number(keptStep) + 1;
    const resumed = await runCli(...command!.split(' ').slice(1), '--stop-after', String(next));
    expect(resumed.code, resumed.err).toBe(0);
    expect(resumed.out).toContain(`Trained steps ${next}-${next} of 50`);
    expect(
      readMetricsFile(join(dir, 'metrics.jsonl'))
        .map((r) => r.step)
        .at(-1),
    ).toBe(next);
  }, 180_000);

  it('before the first checkpoint, says that nothing was kept', async () => {
    const dir = join(root, 'early');
    const run = ragenTrain([
      `model.path=${join(root, 'model')}`,
      `logging.runDir=${dir}`,
      'env.train=[{tag: SimpleSokoban, groups: 2, groupSize: 2}]',
      'env.val=[{tag: SimpleSokoban, groups: 64}]',
      'agent.maxNewTokens=4',
      'agent.maxTurns=1',
      'trainer.collapse.every=0',
      'trainer.valBeforeTrain=true',
      '--steps',
      '50',
    ]);
    await waitFor(
      'the run directory',
      () => existsSync(join(dir, 'console.log')) && readFileSync(join(dir, 'console.log'), 'utf8').includes('run:'),
      run,
    );
    run.child.kill('SIGINT');
    const { out } = await run.exit;
    expect(out).toMatch(
      /interrupted by SIGINT (before|during) step \d+ of 50, before the first checkpoint: nothing was kept to resume from/,
    );
  }, 120_000);
});
