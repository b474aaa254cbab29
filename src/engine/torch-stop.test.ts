// issue 38 item 5: a torch-engine `ragen train` stopped mid-step (SIGTERM, Ctrl-C's SIGINT) or run to its end leaves no
// python process behind: neither an orphan still running nor a defunct (zombie) one. A worker that outlives ragen is
// re-parented to the machine's init, and an init that does not reap (a container's) keeps it <defunct> for good.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { torchPythonForTests } from './torch-testing.js';

const ROOT = resolve(import.meta.dirname, '../..');
const python = torchPythonForTests();
const root = mkdtempSync(join(tmpdir(), 'ragen-torch-stop-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Proc {
  ppid: number;
  state: string;
  comm: string;
}

/** Every process, from /proc: pid -> parent, state letter, command name. */
function processTable(): Map<number, Proc> {
  const table = new Map<number, Proc>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // `pid (comm) S ppid ...`; comm may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(name), {
        ppid: Number(ppid),
        state: state!,
        comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      });
    } catch {
      // the process ended while the table was read: not in it
    }
  }
  return table;
}

/** The torch engine's processes under `pid` (children, their children, ...: the worker, or torchrun and its ranks, all
 *  `python -m ragen_torch...`); node's other children, such as tsx's esbuild service, are not the engine's. */
function workerDescendants(pid: number): number[] {
  const table = processTable();
  const found: number[] = [];
  const queue = [pid];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const [p, { ppid }] of table) if (ppid === parent) (found.push(p), queue.push(p));
  }
  return found.filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('ragen_torch');
    } catch {
      return false;
    }
  });
}

/** What remains of `pids`: `pid comm (state S, parent P)` for each still in /proc (running, or a zombie nobody reaped). */
function remaining(pids: number[]): string[] {
  const table = processTable();
  return pids
    .filter((p) => table.has(p))
    .map((p) => `${p} ${table.get(p)!.comm} (state ${table.get(p)!.state}, parent ${table.get(p)!.ppid})`);
}

async function waitFor(what: string, ok: () => boolean, ms = 300_000): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `ragen train` on the torch engine in a child process (the CLI's entry through tsx), 50 steps of Bandit PPO. */
function ragenTrain(dir: string, extra: string[]) {
  const argv = [
    'train',
    '--config',
    'bandit-ppo',
    `model.path=${join(ROOT, 'models', 'ragen-tiny')}`,
    'model.engine=torch',
    'model.torch.device=cpu',
    `logging.runDir=${dir}`,
    'env.train=[{tag: Bandit, groups: 2, groupSize: 4}]',
    'agent.maxNewTokens=16',
    'trainer.steps=50',
    'trainer.valBeforeTrain=false',
    'trainer.valEvery=0',
    'trainer.checkpointEvery=0',
    'trainer.collapse.every=0',
    'logging.console=none',
    ...extra,
  ];
  const script = `const m = await import('./src/cli/main.ts'); process.exitCode = await m.main(${JSON.stringify(argv)});`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: ROOT,
    env: { ...process.env, RAGEN_PYTHON: python! },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<{ code: number | null; signal: string | null; out: string }>((ok) =>
    child.on('exit', (code, signal) => ok({ code, signal, out })),
  );
  return { child, exit };
}

/** Steps written to the run's metrics.jsonl so far. */
const stepsDone = (dir: string) =>
  existsSync(join(dir, 'metrics.jsonl'))
    ? readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').length
    : 0;

describe.skipIf(!python)('a stopped torch-engine run leaves no python process behind (issue 38 item 5)', () => {
  for (const [signal, ranks] of [
    ['SIGTERM', 1],
    ['SIGINT', 2],
  ] as const) {
    it(`${signal} during step 2 (${ranks === 1 ? 'one worker' : `torchrun with ${ranks} ranks`}): every python process of the run is gone when ragen has exited`, async () => {
      const dir = join(root, `${signal}-${ranks}`);
      const { child, exit } = ragenTrain(dir, [`model.torch.ranks=${ranks}`]);
      const early = exit.then((r) => {
        throw new Error(`ragen exited before it was signalled (${r.code ?? r.signal}):\n${r.out}`);
      });
      // step 1's metrics are written: step 2 (its rollout or update) is running on the worker
      await Promise.race([early, waitFor('step 1 of the run', () => stepsDone(dir) >= 1)]);
      const workers = workerDescendants(child.pid!);
      expect(workers.length, 'the worker processes under ragen').toBeGreaterThanOrEqual(ranks === 1 ? 1 : ranks + 1);
      early.catch(() => undefined);
      child.kill(signal);
      const { code, signal: killedBy, out } = await exit;
      expect(code === (signal === 'SIGINT' ? 130 : 143) || killedBy === signal, out).toBe(true);
      expect(out).toMatch(new RegExp(`interrupted by ${signal} during step \\d+ of 50`));
      expect(stepsDone(dir), 'the run was stopped mid-way').toBeLessThan(50);
      // No grace period: a worker still there (orphan) or <defunct> (zombie) now was left behind by ragen.
      expect(remaining(workers), `processes left behind (ragen's output:\n${out})`).toEqual([]);
    }, 420_000);
  }

  it('a run that finishes leaves no python process behind either', async () => {
    const dir = join(root, 'finished');
    const { child, exit } = ragenTrain(dir, ['trainer.steps=1']);
    await waitFor('the worker', () => workerDescendants(child.pid!).length > 0);
    const workers = workerDescendants(child.pid!);
    const { code, out } = await exit;
    expect(code, out).toBe(0);
    expect(stepsDone(dir)).toBe(1);
    expect(remaining(workers), `processes left behind (ragen's output:\n${out})`).toEqual([]);
  }, 420_000);
});
