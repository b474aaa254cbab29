// Wall-time gain of async rollouts (trainer.async) where it matters: envs with latency. `--env remote` (default):
// SimpleSokoban served by `ragen env serve --step-delay-ms <--latency-ms>` in a child process, trained through its
// `remote:ws://...` id (a real env server: WebSocket sessions, a delay per reset and step). `--env inprocess`: the
// stand-in `LatentSokoban`, SimpleSokoban whose reset and step each await a `--latency-ms` timer in this process.
// Trains --model (models/ragen-tiny, which plays valid moves, so every turn steps the env; `micro` is a 2-layer random
// model that mostly does not) for --steps steps synchronously, then with trainer.async (maxStaleness --staleness),
// --rounds times each. Usage: npx tsx src/bench/scripts/bench-async.ts [--env remote|inprocess] [--latency-ms 1000]
// [--steps 6] [--staleness 1] [--rounds 1]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import os from 'node:os';
import { join } from 'node:path';
import '../../envs/index.js';
import { envSpec, registerEnv, type Env } from '../../env/index.js';
import { loadConfig } from '../../config/index.js';
import { readMetricsFile } from '../../metrics/index.js';
import { train } from '../../train/index.js';
import { writeMicroModel } from '../../train/testing.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const latencyMs = arg('latency-ms', 1000);
const steps = arg('steps', 6);
const rounds = arg('rounds', 1);
const staleness = arg('staleness', 1);
const mi = process.argv.indexOf('--model');
const modelArg = mi >= 0 ? process.argv[mi + 1]! : 'models/ragen-tiny';
const ei = process.argv.indexOf('--env');
const envMode = ei >= 0 ? process.argv[ei + 1]! : 'remote';
if (envMode !== 'remote' && envMode !== 'inprocess') throw new Error(`--env ${envMode}: give remote or inprocess`);

if (steps < staleness + 2)
  throw new Error(
    `--steps ${steps} leaves no steady state after the first ${staleness + 1} steps; give at least ${staleness + 2}`,
  );
const steadyFrom = staleness + 2;
const delay = () => new Promise((r) => setTimeout(r, latencyMs));
const inner = envSpec('SimpleSokoban');
registerEnv('LatentSokoban', {
  ...inner,
  description: `SimpleSokoban with ${latencyMs} ms per reset and step (a remote env's round trip)`,
  create(config) {
    const env = inner.create(config);
    const latent: Env = {
      get instruction() {
        return env.instruction;
      },
      get legend() {
        return env.legend;
      },
      get actionNames() {
        return env.actionNames;
      },
      async reset(o) {
        await delay();
        return env.reset(o);
      },
      async step(a) {
        await delay();
        return env.step(a);
      },
      render: () => env.render(),
      close: () => env.close(),
    };
    return latent;
  },
});

