// Soak of training over remote envs : `ragen train` over `remote:` envs served
// by two `ragen env serve` processes, one killed (SIGKILL) and restarted every --kill-every s for --minutes; each
// failed run is resumed once its server is back. Then the run is finished without kills, an uninterrupted run of
// the same config is trained, and the two metrics.jsonl are compared (wall-clock keys aside).
//   npx tsx src/bench/scripts/soak-remote.ts [--minutes 10] [--kill-every 30] [--out /tmp/soak] [key=value ...]
// Needs dist/ (npx tsc -p tsconfig.build.json): the processes run bin/ragen.js.
import '../../envs/index.js'; // the built-in environments
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from '../../util/index.js';
import { join, resolve } from 'node:path';
import { readMetricsFile } from '../../metrics/index.js';
import { latestCheckpoint } from '../../train/index.js';

const args = process.argv.slice(2);
const flag = (name: string, def: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1]! : def;
};
const minutes = Number(flag('--minutes', '10'));
const killEvery = Number(flag('--kill-every', '30'));
const out = resolve(flag('--out', '/tmp/ragen-soak'));
const extra = args;
const bin = resolve('bin/ragen.js');
const t0 = Date.now();
const log = (line: string) => console.log(`[soak ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}`);

/** A `ragen env serve SimpleSokoban` process on `port`, resolved once it answers /health. */
async function serve(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [bin, 'env', 'serve', 'SimpleSokoban', '--port', String(port)], {
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`env server on ${port} exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `ragen train <argv>`: resolves with its exit code and its stderr's last line; `kill()` ends it with SIGKILL. */
function trainProcess(argv: string[]): { done: Promise<{ code: number | null; last: string }>; child: ChildProcess } {
  const child = spawn(process.execPath, [bin, 'train', ...argv], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + String(d)).slice(-4000)));
  const done = new Promise<{ code: number | null; last: string }>((ok) =>
    child.on('close', (code) => ok({ code, last: err.trim().split('\n').at(-1) ?? '' })),
  );
  return { done, child };
}

/** metrics.jsonl without wall-clock keys, one record per step. */
function metricsOf(runDir: string): Record<string, unknown>[] {
  return readMetricsFile(join(runDir, 'metrics.jsonl')).map((r) =>
    Object.fromEntries(
      Object.entries(r).filter(([k]) => k !== 'time' && !k.startsWith('timing_s/') && !k.startsWith('perf/')),
    ),
  );
}

async function main(): Promise<void> {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const [pa, pb] = [await freePort(), await freePort()];
  let a = await serve(pa);
  const b = await serve(pb);
  const overrides = [
    `env.train=[{tag: "remote:ws://127.0.0.1:${pa}/SimpleSokoban", groups: 2, groupSize: 4}, {tag: "remote:ws://127.0.0.1:${pb}/SimpleSokoban", groups: 2, groupSize: 4}]`,
    `env.val=[{tag: "remote:ws://127.0.0.1:${pb}/SimpleSokoban", groups: 2}]`,
    'trainer.steps=10000',
    'trainer.checkpointEvery=1',
    'trainer.keepCheckpoints=2',
    'trainer.valBeforeTrain=false',
    'trainer.valEvery=0',
    'logging.console=plain',
    ...extra,
  ];
  const run = join(out, 'soak');
  const stats = { kills: 0, failures: 0, resumes: 0, failureLines: [] as string[] };
  // The killer: server A dies and comes back every killEvery seconds for the whole soak.
  let stopping = false;
  const killer = (async () => {
    while (!stopping) {
      await new Promise((r) => setTimeout(r, killEvery * 1000));
      if (stopping) break;
      a.kill('SIGKILL');
      stats.kills++;
      log(`killed env server A (:${pa}), kill ${stats.kills}`);
      await new Promise((r) => setTimeout(r, 2000)); // down for 2 s
      a = await serve(pa);
      log('env server A is back');
    }
  })();
  const deadline = t0 + minutes * 60_000;
  let current = trainProcess(['--config', 'sokoban-ppo', `logging.runDir=${run}`, ...overrides]);
  for (;;) {
    const timer = setTimeout(() => current.child.kill('SIGKILL'), Math.max(0, deadline - Date.now()));
    const r = await current.done;
    clearTimeout(timer);
    if (Date.now() >= deadline) break;
    if (r.code === 0) break;
    stats.failures++;
    stats.failureLines.push(r.last);
    log(`train exited ${r.code}: ${r.last.slice(0, 300)}`);
    while (
      !(await fetch(`http://127.0.0.1:${pa}/health`)
        .then((x) => x.ok)
        .catch(() => false))
    )
      await new Promise((res) => setTimeout(res, 200));
    stats.resumes++;
    current = trainProcess(['--resume', run]);
  }
  stopping = true;
  await killer;
  const k = latestCheckpoint(join(run, 'checkpoints'))?.step ?? 0;
  const final = k + 2;
  log(`soak over after ${minutes} min: last checkpoint step ${k}; finishing to step ${final} without kills`);
  const fin = trainProcess(['--resume', run, `trainer.steps=${final}`]);
  const fr = await fin.done;
  if (fr.code !== 0) throw new Error(`the finishing resume failed: ${fr.last}`);
  log('training the uninterrupted reference run');
  const ref = join(out, 'reference');
  const rr = await trainProcess([
    '--config',
    'sokoban-ppo',
    `logging.runDir=${ref}`,
    ...overrides,
    `trainer.steps=${final}`,
  ]).done;
  if (rr.code !== 0) throw new Error(`the reference run failed: ${rr.last}`);
  a.kill('SIGKILL');
  b.kill('SIGKILL');
  const ms = metricsOf(run);
  const mr = metricsOf(ref);
  const equal = JSON.stringify(ms) === JSON.stringify(mr);
  const firstDiff = ms.findIndex((m, i) => JSON.stringify(m) !== JSON.stringify(mr[i]));
  const report = {
    minutes,
    killEvery,
    steps: final,
    checkpointAtDeadline: k,
    serverKills: stats.kills,
    trainFailures: stats.failures,
    resumes: stats.resumes + 1,
    metricsEqual: equal,
    firstDifferentStep: equal ? null : (ms[firstDiff]?.['step'] ?? null),
    failureLines: stats.failureLines,
  };
  writeFileSync(join(out, 'report.json'), JSON.stringify(report, null, 1));
  log(JSON.stringify(report, null, 1));
  if (!existsSync(join(run, 'resumes.jsonl'))) log('note: no resumes.jsonl in the run directory');
  process.exitCode = equal ? 0 : 1;
}

await main();
