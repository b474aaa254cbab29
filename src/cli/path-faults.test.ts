// Bad paths on the command line: nothing hangs (Node's recursive mkdir loops forever under /proc, so these run in a
// child process with a timeout), a read-only mount is named, and a full disk under `eval --out` keeps the summary.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { canMount, fill, mountTmpfs, unmount } from '../util/mounts-testing.js';
import { runCli } from './testing.js';
import { runEval, type EvalReport } from '../eval/index.js';
import '../envs/index.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-paths-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** `ragen <argv>` in a child process (tsx), killed after `ms`: a hang shows as `timedOut`. */
function cliProcess(argv: string[], ms = 120_000): Promise<{ code: number | null; err: string; timedOut: boolean }> {
  const script = `const { main } = await import(${JSON.stringify(resolve('src/cli/main.ts'))}); process.exitCode = await main(${JSON.stringify(argv)});`;
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    let timedOut = false;
    child.stderr.on('data', (d: Buffer) => (err += String(d)));
    const timer = setTimeout(() => ((timedOut = true), child.kill('SIGKILL')), ms);
    child.on('close', (code) => (clearTimeout(timer), done({ code, err, timedOut })));
  });
}

describe('paths under pseudo filesystems', () => {
  it('logging.runDir=/proc/foo and eval --out /proc/foo/x.jsonl fail with one sentence instead of hanging', async () => {
    const [trainRun, evalRun] = await Promise.all([
      cliProcess([
        'train',
        '--config',
        'bandit-ppo',
        'logging.runDir=/proc/ragen-foo',
        'trainer.steps=1',
        'logging.console=none',
      ]),
      cliProcess([
        'eval',
        '--env',
        'SimpleSokoban',
        '--policy',
        'random',
        '--groups',
        '2',
        '--out',
        '/proc/ragen-foo/x.jsonl',
      ]),
    ]);
    for (const r of [trainRun, evalRun]) {
      expect(r.timedOut).toBe(false);
      expect(r.code).toBe(2);
      expect(r.err).not.toMatch(/\n\s+at /);
    }
    expect(trainRun.err).toMatch(
      /^ragen: could not create the run directory: `\/proc\/ragen-foo` is under `\/proc`, a proc pseudo filesystem .*; point logging\.runDir at a folder on a disk\.$/m,
    );
    expect(evalRun.err).toMatch(
      /^ragen: Cannot write --out `\/proc\/ragen-foo\/x\.jsonl` .*proc pseudo filesystem.*Nothing was run\.$/m,
    );
  }, 300_000);
});

describe('item 14: model init and probe-grads under /proc', () => {
  it('item 14: `model init --out /proc/x` and `probe-grads --out /proc/x/p.json` fail with one sentence naming --out instead of hanging', async () => {
    const [init, probe] = await Promise.all([
      cliProcess(['model', 'init', '--shape', 'qwen2.5-tiny', '--out', '/proc/ragen-x'], 90_000),
      cliProcess(['probe-grads', '--run', join(root, 'no-run'), '--out', '/proc/ragen-x/p.json'], 90_000),
    ]);
    for (const r of [init, probe]) {
      expect(r.timedOut).toBe(false);
      expect(r.code).toBe(2);
      expect(r.err).not.toMatch(/\n\s+at /);
    }
    expect(init.err).toMatch(
      /^ragen: could not write the model folder: `\/proc\/ragen-x` is under `\/proc`, a proc pseudo filesystem .*; point --out at a folder on a disk\.$/m,
    );
    expect(probe.err).toMatch(
      /^ragen: Cannot write --out `\/proc\/ragen-x\/p\.json` .*proc pseudo filesystem.*Nothing was probed\.$/m,
    );
  }, 200_000);
});

describe.runIf(canMount)('mounts (needs tmpfs mounts: root)', () => {
  it('a run directory on a read-only mount names EROFS, not ENOENT', async () => {
    const ro = mountTmpfs('ro,size=64k')!;
    try {
      const r = await runCli(
        'train',
        '--config',
        'bandit-ppo',
        `logging.runDir=${join(ro, 'runs', 'a')}`,
        'trainer.steps=1',
        'logging.console=none',
      );
      expect(r.code).toBe(2);
      expect(r.err).toMatch(
        /^ragen: could not create the run directory: .*: the filesystem is read-only \(EROFS\); point logging\.runDir at a writable folder/,
      );
    } finally {
      unmount(ro);
    }
  });

  it('eval --out on a full disk fails before any rollout, naming --out', async () => {
    const disk = mountTmpfs('size=64k')!;
    try {
      fill(join(disk, 'junk'));
      const out = join(disk, 'x.jsonl');
      const r = await runCli('eval', '--env', 'SimpleSokoban', '--policy', 'random', '--groups', '2', '--out', out);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(
        /Cannot write --out `.*x\.jsonl` \(.*the disk is full \(ENOSPC\); point --out at a writable folder.*\)/,
      );
      expect(r.err).not.toMatch(/logging\.runsDir/);
      expect(existsSync(`${out}.tmp`)).toBe(false);
    } finally {
      unmount(disk);
    }
  });

  it('eval --out that fills up during the run still hands over the summary, and the error names --out', async () => {
    const disk = mountTmpfs('size=64k')!;
    try {
      const out = join(disk, 'x.jsonl');
      let seen: EvalReport | undefined;
      const err = await runEval({ env: 'SimpleSokoban', policy: 'random', groups: 64, out }, (report) => {
        seen = report;
        fill(join(disk, 'junk')); // the disk fills after the rollouts, before the records are written
      }).catch((e: unknown) => e as Error);
      expect(seen?.episodes).toBe(64);
      expect((err as Error).message).toMatch(
        /^could not write the episode records: .*x\.jsonl\.tmp.*: the disk is full \(ENOSPC\); point --out at a writable folder/,
      );
      expect(readdirSync(disk)).toEqual(['junk']); // no half file, no .tmp
    } finally {
      unmount(disk);
    }
  });
});
