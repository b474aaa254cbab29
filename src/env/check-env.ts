// checkEnv: the conformance check every env must pass (run in the tests over every registered id).
// Follows Gymnasium's utils/env_checker.py: determinism per seed, well-formed results, call-order errors.
import { ResetNeededError, Rng } from '../util/index.js';
import type { Env, EnvInfo, EnvMode, ObservationSpace, ResetResult, StepResult } from './core.js';
import { envSpec, makeEnv, resolveEnvConfig } from './registry.js';

/** Options of `checkEnv`. */
export interface CheckEnvOptions {
  /** Seeds to reset with. @default [0, 1, 2] */
  seeds?: number[];
  /** The solver's actions for a seed (from the env's spec), used as the valid trajectory. */
  solve?: (seed: number, mode: EnvMode) => string[] | undefined;
  /** Creates another instance of the same env, to check that determinism holds across instances. */
  make?: () => Env;
  /** Most steps of one random-action trajectory. @default 300 */
  maxSteps?: number;
}

/** Thrown by `checkEnv` with every problem found, one a line. */
export class EnvCheckError extends Error {
  constructor(readonly problems: string[]) {
    super(`The env failed ${problems.length} conformance check(s):\n- ${problems.join('\n- ')}`);
    this.name = 'EnvCheckError';
  }
}

/** Action texts an LLM may emit that must never make `step` throw. */
export const HOSTILE_ACTIONS: readonly string[] = [
  '',
  '   ',
  'x'.repeat(100_000),
  '💥 ünïcödé ⟨⟩ 漢字 \u202e',
  '\u0000\u0001\u0007\b\u001b[2J\r\n\t',
  '<answer>',
  '</answer><answer>',
  '9'.repeat(400),
  '-1e309',
  'NaN',
  '__proto__',
  'constructor',
];

const INVALID_NAME = 'definitely-not-an-action-\u0007';

type Trajectory = { reset: ResetResult; steps: { action: string; result: StepResult }[] };

/**
 * Checks `env` (fresh: never reset) against the Env contract and throws `EnvCheckError` listing every
 * problem. Checks: step before reset and after the episode ended throw `ResetNeededError`; reset and a
 * trajectory of valid actions (the solver's, or random action names) are the same for the same seed
 * (also across instances with `make`, and in `val` mode); observations are strings, rewards finite,
 * info has boolean `success`/`actionIsValid`/`actionIsEffective` and scalar other values; an invalid
 * action is reported as invalid and leaves `render()` (and the image) unchanged; with a declared `observationSpace`
 * image, every observation carries exactly one RGB image of that size and `width * height * 3` bytes; hostile action text never throws;
 * `close()` may be called twice.
 */
export async function checkEnv(env: Env, options: CheckEnvOptions = {}): Promise<void> {
  const seeds = options.seeds ?? [0, 1, 2];
  const maxSteps = options.maxSteps ?? 300;
  const problems: string[] = [];
  const problem = (msg: string): void => void (problems.length < 50 && problems.push(msg));
  checkSpace(env.observationSpace, problem);

  await expectResetNeeded(() => env.step('anything'), 'step() before the first reset()', problem);

  let anyEnded = false;
  for (const seed of seeds) {
    for (const mode of ['train', 'val'] as const) {
      const where = `seed ${seed} (${mode})`;
      const first = await trajectory(env, seed, mode, options, maxSteps, where, problem);
      const again = await trajectory(
        env,
        seed,
        mode,
        options,
        maxSteps,
        where,
        problem,
        first.steps.map((s) => s.action),
      );
      if (!sameJson(first, again))
        problem(`${where}: the same seed and actions gave a different trajectory (${firstDifference(first, again)})`);
      if (options.make && mode === 'train') {
        const other = options.make();
        const third = await trajectory(
          other,
          seed,
          mode,
          options,
          maxSteps,
          where,
          problem,
          first.steps.map((s) => s.action),
        );
        if (!sameJson(first, third))
          problem(
            `${where}: another instance gave a different trajectory for the same seed and actions (${firstDifference(first, third)})`,
          );
        await other.close();
      }
      const last = first.steps.at(-1)?.result;
      if (last && (last.terminated || last.truncated)) {
        anyEnded = true;
        await expectResetNeeded(
          () => env.step(first.steps.at(-1)!.action),
          `${where}: step() after the episode ended`,
          problem,
        );
      }
    }
    await checkInvalidAction(env, seed, problem);
    await checkHostileActions(env, seed, problem);
  }
  if (!anyEnded)
    problem(
      `no episode ended within ${maxSteps} valid actions for seeds ${seeds.join(', ')}, so step-after-end was not checked; give the env a solver`,
    );

  try {
    await env.close();
    await env.close();
  } catch (err) {
    problem(`close() twice threw: ${String(err)}`);
  }
  if (problems.length > 0) throw new EnvCheckError(problems);
}

