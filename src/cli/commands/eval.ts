// `ragen eval`: validation rollouts of a policy (a model, the env's solver, or random actions) on env tags;
// prints success, pass@k and the other rollout metrics per tag and writes the trajectories as JSONL.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { EnvGroups, agentConfig, enginePolicy, oraclePolicy, randomPolicy, rollout, writeTrajectories, type AgentConfig, type Policy, type RolloutBatch } from '../../agent/index.js';
import { envSpec, resolveEnvId } from '../../env/index.js';
import { loadTokenizer, tinyTokenizerDir, type Tokenizer } from '../../tokenizer/index.js';
import { UsageError } from '../../util/index.js';
import { parseConfigPairs, parsePositiveInt, parseSeed } from './env-options.js';

const POLICIES = ['oracle', 'random', 'model'] as const;
type PolicyName = (typeof POLICIES)[number];

/** Options of `ragen eval`, as commander parses them. */
export interface EvalOptions {
  env: string;
  groups: number;
  groupSize: number;
  policy: PolicyName;
  model?: string;
  tokenizer?: string;
  temperature: number;
  greedy?: boolean;
  maxTurns?: number;
  seed: number;
  set?: string[];
  config?: string[];
  json?: boolean;
  out?: string;
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
}

const EXAMPLES = `
Examples:
  $ ragen eval --env SimpleSokoban,CoordFrozenLake --policy oracle
  $ ragen eval --env Countdown --policy random --groups 32 --json
  $ ragen eval --env SimpleSokoban --policy model --model runs/my-run --temperature 0.5 --out eval/sokoban.jsonl
  $ ragen eval --env SimpleSokoban --policy model --model models/tiny --greedy --set contextWindowMode=limited_multi_turn maxContextWindow=2`;

export function register(program: Command): void {
  program
    .command('eval')
    .description('Validation rollouts: success, pass@k and other metrics per env tag; trajectories as JSONL.')
    .requiredOption('--env <ids>', 'comma-separated env ids (see `ragen envs`)')
    .option('--groups <n>', 'groups per env tag (one seed each, from --seed up)', parsePositiveInt('--groups'), 8)
    .option('--group-size <k>', 'episodes per group (same seed; pass@k uses k)', parsePositiveInt('--group-size'), 1)
    .option('--policy <name>', `who plays: ${POLICIES.join(' | ')}`, parsePolicy, 'oracle')
    .option('--model <dir>', 'model directory (Hugging Face layout) or a run directory (its latest checkpoint), for --policy model')
    .option('--tokenizer <dir>', 'tokenizer directory (default: the model\'s own, else models/tokenizer-tiny)')
    .option('--temperature <t>', 'sampling temperature (RAGEN validates at 0.5)', parseTemperature, 0.5)
    .option('--greedy', 'greedy decoding (temperature 0)')
    .option('--max-turns <n>', 'turns per episode (default: enough for the env\'s action cap, at most 100)', parsePositiveInt('--max-turns'))
    .option('--seed <n>', 'first validation seed (RAGEN seed.val = 123)', parseSeed, 123)
    .option('--set <key=value...>', 'agent settings, e.g. maxActionsPerTurn=1 enableThink=false (see docs/agent-loop.md)')
    .option('--config <key=value...>', 'env config overrides for every tag, e.g. successRate=1')
    .option('--json', 'print the report as JSON')
    .option('--out <file.jsonl>', 'write the trajectories (OpenAI messages + metadata) to this JSONL file')
    .addHelpText('after', EXAMPLES)
    .action(async (opts: EvalOptions) => {
      const report = await runEval(opts);
      if (opts.json) console.log(JSON.stringify(report, null, 2));
      else console.log(formatTable(report));
    });
}

function parsePolicy(text: string): PolicyName {
  if (!(POLICIES as readonly string[]).includes(text)) throw new UsageError(`Bad --policy \`${text}\`: give one of ${POLICIES.join(', ')}.`);
  return text as PolicyName;
}

function parseTemperature(text: string): number {
  const t = Number(text);
  if (!Number.isFinite(t) || t < 0) throw new UsageError(`Bad --temperature \`${text}\`: give a number >= 0 (0 = greedy).`);
  return t;
}

