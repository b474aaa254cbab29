// The evaluation runner behind `ragen eval`, the lab and the docs: validation rollouts of a policy (a model, the
// env's solver, random actions or an endpoint) on env tags, their metrics per tag, and the trajectories as JSONL.
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  EnvGroups,
  agentConfig,
  enginePolicy,
  oraclePolicy,
  openaiPolicy,
  randomPolicy,
  episodeRecord,
  rollout,
  writeEpisodeRecords,
  type AgentConfig,
  type EpisodeRecord,
  type EpisodeUsage,
  type OpenAIPolicy,
  type Policy,
  type RolloutBatch,
} from '../agent/index.js';
import { envSpec, resolveEnvId } from '../env/index.js';
import { registerRemoteEnvs } from '../env/remote/index.js';
import { loadTokenizer, runTokenizer, tinyTokenizerDir, type Tokenizer } from '../tokenizer/index.js';
import {
  agentEntries,
  checkPromptsFit,
  defaultConfig,
  envGroupsOptions,
  loadConfig,
  loadSavedConfig,
  samplingOf,
  tagEntries,
  type RagenConfig,
} from '../config/index.js';
import { loadTextConfig } from '../model/index.js';
import { fileSystemError, makeDir, parseConfigPairs, UsageError, withSetting, writeFileAt } from '../util/index.js';
import { validationBatch } from '../train/index.js';
import { fetchHubModel, resolveModelDir } from './model-dir.js';
import type { EvalReport } from './report.js';

/** Who plays an evaluation: a model, the env's solver, random actions, or an OpenAI-compatible endpoint. */
export const POLICIES = ['oracle', 'random', 'model', 'openai'] as const;
export type PolicyName = (typeof POLICIES)[number];

/** Options of `ragen eval`, as commander parses them. */
export interface EvalOptions {
  env?: string;
  run?: string;
  preset?: string;
  groups?: number;
  groupSize?: number;
  policy?: PolicyName;
  model?: string;
  tokenizer?: string;
  temperature?: number;
  greedy?: boolean;
  maxTurns?: number;
  seed?: number;
  set?: string[];
  config?: string[];
  json?: boolean;
  out?: string;
  baseUrl?: string;
  apiKey?: string;
  api?: 'chat' | 'completions';
  concurrency?: number;
  maxRetries?: number;
  timeout?: number;
  allowUnverifiedCheckpoint?: boolean;
}

/**
 * Check that `--out` can be written before any rollout runs (so a bad path fails now, not after the work): its folder
 * is created (never under /proc & co., see makeDir), and `<out>.tmp` beside it takes a page of bytes (a full disk
 * fails here) and is emptied; it receives the records and is renamed into place at the end.
 */
function openOut(out: string): string {
  const tmp = `${out}.tmp`;
  try {
    if (existsSync(out) && statSync(out).isDirectory()) throw new Error('it is a directory');
    makeDir(dirname(out), 'create the folder of --out', '--out');
    writeFileAt(tmp, Buffer.alloc(4096, 0x20), 'write --out', '--out'); // ENOSPC/EDQUOT now rather than after every episode ran
    writeFileAt(tmp, '', 'write --out', '--out');
  } catch (err) {
    if (existsSync(tmp)) rmSync(tmp, { force: true }); // (rmSync throws ENOTDIR itself when a part of the path is a file)
    const e = withSetting(fileSystemError(err, 'write --out', tmp), '--out');
    throw new UsageError(
      `Cannot write --out \`${out}\` (${(e as Error).message.replace(/\.$/, '')}); give a file path in a writable folder. Nothing was run.`,
    );
  }
  return tmp;
}

/**
 * Run the evaluation `opts` describe and return its report; `onReport` sees it before --out is written (when given).
 */