/** `checkEnv` on a registered id, with its solver and a second instance from the registry. */
export async function checkRegisteredEnv(
  id: string,
  options: Omit<CheckEnvOptions, 'solve' | 'make'> = {},
): Promise<void> {
  const spec = envSpec(id);
  const config = resolveEnvConfig(id);
  const solve = spec.solve ? (seed: number, mode: EnvMode) => spec.solve!(config, seed, mode) : undefined;
  const env = makeEnv(id);
  const declared = JSON.stringify(spec.observationSpace?.(config));
  if (declared !== JSON.stringify(env.observationSpace))
    throw new EnvCheckError([
      `the spec's observationSpace ${declared ?? 'undefined'} differs from the env's ${JSON.stringify(env.observationSpace) ?? 'undefined'}`,
    ]);
  await checkEnv(env, { ...options, solve, make: () => makeEnv(id) });
}

/** Reset, then play the given actions, the solver's, or random action names until the episode ends. */
async function trajectory(
  env: Env,
  seed: number,
  mode: EnvMode,
  options: CheckEnvOptions,
  maxSteps: number,
  where: string,
  problem: (msg: string) => void,
  actions?: string[],
): Promise<Trajectory> {
  const reset = await env.reset({ seed, mode });
  checkResult(reset, env.observationSpace, `${where} reset`, problem);
  const names = env.actionNames;
  if (names !== undefined) checkActionNames(names, where, problem);
  const plan = actions ?? options.solve?.(seed, mode);
  const rng = new Rng(seed);
  const steps: Trajectory['steps'] = [];
  for (let t = 0; t < (plan ? plan.length : maxSteps); t++) {
    const action = plan ? plan[t]! : names && names.length > 0 ? rng.choice(names) : undefined;
    if (action === undefined) break; // free-text env without a solver: no valid actions to play
    const result = await env.step(action);
    checkResult(result, env.observationSpace, `${where} step ${t + 1} (${JSON.stringify(action)})`, problem);
    steps.push({ action, result });
    if (result.terminated || result.truncated) break;
  }
  return { reset, steps };
}

function checkActionNames(names: readonly string[], where: string, problem: (msg: string) => void): void {
  if (names.length === 0) problem(`${where}: actionNames is empty after reset (use undefined for free-text actions)`);
  const lower = names.map((n) => n.toLowerCase());
  if (new Set(lower).size !== names.length)
    problem(`${where}: actionNames are not unique ignoring case: ${names.join(', ')}`);
  if (names.some((n) => typeof n !== 'string' || n.trim() !== n || n === ''))
    problem(`${where}: actionNames must be non-empty trimmed strings`);
}

function checkSpace(space: ObservationSpace | undefined, problem: (msg: string) => void): void {
  if (space === undefined) return;
  if (typeof space.text !== 'boolean') problem(`observationSpace.text is ${JSON.stringify(space.text)}, not a boolean`);
  if (space.image === undefined) return;
  const { width, height } = space.image;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1)
    problem(`observationSpace.image is ${width}x${height}; width and height must be positive integers`);
}

function checkImages(
  images: ResetResult['images'],
  space: ObservationSpace | undefined,
  where: string,
  problem: (msg: string) => void,
): void {
  const want = space?.image;
  if (want === undefined) {
    if (images !== undefined && images.length > 0)
      problem(`${where}: the observation carries images but the env declares no observationSpace image`);
    return;
  }
  if (images === undefined || images.length !== 1)
    return problem(
      `${where}: the observation carries ${images?.length ?? 0} images, not the 1 its observationSpace declares`,
    );
  const image = images[0]!;
  if (image.width !== want.width || image.height !== want.height)
    problem(`${where}: the image is ${image.width}x${image.height}, not the declared ${want.width}x${want.height}`);
  if (!(image.data instanceof Uint8Array)) return problem(`${where}: the image's data is not a Uint8Array`);
  if (image.data.length !== image.width * image.height * 3)
    problem(
      `${where}: the image's data has ${image.data.length} bytes, not width * height * 3 = ${image.width * image.height * 3}`,
    );
}

