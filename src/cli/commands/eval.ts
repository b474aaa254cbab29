// `ragen eval`: validation rollouts of a policy (a model, the env's solver, or random actions) on env tags;
// prints success, pass@k and the other rollout metrics per tag and writes the trajectories as JSONL.
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
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
} from '../../agent/index.js';
import { envSpec, resolveEnvId } from '../../env/index.js';
import { registerRemoteEnvs } from '../../env/remote/index.js';
import { loadTokenizer, runTokenizer, tinyTokenizerDir, type Tokenizer } from '../../tokenizer/index.js';
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
} from '../../config/index.js';
import { findModelPath, isHubId, loadModelConfig, resolveModelPath } from '../../model/index.js';
import { fileSystemError, makeDir, UsageError, withSetting, writeFileAt } from '../../util/index.js';
import { openModelDir, validationBatch } from '../../train/index.js';
import { parseConfigPairs, parsePositiveInt, parseSeed } from './env-options.js';

const POLICIES = ['oracle', 'random', 'model', 'openai'] as const;
type PolicyName = (typeof POLICIES)[number];

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

/** The `--json` output. */
export interface EvalReport {
  policy: string;
  envs: string[];
  groups: number;
  groupSize: number;
  seed: number;
  episodes: number;
  seconds: number;
  metrics: RolloutBatch['metrics'];
  /** Tokens the endpoint reported (--policy openai): summed over episodes, and the retries it took. */
  usage?: { promptTokens: number; completionTokens: number; requests: number; retries: number };
  /** The tags that are agent programs (their episodes take no env actions: the action columns do not apply). */
  agents?: string[];
}

const EXAMPLES = `
Examples:
  $ ragen eval --env SimpleSokoban,CoordFrozenLake --policy oracle
  $ ragen eval --env Countdown --policy random --groups 32 --json
  $ ragen eval --run runs/my-run --out eval/val.jsonl        # the run's latest checkpoint, val tags and agent settings
  $ ragen eval --run runs/my-agent-run --seed 1123          # a run whose val set holds agent programs (docs/agents.md)
  $ ragen eval --preset frozenlake-ppo --policy oracle
  $ ragen eval --env SimpleSokoban --policy model --model ragen-tiny --temperature 0.5 --out eval/sokoban.jsonl
  $ ragen eval --env SimpleSokoban --policy model --model ragen-tiny --greedy --set contextWindowMode=limited_multi_turn maxContextWindow=2
  $ ragen eval --env CoordSokoban --policy openai --base-url https://api.openai.com/v1 --model gpt-4o-mini --groups 16
  $ ragen eval --run runs/my-run --policy openai --base-url http://127.0.0.1:8000/v1 --model my-run --api completions --greedy`;

export function register(program: Command): void {
  program
    .command('eval')
    .description('Validation rollouts: success, pass@k and other metrics per env tag; trajectories as JSONL.')
    .option('--env <ids>', 'comma-separated env ids (see `ragen envs`); default: the val tags of --run/--preset')
    .option(
      '--run <dir>',
      "a run directory: its latest checkpoint, its config's val set (agent programs included), agent and sampling settings",
    )
    .option('--preset <name>', 'a preset (see configs/): its model, val tags, agent and sampling settings')
    .option(
      '--groups <n>',
      "groups per env tag (one seed each, from --seed up) [8, or the config's]",
      parsePositiveInt('--groups'),
    )
    .option(
      '--group-size <k>',
      "episodes per group (same seed; pass@k uses k) [1, or the config's]",
      parsePositiveInt('--group-size'),
    )
    .option(
      '--policy <name>',
      `who plays: ${POLICIES.join(' | ')} [oracle, or model with --run/--preset/--model]`,
      parsePolicy,
    )
    .option(
      '--model <dir|name>',
      'model directory (Hugging Face layout), a run directory (its latest checkpoint), a shipped model (ragen-tiny) or a Hub id (Qwen/Qwen2.5-0.5B-Instruct), for --policy model; the model id, for --policy openai',
    )
    .option(
      '--base-url <url>',
      'OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (`ragen serve`), for --policy openai',
    )
    .option('--api-key <key>', 'API key for --policy openai (default: $OPENAI_API_KEY)')
    .option(
      '--api <kind>',
      'chat: send the messages (any chat model); completions: send the exact prompt ids and keep the returned token ids (ragen serve, vLLM) [chat]',
      parseApi,
    )
    .option(
      '--concurrency <n>',
      'requests in flight at once, for --policy openai [16]',
      parsePositiveInt('--concurrency'),
    )
    .option(
      '--max-retries <n>',
      'retries per request on 429/5xx/timeouts, with backoff, for --policy openai [4]',
      parseNonNegative('--max-retries'),
    )
    .option(
      '--timeout <s>',
      'seconds per request before it is retried, for --policy openai [120]',
      parsePositiveInt('--timeout'),
    )
    .option('--tokenizer <dir>', "tokenizer directory (default: the model's own, else models/tokenizer-tiny)")
    .option('--temperature <t>', "sampling temperature [0.5 (RAGEN's validation), or the config's]", parseTemperature)
    .option('--greedy', 'greedy decoding (temperature 0)')
    .option(
      '--max-turns <n>',
      "turns per episode (default: enough for the env's action cap, at most 100)",
      parsePositiveInt('--max-turns'),
    )
    .option('--seed <n>', "first validation seed [123 (RAGEN's seed.val), or the config's]", parseSeed)
    .option(
      '--set <key=value...>',
      "agent settings, e.g. maxActionsPerTurn=1 enableThink=false (see docs/agent-loop.md); with --env alone, maxContextTokens defaults to the model's positions when they are fewer than 3600",
    )
    .option(
      '--config <key=value...>',
      'env config overrides: key=value for every tag, Tag.key=value for one, e.g. FrozenLake.successRate=1',
    )
    .option(
      '--allow-unverified-checkpoint',
      'accept a checkpoint whose checkpoint.json has no SHA-256 digests (the version-1 format), its files checked by size only (warns)',
    )
    .option('--json', 'print the report as JSON')
    .option('--out <file.jsonl>', 'write the trajectories (OpenAI messages + metadata) to this JSONL file')
    .addHelpText('after', EXAMPLES)
    .action(async (opts: EvalOptions) => {
      // Printed before --out is written, so a full disk loses the file, never the summary.
      await runEval(opts, (report) => console.log(opts.json ? JSON.stringify(report, null, 2) : formatTable(report)));
    });
}

