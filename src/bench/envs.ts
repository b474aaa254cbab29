// The env benchmark behind `ragen bench envs`: resets/s and steps/s of one env id, single-threaded.
// Steps replay valid actions (the solver's, else random action names); only step() calls are timed.
import { Rng } from '../util/index.js';
import type { Env, EnvMode, StepResult } from '../env/index.js';
import { envSpec, makeEnv, resolveEnvConfig, resolveEnvId } from '../env/index.js';

/** Options of `benchEnv`. */
export interface BenchEnvOptions {
  /** Wall time of each measurement (resets, then steps). @default 2 */
  seconds?: number;
  /** Untimed warm-up (JIT) before each measurement. @default min(0.25, seconds) */
  warmupSeconds?: number;
  /** Config overrides for `makeEnv`. @default {} */
  config?: Record<string, unknown>;
  /** Seeds whose action sequences the step measurement cycles through. @default 64 */
  seedPool?: number;
}

/** One env's throughput. `stepsPerSecond` is null for free-text envs without a solver. */
export interface BenchEnvResult {
  id: string;
  resetsPerSecond: number;
  stepsPerSecond: number | null;
  /** Where the stepped actions came from. */
  actions: 'solver' | 'random' | 'none';
  resets: number;
  steps: number;
  /** Mean steps per episode in the step measurement. */
  meanEpisodeLength: number | null;
}

/** Episodes longer than this are cut (reset) in the step measurement, e.g. random play that never ends. */
const MAX_EPISODE_STEPS = 1000;

/** Measure one env id. Async envs are awaited (and measured with that overhead). */
export async function benchEnv(id: string, options: BenchEnvOptions = {}): Promise<BenchEnvResult> {
  const seconds = options.seconds ?? 2;
  const warmup = options.warmupSeconds ?? Math.min(0.25, seconds);
  const poolSize = options.seedPool ?? 64;
  id = resolveEnvId(id);
  const spec = envSpec(id);
  const config = resolveEnvConfig(id, options.config ?? {});
  const env = makeEnv(id, options.config ?? {});
  const mode: EnvMode = 'train';

  await measureResets(env, warmup);
  const resets = await measureResets(env, seconds);

  // Action plans, computed before timing: the solver's sequence per seed, or random names.
  let source: BenchEnvResult['actions'] = 'none';
  const plans: Plan[] = [];
  for (let seed = 0; seed < poolSize; seed++) {
    const actions = spec.solve?.(config, seed, mode);
    if (actions && actions.length > 0) {
      source = 'solver';
      plans.push({ seed, actions });
    }
  }
  if (source === 'none') {
    await env.reset({ seed: 0, mode });
    if (env.actionNames !== undefined && env.actionNames.length > 0) source = 'random';
  }
  let result: BenchEnvResult = {
    id,
    resetsPerSecond: resets.count / resets.seconds,
    stepsPerSecond: null,
    actions: source,
    resets: resets.count,
    steps: 0,
    meanEpisodeLength: null,
  };
  if (source !== 'none') {
    await measureSteps(env, plans, warmup, mode);
    const steps = await measureSteps(env, plans, seconds, mode);
    result = {
      ...result,
      stepsPerSecond: steps.count / steps.seconds,
      steps: steps.count,
      meanEpisodeLength: steps.count / Math.max(1, steps.episodes),
    };
  }
  await env.close();
  return result;
}

async function measureResets(env: Env, seconds: number): Promise<{ count: number; seconds: number }> {
  const start = performance.now();
  const end = start + seconds * 1000;
  let count = 0;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 16; i++) {
      const r = env.reset({ seed: count++ });
      if (r instanceof Promise) await r;
    }
    now = performance.now();
  }
  return { count, seconds: (now - start) / 1000 };
}

/** Steps until `seconds` of step() time is spent; resets between episodes are not timed. */
type Plan = { seed: number; actions: string[] };

async function measureSteps(
  env: Env,
  plans: Plan[],
  seconds: number,
  mode: EnvMode,
): Promise<{ count: number; seconds: number; episodes: number }> {
  const rng = new Rng(12345);
  const budget = seconds * 1000;
  let spent = 0;
  let count = 0;
  let episodes = 0;
  let seed = 0;
  while (spent < budget) {
    const plan = plans.length > 0 ? plans[seed % plans.length]!.actions : undefined;
    const r0 = env.reset({ seed: plans.length > 0 ? plans[seed % plans.length]!.seed : seed, mode });
    if (r0 instanceof Promise) await r0;
    seed++;
    const names = env.actionNames ?? [];
    // Random actions are drawn before the timed loop so the RNG is not timed.
    const actions = plan ?? Array.from({ length: 64 }, () => names[rng.int(names.length)]!);
    const t0 = performance.now();
    let n = 0;
    for (;;) {
      let r: StepResult | Promise<StepResult> = env.step(actions[n % actions.length]!);
      if (r instanceof Promise) r = await r;
      n++;
      if (r.terminated || r.truncated || n >= MAX_EPISODE_STEPS || (plan && n >= plan.length)) break;
    }
    spent += performance.now() - t0;
    count += n;
    episodes++;
  }
  return { count, seconds: spent / 1000, episodes };
}
