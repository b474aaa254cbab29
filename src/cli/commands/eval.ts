// `ragen eval`: the command line of the evaluation runner (src/eval): its options, parsed and checked, and the report
// printed as a table or JSON.
import type { Command } from 'commander';
import { formatTable, POLICIES, runEval, type EvalOptions, type PolicyName } from '../../eval/index.js';
import { parsePositiveInt, parseSeed, UsageError } from '../../util/index.js';

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