/** `ragen env serve SimpleSokoban --port 0 --step-delay-ms <latency>` in a child process; resolves with its env id. */
async function startEnvServer(): Promise<{ tag: string; stop: () => void }> {
  const main = new URL('../../cli/main.ts', import.meta.url).pathname;
  const script = `const { main } = await import(${JSON.stringify(main)}); process.exitCode = await main(['env', 'serve', 'SimpleSokoban', '--port', '0', '--step-delay-ms', '${latencyMs}']);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const tag = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('ragen env serve did not start within 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`ragen env serve exited with ${code} before serving`)));
    lines.on('line', (line) => {
      const m = /(remote:ws:\/\/\S+\/SimpleSokoban)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });
  return { tag, stop: () => child.kill('SIGTERM') };
}
const remote = envMode === 'remote' ? await startEnvServer() : undefined;
const trainTag = remote ? `"${remote.tag}"` : 'LatentSokoban';

const root = mkdtempSync(join(os.tmpdir(), 'ragen-bench-async-'));
const modelDir = modelArg === 'micro' ? await writeMicroModel(join(root, 'micro')) : modelArg;
let run = 0;
/**
 * Seconds per step: mean of timing_s/step over the whole run, and over the steady state (steps after the first
 * maxStaleness + 1, while the pipeline fills); the async run's rollout wait and stale-token fraction.
 */
async function oneRun(asyncOn: boolean): Promise<{ perStep: number; steady: number; wait: number; staleFrac: number }> {
  const config = loadConfig({
    config: 'sokoban-ppo', // ragen-tiny's agent settings (it plays valid moves with them)
    overrides: [
      `model.path=${modelDir}`,
      `logging.runDir=${join(root, `run-${++run}`)}`,
      'logging.console=none',
      `env.train=[{tag: ${trainTag}, groups: 4, groupSize: 4}]`,
      'env.val=[{tag: SimpleSokoban, groups: 1}]',
      'agent.maxTurns=3',
      `trainer.steps=${steps}`,
      'trainer.miniBatchSize=8',
      'trainer.microBatchSize=8',
      'trainer.actorLr=1e-5',
      'trainer.valEvery=0',
      'trainer.valBeforeTrain=false',
      `trainer.checkpointEvery=${steps}`,
      'trainer.saveOptimizer=false',
      'trainer.collapse.every=0',
      `trainer.async.enabled=${asyncOn}`,
      `trainer.async.maxStaleness=${staleness}`,
    ],
  });
  const r = await train({ config });
  const m = readMetricsFile(join(r.runDir, 'metrics.jsonl'));
  const mean = (k: string, from = 1) => {
    const xs = m.filter((x) => x.step >= from);
    return xs.reduce((a, x) => a + ((x[k] as number | undefined) ?? 0), 0) / xs.length;
  };
  return {
    perStep: mean('timing_s/step'),
    steady: mean('timing_s/step', steadyFrom),
    wait: mean('timing_s/rollout_wait'),
    staleFrac: mean('async/stale_token_frac'),
  };
}

console.log(
  `node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} x ${os.cpus().length}, load average ${os.loadavg()[0]!.toFixed(2)}`,
);
const where = remote
  ? `SimpleSokoban on \`ragen env serve --step-delay-ms ${latencyMs}\` (${remote.tag})`
  : `LatentSokoban (in-process, ${latencyMs} ms timer per reset/step)`;
console.log(
  `${modelArg}, ${where}, 16 episodes x 3 turns per step (sokoban-ppo's agent settings), ${steps} steps, best of ${rounds}`,
);
let bestSync = { perStep: Infinity, steady: Infinity };
let bestAsync = { perStep: Infinity, steady: Infinity, wait: 0, staleFrac: 0 };
try {
  for (let i = 0; i < rounds; i++) {
    const s = await oneRun(false);
    if (s.perStep < bestSync.perStep) bestSync = s;
    const a = await oneRun(true);
    if (a.perStep < bestAsync.perStep) bestAsync = a;
  }
} finally {
  remote?.stop();
}
if (!process.argv.includes('--keep')) rmSync(root, { recursive: true, force: true });
else console.log(`runs kept in ${root}`);
console.log(`                         all steps    steps ${steadyFrom}-${steps} (pipeline full)`);
console.log(`synchronous:             ${bestSync.perStep.toFixed(3)} s/step  ${bestSync.steady.toFixed(3)} s/step`);
console.log(
  `async (maxStaleness ${staleness}): ${bestAsync.perStep.toFixed(3)} s/step  ${bestAsync.steady.toFixed(3)} s/step   (waited ${bestAsync.wait.toFixed(3)} s/step for rollouts; ${(100 * bestAsync.staleFrac).toFixed(0)}% of trained tokens stale)`,
);
console.log(
  `wall-time gain:          ${(bestSync.perStep / bestAsync.perStep).toFixed(2)}x          ${(bestSync.steady / bestAsync.steady).toFixed(2)}x`,
);
