// issue 38 item 3: Ctrl-C (SIGINT) during `ragen train` says what was kept and the command that continues the run, on
// the console and in the run's console.log, and that command works. (With agent programs:
// src/train/agent-train-cli.test.ts.)
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
  return { child, exit };
}

async function waitFor(what: string, ok: () => boolean, ms = 90_000): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('issue 38 item 3: Ctrl-C during ragen train', () => {
  it('prints the kept checkpoint and the resume command (console and console.log), and that command continues the run', async () => {
    const dir = join(root, 'run');
    const { child, exit } = ragenTrain([
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
    await waitFor('the checkpoint of step 1', () => isCompleteCheckpoint(join(dir, 'checkpoints', 'step-1')));
    child.kill('SIGINT');
    const { code, signal, out } = await exit;
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
    const { child, exit } = ragenTrain([
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
    );
    child.kill('SIGINT');
    const { out } = await exit;
    expect(out).toMatch(
      /interrupted by SIGINT (before|during) step \d+ of 50, before the first checkpoint: nothing was kept to resume from/,
    );
  }, 120_000);
});