/** A model directory: `dir` itself if it holds config.json, else the highest `checkpoints/step-N` of a run. */
export function resolveModelDir(dir: string): string {
  if (existsSync(join(dir, 'config.json'))) return dir;
  const ckpts = join(dir, 'checkpoints');
  if (existsSync(ckpts)) {
    const steps = readdirSync(ckpts)
      .map((name) => ({ name, step: Number(/^step-(\d+)$/.exec(name)?.[1] ?? NaN) }))
      .filter((s) => Number.isFinite(s.step) && existsSync(join(ckpts, s.name, 'config.json')))
      .sort((a, b) => b.step - a.step);
    if (steps.length > 0) return join(ckpts, steps[0]!.name);
  }
  throw new UsageError(`No model in \`${dir}\`: expected config.json there, or a run directory with checkpoints/step-N/config.json.`);
}

/** Run the evaluation `opts` describe and return its report (writes --out when given). */
export async function runEval(opts: EvalOptions): Promise<EvalReport> {
  const ids = opts.env.split(',').map((s) => s.trim()).filter((s) => s !== '').map(resolveEnvId);
  if (ids.length === 0) throw new UsageError('Give at least one env id to --env, e.g. --env SimpleSokoban.');
  let cfg: AgentConfig;
  try {
    cfg = agentConfig(parseConfigPairs(opts.set) as Partial<AgentConfig>);
  } catch (err) {
    throw new UsageError(`Bad --set: ${(err as Error).message}`);
  }
  const envConfig = parseConfigPairs(opts.config);
  const modelDir = opts.policy === 'model' ? resolveModelDir(opts.model ?? usage('--policy model needs --model <dir>.')) : undefined;
  const tokDir = opts.tokenizer ?? (modelDir && existsSync(join(modelDir, 'tokenizer.json')) ? modelDir : tinyTokenizerDir());
  const tokenizer = loadTokenizer(tokDir);
  const policy = await makePolicy(opts, cfg, tokenizer, modelDir);
  const groups = new EnvGroups({
    tags: ids.map((env) => ({
      env,
      nGroups: opts.groups,
      config: envConfig,
      maxTurns: opts.maxTurns ?? Math.min(100, Math.ceil(envSpec(env).maxActionsPerEpisode / cfg.maxActionsPerTurn)),
    })),
    groupSize: opts.groupSize,
    mode: 'val',
    seed: opts.seed,
  });
  const t0 = performance.now();
  const batch = await rollout({ groups, policy, tokenizer, agent: cfg });
  const seconds = (performance.now() - t0) / 1000;
  await groups.close();
  if (opts.out) writeTrajectories(opts.out, batch.episodes, cfg);
  return { policy: policy.name, envs: ids, groups: opts.groups, groupSize: opts.groupSize, seed: opts.seed, episodes: batch.episodes.length, seconds, metrics: batch.metrics };
}

function usage(message: string): never {
  throw new UsageError(message);
}

async function makePolicy(opts: EvalOptions, cfg: AgentConfig, tokenizer: Tokenizer, modelDir: string | undefined): Promise<Policy> {
  if (opts.policy === 'oracle') return oraclePolicy(tokenizer, cfg);
  if (opts.policy === 'random') return randomPolicy(tokenizer, cfg, opts.seed);
  const { LocalEngine } = await import('../../engine/index.js');
  const engine = await LocalEngine.fromPretrained(modelDir!, { decode: (ids) => tokenizer.decode(ids) });
  return enginePolicy(engine, tokenizer, cfg, { temperature: opts.greedy ? 0 : opts.temperature, seed: opts.seed });
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
  const rows = Object.entries(r.metrics).map(([tag, m]) => [tag, ...cols.map(([, key, f]) => f(m[key] ?? 0))]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [
    `policy ${r.policy}: ${r.episodes} episodes (${r.groups} groups x ${r.groupSize} per env), seeds from ${r.seed}, ${r.seconds.toFixed(1)} s`,
    line(header),
    ...rows.map(line),
  ].join('\n');
}

function pct(v: number): string {
  return `${(100 * v).toFixed(1)}%`;
}

function fix(d: number): (v: number) => string {
  return (v) => v.toFixed(d);
}