function parsePolicy(text: string): PolicyName {
  if (!(POLICIES as readonly string[]).includes(text))
    throw new UsageError(`Bad --policy \`${text}\`: give one of ${POLICIES.join(', ')}.`);
  return text as PolicyName;
}

function parseApi(text: string): 'chat' | 'completions' {
  if (text !== 'chat' && text !== 'completions')
    throw new UsageError(`Bad --api \`${text}\`: give chat or completions.`);
  return text;
}

function parseNonNegative(name: string): (text: string) => number {
  return (text) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`Bad ${name} \`${text}\`: give an integer >= 0.`);
    return n;
  };
}

function parseTemperature(text: string): number {
  const t = Number(text);
  if (!Number.isFinite(t) || t < 0)
    throw new UsageError(`Bad --temperature \`${text}\`: give a number >= 0 (0 = greedy).`);
  return t;
}

/**
 * A model directory: `spec` itself if it is a checkpoint or holds config.json, else the newest `checkpoints/step-N` of
 * a run (said on stderr), verified against its manifest first as `--resume` does (src/train/checkpoint-read.ts; a
 * damaged newest step is refused by name); `spec` may also name a shipped model (`ragen-tiny`) or a Hub id in the local
 * cache (see `fetchHubModel` for downloads).
 */
export function resolveModelDir(spec: string, opts: { allowUnverified?: boolean } = {}): string {
  const say = (line: string) => void process.stderr.write(`ragen: ${line}\n`);
  return openModelDir(findModelPath(spec) ?? spec, {
    say,
    warn: say,
    ...(opts.allowUnverified ? { allowUnverified: true } : {}),
  });
}

/** Download `spec` into the Hugging Face cache when it is a Hub id that is neither a local directory nor cached. */
export async function fetchHubModel(spec: string): Promise<void> {
  if (isHubId(spec) && findModelPath(spec) === null) await resolveModelPath(spec);
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
  const positions = policyName === 'model' ? (await loadModelConfig(modelDir!)).maxPositionEmbeddings : Infinity;
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
  await checkPromptsFit(builtIn, tokenizer, agent, (await loadModelConfig(modelDir)).maxPositionEmbeddings);
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
  const { LocalEngine } = await import('../../engine/index.js');
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

/** The report as a fixed-width table, one row per env tag. */
export function formatTable(r: EvalReport): string {
  const passKey = `pass@${r.groupSize}`;
  const cols: [string, string, (v: number) => string][] = [
    ['success', 'success', pct],
    [passKey, passKey, pct],
    ['actions', 'num_actions', fix(2)],
    ['valid', 'action_valid_ratio', pct],
    ['effective', 'action_effective_ratio', pct],
    ['return', 'episodic_return', fix(3)],
    ['resp_tokens', 'response_length', fix(1)],
    ['format_err', 'format_error_rate', pct],
    ['ctx_trunc', 'context_truncations', fix(2)],
  ];
  const header = ['env', ...cols.map((c) => c[0])];
  const envOnly = new Set(['action_valid_ratio', 'action_effective_ratio']); // an agent program's episodes take no env actions
  const rows = Object.entries(r.metrics).map(([tag, m]) => [
    tag,
    ...cols.map(([, key, f]) => (r.agents?.includes(tag) && envOnly.has(key) ? '-' : f(m[key] ?? 0))),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [
    `policy ${r.policy}: ${r.episodes} episodes (groups of ${r.groupSize}), seeds from ${r.seed}, ${r.seconds.toFixed(1)} s`,
    line(header),
    ...rows.map(line),
    ...(r.usage
      ? [
          `usage: ${r.usage.promptTokens} prompt + ${r.usage.completionTokens} completion tokens in ${r.usage.requests} requests (${(r.usage.promptTokens / Math.max(1, r.episodes)).toFixed(0)} + ${(r.usage.completionTokens / Math.max(1, r.episodes)).toFixed(0)} per episode), ${r.usage.retries} retries`,
        ]
      : []),
  ].join('\n');
}

function pct(v: number): string {
  return `${(100 * v).toFixed(1)}%`;
}

function fix(d: number): (v: number) => string {
  return (v) => v.toFixed(d);
}