export async function runEval(opts: EvalOptions, onReport?: (report: EvalReport) => void): Promise<EvalReport> {
  if (opts.run && opts.preset) throw new UsageError('Give --run or --preset, not both.');
  const base: RagenConfig | undefined = opts.run
    ? loadSavedConfig(opts.run)
    : opts.preset
      ? loadConfig({ config: opts.preset })
      : undefined;
  if (base && !opts.env && agentEntries(base, 'val').length > 0) return evalAgents(base, opts, onReport);
  await registerRemoteEnvs([
    ...(opts.env ?? '').split(',').map((s) => s.trim()),
    ...(base ? tagEntries(base, 'val').map((e) => e.tag) : []),
  ]);
  let cfg = agentOf(base, opts);
  const setTurns = parseConfigPairs(opts.set)['maxTurns'];
  if (opts.maxTurns !== undefined && setTurns !== undefined && setTurns !== opts.maxTurns) {
    throw new UsageError(
      `\`--max-turns ${opts.maxTurns}\` and \`--set maxTurns=${JSON.stringify(setTurns)}\` both set the turns per episode, to different values; give one of them.`,
    );
  }
  const baseGroups = base ? envGroupsOptions(base, 'val') : undefined;
  const envConfig = envConfigOverrides(parseConfigPairs(opts.config));
  const seed = opts.seed ?? (base ?? defaultConfig()).seed.val;
  const groupSize = opts.groupSize ?? baseGroups?.groupSize ?? 1;
  const maxTurnsOf = (env: string) =>
    opts.maxTurns ??
    (base ? cfg.maxTurns : Math.min(100, Math.ceil(envSpec(env).maxActionsPerEpisode / cfg.maxActionsPerTurn)));
  let tags;
  if (opts.env) {
    const ids = opts.env
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
      .map(resolveEnvId);
    if (ids.length === 0) throw new UsageError('Give at least one env id to --env, e.g. --env SimpleSokoban.');
    tags = ids.map((env) => ({
      env,
      nGroups: opts.groups ?? 8,
      config: { ...(base?.env.config[env] ?? {}), ...envConfig.of(env) },
      maxTurns: maxTurnsOf(env),
    }));
  } else if (baseGroups) {
    tags = baseGroups.tags.map((t) => ({
      ...t,
      nGroups: opts.groups ?? t.nGroups,
      config: { ...t.config, ...envConfig.of(t.env) },
      maxTurns: maxTurnsOf(t.env),
    }));
  } else {
    throw new UsageError(
      'Give --env <ids> (e.g. --env SimpleSokoban), or --run/--preset to use their validation envs.',
    );
  }
  for (const env of envConfig.tagged) {
    if (!tags.some((t) => t.env === env))
      throw new UsageError(
        `--config sets \`${env}.*\`, but \`${env}\` is not among the evaluated envs (${tags.map((t) => t.env).join(', ')}).`,
      );
  }
  const policyName = opts.policy ?? (base || opts.model ? 'model' : 'oracle');
  let modelDir: string | undefined;
  if (policyName === 'model') modelDir = await modelDirOf(opts, base);
  if (policyName === 'openai') {
    if (!opts.baseUrl || !opts.model)
      throw new UsageError(
        '--policy openai needs --base-url <url> and --model <name>, e.g. --base-url http://127.0.0.1:8000/v1 --model ragen-tiny.',
      );
    if (opts.run) modelDir = resolveModelDir(opts.run, verifyOptions(opts)); // its tokenizer reads the replies
  }
  const tokenizer = tokenizerOf(opts, modelDir, base);
  // what `ragen train` refuses, eval refuses: a budget no first prompt fits, or one past the model's positions
  const positions = policyName === 'model' ? (await loadTextConfig(modelDir!)).maxPositionEmbeddings : Infinity;
  // without a run or preset, the context budget defaults to what the model holds (RAGEN's 3600 is past a tiny model's)
  if (!base && parseConfigPairs(opts.set)['maxContextTokens'] === undefined && cfg.maxContextTokens > positions)
    cfg = { ...cfg, maxContextTokens: positions };
  await checkPromptsFit(
    [{ label: opts.env ? '--env' : 'env.val', options: { tags, groupSize, mode: 'val', seed } }],
    tokenizer,
    cfg,
    positions,
  );
  const temperature = opts.greedy
    ? 0
    : (opts.temperature ?? samplingOf(base ?? defaultConfig(), 'val', seed).temperature);
  const policy =
    policyName === 'openai'
      ? openaiOf(opts, cfg, tokenizer, temperature, seed)
      : await makePolicy(policyName, cfg, tokenizer, modelDir, temperature, seed);
  const usageOf = (e: { index: number }) =>
    'usage' in policy ? (policy as OpenAIPolicy).usage.get(e.index) : undefined;
  const tmp = opts.out !== undefined ? openOut(opts.out) : undefined;
  const groups = new EnvGroups({ tags, groupSize, mode: 'val', seed });
  const t0 = performance.now();
  let batch: RolloutBatch;
  try {
    batch = await rollout({ groups, policy, tokenizer, agent: cfg });
  } catch (err) {
    if (tmp) rmSync(tmp, { force: true });
    throw err;
  } finally {
    await groups.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  let usage: EvalReport['usage'];
  if ('usage' in policy) {
    usage = { promptTokens: 0, completionTokens: 0, requests: 0, retries: 0 };
    for (const u of (policy as OpenAIPolicy).usage.values())
      for (const k of Object.keys(usage) as (keyof EpisodeUsage)[]) usage[k] += u[k];
  }
  const report: EvalReport = {
    policy: policy.name,
    envs: tags.map((t) => t.env),
    groups: tags[0]!.nGroups,
    groupSize,
    seed,
    episodes: batch.episodes.length,
    seconds,
    metrics: batch.metrics,
    ...(usage ? { usage } : {}),
  };
  onReport?.(report); // before the file: the summary survives whatever happens to --out
  if (tmp)
    writeRecords(
      tmp,
      opts.out!,
      batch.episodes.map((e) => withUsage(episodeRecord(e, cfg), usageOf(e))),
    );
  return report;
}

/**
 * The validation set of a run or preset that holds agent programs (`env.val.N.agent`): the whole set, built-in tags
 * and agent entries, rolled out as `ragen train` validates (src/train/validate.ts), by the model on the local engine;
 * --groups, --group-size, --seed, --temperature/--greedy and --set apply, and with --run and the same seed the
 * numbers are the run's last `val/*`.
 */
async function evalAgents(
  base: RagenConfig,
  opts: EvalOptions,
  onReport?: (report: EvalReport) => void,
): Promise<EvalReport> {
  const which = agentEntries(base, 'val')
    .map((e) => `env.val.${e.index}`)
    .join(', ');
  const refuse = (what: string) =>
    new UsageError(
      `${what} does not apply to agent programs (${which}); leave it out, or give --env <ids> to evaluate built-in envs.`,
    );
  if (opts.policy && opts.policy !== 'model') throw refuse(`--policy ${opts.policy}`);
  if (opts.config?.length) throw refuse('--config');
  if (opts.maxTurns !== undefined) throw refuse('--max-turns');
  const config = agentEvalConfig(base, opts);
  const { agent } = config;
  const seed = config.seed.val;
  const modelDir = await modelDirOf(opts, base);
  const tokenizer = tokenizerOf(opts, modelDir, base);
  // the built-in tags of the val set are checked as `ragen train` checks them (agent programs: each call, by the
  // gateway)
  const builtIn =
    tagEntries(config, 'val').length > 0 ? [{ label: 'env.val', options: envGroupsOptions(config, 'val') }] : [];
  await checkPromptsFit(builtIn, tokenizer, agent, (await loadTextConfig(modelDir)).maxPositionEmbeddings);
  const tmp = opts.out !== undefined ? openOut(opts.out) : undefined;
  const engine = await localEngine(modelDir, tokenizer);
  const t0 = performance.now();
  let batch: RolloutBatch;
  try {
    batch = (await validationBatch(config, engine, tokenizer, agent, (line) => console.error(line)))!;
  } catch (err) {
    if (tmp) rmSync(tmp, { force: true });
    throw err;
  } finally {
    engine.dispose();
  }
  const first = config.env.val[0]!;
  const report: EvalReport = {
    policy: `model(local): ${modelDir}`,
    envs: Object.keys(batch.metrics),
    groups: first.groups,
    groupSize: batch.groupSize,
    seed,
    episodes: batch.episodes.length,
    seconds: (performance.now() - t0) / 1000,
    metrics: batch.metrics,
    agents: agentEntries(config, 'val').map((e) => e.name),
  };
  onReport?.(report);
  if (tmp)
    writeRecords(
      tmp,
      opts.out!,
      batch.episodes.map((e) => episodeRecord(e, agent)),
    );
  return report;
}

/**
 * The config an agent val set is evaluated with: --set, --seed, --temperature/--greedy, --groups and --group-size over
 * the base's.
 */
export function agentEvalConfig(base: RagenConfig, opts: EvalOptions): RagenConfig {
  const val = base.generation.val;
  return {
    ...base,
    agent: agentOf(base, opts),
    seed: { ...base.seed, val: opts.seed ?? base.seed.val },
    generation: {
      ...base.generation,
      val: opts.greedy
        ? { ...val, greedy: true }
        : opts.temperature !== undefined
          ? { temperature: opts.temperature, greedy: opts.temperature === 0 }
          : val,
    },
    env: {
      ...base.env,
      val: base.env.val.map((e) => ({
        ...e,
        ...(opts.groups !== undefined ? { groups: opts.groups } : {}),
        ...(opts.groupSize !== undefined ? { groupSize: opts.groupSize } : {}),
      })),
    },
  };
}

/** The records into `tmp`, renamed onto `out`: the file appears whole, or not at all. */
function writeRecords(tmp: string, out: string, records: EpisodeRecord[]): void {
  try {
    writeEpisodeRecords(tmp, records);
    renameSync(tmp, out);
  } catch (err) {
    throw withSetting(fileSystemError(err, 'write --out', out), '--out');
  } finally {
    rmSync(tmp, { force: true });
  }
}

function openaiOf(
  opts: EvalOptions,
  cfg: AgentConfig,
  tokenizer: Tokenizer,
  temperature: number,
  seed: number,
): OpenAIPolicy {
  const apiKey = opts.apiKey ?? process.env['OPENAI_API_KEY'];
  return openaiPolicy(tokenizer, cfg, {
    baseURL: opts.baseUrl!,
    model: opts.model!,
    ...(apiKey ? { apiKey } : {}),
    api: opts.api ?? 'chat',
    temperature,
    seed,
    ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
    ...(opts.maxRetries !== undefined ? { maxRetries: opts.maxRetries } : {}),
    ...(opts.timeout !== undefined ? { timeoutMs: opts.timeout * 1000 } : {}),
  });
}

/** An episode record with the endpoint's token usage of the episode (--policy openai). */
function withUsage(
  record: EpisodeRecord,
  u: EpisodeUsage | undefined,
): EpisodeRecord & { usage?: Record<string, number> } {
  if (!u) return record;
  return {
    ...record,
    usage: {
      prompt_tokens: u.promptTokens,
      completion_tokens: u.completionTokens,
      requests: u.requests,
      retries: u.retries,
    },
  };
}

/**
 * Split `--config` pairs: `key` applies to every tag, `Tag.key` (a registered env id before the dot) to that tag only.
 */
function envConfigOverrides(pairs: Record<string, unknown>): {
  of(env: string): Record<string, unknown>;
  tagged: Set<string>;
} {
  const all: Record<string, unknown> = {};
  const perTag = new Map<string, Record<string, unknown>>();
  for (const [key, value] of Object.entries(pairs)) {
    const dot = key.indexOf('.');
    if (dot <= 0) {
      all[key] = value;
      continue;
    }
    const env = resolveEnvId(key.slice(0, dot));
    if (!perTag.has(env)) perTag.set(env, {});
    perTag.get(env)![key.slice(dot + 1)] = value;
  }
  return { of: (env) => ({ ...all, ...perTag.get(env) }), tagged: new Set(perTag.keys()) };
}

async function makePolicy(
  name: PolicyName,
  cfg: AgentConfig,
  tokenizer: Tokenizer,
  modelDir: string | undefined,
  temperature: number,
  seed: number,
): Promise<Policy> {
  if (name === 'oracle') return oraclePolicy(tokenizer, cfg);
  if (name === 'random') return randomPolicy(tokenizer, cfg, seed);
  return enginePolicy(await localEngine(modelDir!, tokenizer), tokenizer, cfg, { temperature, seed });
}

/** The model on the local engine (loaded only when a model plays). */
async function localEngine(modelDir: string, tokenizer: Tokenizer) {
  const { LocalEngine } = await import('../engine/index.js');
  return LocalEngine.fromPretrained(modelDir, { decode: (ids) => tokenizer.decode(ids) });
}

/** The agent settings: the config's (or the defaults), with --set over them. */
function agentOf(base: RagenConfig | undefined, opts: EvalOptions): AgentConfig {
  try {
    return agentConfig({ ...base?.agent, ...(parseConfigPairs(opts.set) as Partial<AgentConfig>) });
  } catch (err) {
    throw new UsageError(`Bad --set: ${(err as Error).message}`);
  }
}

/**
 * The model --policy model plays: --model, else the run's latest checkpoint, else the preset's `model.path` (Hub ids
 * fetched first).
 */
async function modelDirOf(opts: EvalOptions, base: RagenConfig | undefined): Promise<string> {
  const spec = opts.model ?? opts.run ?? base?.model.path;
  if (spec === undefined) throw new UsageError('--policy model needs --model <dir> (or --run / --preset).');
  if (spec !== opts.run) await fetchHubModel(spec);
  return resolveModelDir(spec, verifyOptions(opts));
}

/** How checkpoints are verified: `--allow-unverified-checkpoint` accepts a manifest without digests. */
function verifyOptions(opts: EvalOptions): { allowUnverified?: boolean } {
  return opts.allowUnverifiedCheckpoint ? { allowUnverified: true } : {};
}

/**
 * --tokenizer, else the model's own with the run's or preset's `model.chatTemplate` (docs/models.md) as in training,
 * else the tiny one.
 */
function tokenizerOf(opts: EvalOptions, modelDir: string | undefined, base: RagenConfig | undefined): Tokenizer {
  if (opts.tokenizer !== undefined) return loadTokenizer(opts.tokenizer);
  return modelDir ? runTokenizer(modelDir, base?.model.chatTemplate ?? 'model') : loadTokenizer(tinyTokenizerDir());
}