function checkResult(
  r: ResetResult | StepResult,
  space: ObservationSpace | undefined,
  where: string,
  problem: (msg: string) => void,
): void {
  if (typeof r.observation !== 'string') problem(`${where}: observation is ${typeof r.observation}, not a string`);
  checkImages(r.images, space, where, problem);
  if ('reward' in r) {
    if (typeof r.reward !== 'number' || !Number.isFinite(r.reward))
      problem(`${where}: reward ${r.reward} is not a finite number`);
    if (typeof r.terminated !== 'boolean' || typeof r.truncated !== 'boolean')
      problem(`${where}: terminated/truncated must be booleans`);
  }
  checkInfo(r.info, where, problem);
}

function checkInfo(info: EnvInfo, where: string, problem: (msg: string) => void): void {
  if (typeof info !== 'object' || info === null) return problem(`${where}: info is not an object`);
  for (const key of ['success', 'actionIsValid', 'actionIsEffective']) {
    if (typeof info[key] !== 'boolean') problem(`${where}: info.${key} is ${JSON.stringify(info[key])}, not a boolean`);
  }
  for (const [key, value] of Object.entries(info)) {
    const t = typeof value;
    if (value === undefined || t === 'boolean' || t === 'string') continue;
    if (t !== 'number') problem(`${where}: info.${key} is a ${t}; info values must be numbers, booleans or strings`);
    else if (!Number.isFinite(value)) problem(`${where}: info.${key} = ${value} is not finite`);
  }
}

async function checkInvalidAction(env: Env, seed: number, problem: (msg: string) => void): Promise<void> {
  await env.reset({ seed });
  const names = env.actionNames;
  // Discrete envs must reject a non-name; free-text envs choose what is invalid (e.g. an empty answer).
  const candidates = names !== undefined ? [INVALID_NAME, ...HOSTILE_ACTIONS] : [...HOSTILE_ACTIONS];
  for (const action of candidates) {
    const beforeImage = imageKey((await env.reset({ seed })).images);
    const before = env.render();
    let r: StepResult;
    try {
      r = await env.step(action);
    } catch {
      continue; // reported by checkHostileActions
    }
    if (action === INVALID_NAME && r.info.actionIsValid !== false)
      problem(
        `seed ${seed}: a non-action name ${JSON.stringify(INVALID_NAME)} gave actionIsValid ${r.info.actionIsValid}`,
      );
    if (r.info.actionIsValid === false) {
      const shown = JSON.stringify(action.slice(0, 20));
      if (env.render() !== before) problem(`seed ${seed}: the invalid action ${shown} changed render()`);
      if (imageKey(r.images) !== beforeImage) problem(`seed ${seed}: the invalid action ${shown} changed the image`);
      if (r.terminated)
        problem(`seed ${seed}: the invalid action ${shown} terminated the episode (it must leave the state unchanged)`);
      if (typeof r.info.reason !== 'string' || r.info.reason === '')
        problem(`seed ${seed}: the invalid action ${shown} gave no info.reason`);
    }
  }
}

async function checkHostileActions(env: Env, seed: number, problem: (msg: string) => void): Promise<void> {
  for (const action of HOSTILE_ACTIONS) {
    await env.reset({ seed });
    try {
      const r = await env.step(action);
      checkResult(
        r,
        env.observationSpace,
        `seed ${seed} hostile action ${JSON.stringify(action.slice(0, 20))}`,
        problem,
      );
    } catch (err) {
      problem(
        `seed ${seed}: step(${JSON.stringify(action.slice(0, 20))}${action.length > 20 ? '...' : ''}) threw ${String(err)}`,
      );
    }
  }
}

async function expectResetNeeded(call: () => unknown, what: string, problem: (msg: string) => void): Promise<void> {
  try {
    await call();
  } catch (err) {
    if (err instanceof ResetNeededError || (err as Error)?.name === 'ResetNeededError') return;
    return problem(`${what} threw ${String(err)}, not a ResetNeededError`);
  }
  problem(`${what} did not throw (it must throw ResetNeededError)`);
}

/** JSON with each image's bytes replaced by their hash, so images compare by content and cheaply. */
function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a, bytesAsHash) === JSON.stringify(b, bytesAsHash);
}

function bytesAsHash(_key: string, value: unknown): unknown {
  return value instanceof Uint8Array ? `bytes:${value.length}:${fnv1a(value)}` : value;
}

function imageKey(images: ResetResult['images']): string {
  return JSON.stringify(images ?? [], bytesAsHash);
}

/** The 32-bit FNV-1a hash of some bytes. */
function fnv1a(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

function firstDifference(a: Trajectory, b: Trajectory): string {
  if (!sameJson(a.reset, b.reset)) return 'the reset results differ';
  const n = Math.max(a.steps.length, b.steps.length);
  for (let i = 0; i < n; i++) if (!sameJson(a.steps[i], b.steps[i])) return `step ${i + 1} differs`;
  return 'unknown difference';
}
