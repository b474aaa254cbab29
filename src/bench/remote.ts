// The load test behind `ragen bench envs --remote`: N concurrent RemoteEnv sessions replaying solver plans
// against an env server on loopback for a fixed time, beside the same workload on one in-process env.
import { readFileSync } from 'node:fs';
import { Rng } from '../util/index.js';
import type { Env, EnvMode } from '../env/index.js';
import { envSpec, makeEnv, resolveEnvConfig, resolveEnvId } from '../env/index.js';
import { registerRemoteEnv, RemoteEnv } from '../env/remote/index.js';

/** Options of `benchRemote`. */
export interface RemoteBenchOptions {
  /** Env id (served by the server at `url`). */
  id: string;
  /** `ws://host:port` of a server that serves `id`. */
  url: string;
  /** Concurrent sessions. @default 1000 */
  sessions?: number;
  /** Wall time of the timed phase (remote), and of the in-process run. @default 3 */
  seconds?: number;
  /** The server's process id, to read its CPU time during the timed phase (Linux /proc). @default none */
  serverPid?: number;
  /**
   * `id` exists only on the server (a Python bridge env): plans are random action names from its
   * `/metadata` (or the numbers 0..31 for free text), and there is no in-process run. @default false
   */
  remoteOnly?: boolean;
}

/** What one load test measured. */
export interface RemoteBenchResult {
  id: string;
  sessions: number;
  /** Time to open every session (one reset each), before the timed phase. */
  connectSeconds: number;
  seconds: number;
  /** Steps answered over the wire, all sessions together. */
  steps: number;
  resets: number;
  stepsPerSecond: number;
  /** Resets answered per second: with the steps, the server's round trips. */
  resetsPerSecond: number;
  /** The same reset + plan workload on one in-process env, one step at a time (null for `remoteOnly`). */
  inProcessStepsPerSecond: number | null;
  /** Step round-trip latency percentiles (ms) under the load. */
  p50Ms: number;
  p99Ms: number;
  /** Steps or resets that failed (each is a bug or an overload worth reading in the server log). */
  errors: number;
  /** The first failure's message, when any. */
  firstError?: string;
  /** CPU seconds the server process used during the timed phase (null without serverPid or /proc). */
  serverCpuSeconds: number | null;
  /** steps / serverCpuSeconds: what one fully busy server core would answer (null when unknown). */
  stepsPerServerCpuSecond: number | null;
}

/** utime + stime of a process in seconds from /proc/<pid>/stat (Linux; clock ticks of 100 Hz), or null. */
function cpuSeconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd on (the name may hold spaces)
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null; // not Linux, or the process is gone: reported as unknown
  }
}

type Plan = { seed: number; actions: string[] };

/**
 * Action plans: the solver's per seed (64 seeds), else 32 random action names per seed (the names after
 * a reset; for a remote-only env the names its metadata lists, or the numbers 0..31 for free text).
 */
function plansFor(id: string, remoteOnly: boolean): Plan[] {
  const spec = envSpec(id);
  const config = resolveEnvConfig(id);
  const plans: Plan[] = [];
  for (let seed = 0; seed < 64; seed++) {
    const actions = spec.solve?.(config, seed, 'train');
    if (actions && actions.length > 0) plans.push({ seed, actions });
  }
  if (plans.length > 0) return plans;
  const env = makeEnv(id);
  const rng = new Rng(7);
  for (let seed = 0; seed < 64; seed++) {
    if (!remoteOnly) void env.reset({ seed }); // a local env is synchronous; a remote one keeps its metadata's names
    const names = env.actionNames ?? Array.from({ length: 32 }, (_, k) => String(k));
    plans.push({ seed, actions: Array.from({ length: 32 }, () => names[rng.int(names.length)]!) });
  }
  return plans;
}

/** Plays plans from `start` (reset, then each action until the episode ends) until `deadline`; counts steps. */
async function replay(
  env: Env,
  plans: Plan[],
  start: number,
  deadline: number,
  mode: EnvMode,
  latencies?: number[],
): Promise<{ steps: number; resets: number; errors: number; firstError?: string }> {
  let steps = 0;
  let resets = 0;
  let errors = 0;
  let firstError: string | undefined;
  for (let k = start; performance.now() < deadline; k++) {
    const plan = plans[k % plans.length]!;
    try {
      const r0 = env.reset({ seed: plan.seed, mode });
      if (r0 instanceof Promise) await r0; // sync envs stay sync: no await in the in-process baseline
      resets++;
      for (const action of plan.actions) {
        const t0 = performance.now();
        const pending = env.step(action);
        const r = pending instanceof Promise ? await pending : pending;
        latencies?.push(performance.now() - t0);
        steps++;
        if (r.terminated || r.truncated || performance.now() >= deadline) break;
      }
    } catch (err) {
      errors++; // counted and reported with the first message; a failing session stops replaying
      firstError ??= String(err);
      break;
    }
  }
  return { steps, resets, errors, ...(firstError ? { firstError } : {}) };
}

function percentile(sorted: Float64Array, q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Load-test `sessions` concurrent sessions of `id` at `url`, then the same workload in-process. */
export async function benchRemote(
  options: RemoteBenchOptions,
  progress?: (line: string) => void,
): Promise<RemoteBenchResult> {
  const remoteOnly = options.remoteOnly ?? false;
  const id = remoteOnly ? options.id : resolveEnvId(options.id);
  const sessions = options.sessions ?? 1000;
  const seconds = options.seconds ?? 3;
  const plans = plansFor(remoteOnly ? await registerRemoteEnv(`remote:${options.url}/${id}`) : id, remoteOnly);

  const t0 = performance.now();
  const envs = Array.from(
    { length: sessions },
    () => new RemoteEnv(`${options.url}/${id}`, { log: () => {}, timeoutS: 60, connectAttempts: 5 }),
  );
  const opened = await Promise.allSettled(envs.map((env, i) => env.reset({ seed: plans[i % plans.length]!.seed })));
  const failed = opened.filter((r) => r.status === 'rejected');
  if (failed.length > 0) {
    envs.forEach((e) => e.close());
    throw new Error(
      `${failed.length} of ${sessions} sessions could not open: ${String((failed[0] as PromiseRejectedResult).reason)}`,
    );
  }
  const connectSeconds = (performance.now() - t0) / 1000;
  progress?.(`${id}: ${sessions} sessions open in ${connectSeconds.toFixed(2)} s; stepping for ${seconds} s`);

  const latencies: number[] = [];
  const cpu0 = cpuSeconds(options.serverPid);
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const runs = await Promise.all(envs.map((env, i) => replay(env, plans, i, deadline, 'train', latencies)));
  const elapsed = (performance.now() - start) / 1000;
  const cpu1 = cpuSeconds(options.serverPid);
  const serverCpuSeconds = cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : null;
  envs.forEach((e) => e.close());
  const steps = runs.reduce((n, r) => n + r.steps, 0);
  const sorted = Float64Array.from(latencies).sort();

  let inProcessStepsPerSecond: number | null = null;
  if (!remoteOnly) {
    progress?.(`${id}: in-process, the same workload for ${seconds} s`);
    const local = makeEnv(id);
    const l0 = performance.now();
    const localRun = await replay(local, plans, 0, l0 + seconds * 1000, 'train');
    inProcessStepsPerSecond = localRun.steps / ((performance.now() - l0) / 1000);
    await local.close();
  }

  return {
    id,
    sessions,
    connectSeconds,
    seconds: elapsed,
    steps,
    resets: runs.reduce((n, r) => n + r.resets, 0),
    stepsPerSecond: steps / elapsed,
    resetsPerSecond: runs.reduce((n, r) => n + r.resets, 0) / elapsed,
    inProcessStepsPerSecond,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    serverCpuSeconds,
    stepsPerServerCpuSecond: serverCpuSeconds ? steps / serverCpuSeconds : null,
    ...(runs.find((r) => r.firstError) ? { firstError: runs.find((r) => r.firstError)!.firstError! } : {}),
  };
}
