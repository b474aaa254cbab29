// `ragen sft`: supervised fine-tuning on the envs' solver demonstrations, in the agent loop's exact token
// layout, from scratch (a size preset) or from a checkpoint, full or LoRA; saves a Hugging Face model directory.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { agentConfig, type AgentConfig } from '../../agent/index.js';
import { resolveEnvId } from '../../env/index.js';
import { LocalEngine } from '../../engine/index.js';
import { countParameters, LoraAdapters, Qwen25VL, resolveModelPath, Transformer } from '../../model/index.js';
import { loadTokenizer, tinyTokenizerDir, tinyVLTokenizerDir } from '../../tokenizer/index.js';
import { ConsoleSink } from '../../metrics/index.js';
import { loadConfig } from '../../config/index.js';
import {
  buildDemos,
  presetModelConfig,
  presetVLConfig,
  runSft,
  SFT_VL_PROCESSOR,
  SIZE_PRESETS,
  VL_SIZE_PRESETS,
} from '../../train/index.js';
import { parseConfigPairs, parsePositiveInt, parseSeed, UsageError, writeFileAt } from '../../util/index.js';

/** Options of `ragen sft`, as commander parses them. */
export interface SftCliOptions {
  env: string;
  out: string;
  episodes: number;
  steps: number;
  batch: number;
  lr: number;
  model?: string;
  init?: string;
  lora?: number;
  tokenizer?: string;
  preset: string;
  set?: string[];
  envConfig?: string[];
  noise?: string[];
  valEvery: number;
  valGroups: number;
  valTemperature: number;
  seed: number;
  progress?: 'auto' | 'bar' | 'plain' | 'none';
}

const EXAMPLES = `
Examples:
  $ ragen sft --env SimpleSokoban,CoordFrozenLake,Bandit --init tiny --out models/my-model
  $ ragen sft --env SimpleSokoban --episodes 500 --steps 200 --init micro --out /tmp/sft-smoke
  $ ragen sft --env SimpleSokoban --model models/ragen-tiny --lora 8 --steps 100 --out runs/sft-lora
  $ ragen sft --env FrozenLake --env-config FrozenLake.successRate=1 --noise FrozenLake=0.3 --init tiny --out /tmp/lake`;

export function register(program: Command): void {
  program
    .command('sft')
    .description("Supervised fine-tuning on the envs' solver demonstrations (loss on the assistant tokens only).")
    .requiredOption('--env <ids>', 'comma-separated env ids with a solver (see `ragen envs`)')
    .requiredOption('--out <dir>', 'output model directory (Hugging Face layout; checkpoints/step-N inside)')
    .option(
      '--episodes <n>',
      'demonstration episodes per env (train seeds from 10000)',
      parsePositiveInt('--episodes'),
      2000,
    )
    .option('--steps <n>', 'optimiser steps', parsePositiveInt('--steps'), 1000)
    .option('--batch <b>', 'training sequences per step', parsePositiveInt('--batch'), 16)
    .option('--lr <x>', 'peak learning rate (linear warmup, cosine decay to 10%)', parseLr, 1e-3)
    .option('--model <dir>', 'start from this checkpoint (Hugging Face layout)')
    .option(
      '--init <size>',
      `start from scratch with a size preset: ${[...Object.keys(SIZE_PRESETS), ...Object.keys(VL_SIZE_PRESETS)].join(' | ')} (the -vl ones a Qwen2.5-VL that reads the visual envs' images) [tiny, unless --model]`,
    )
    .option('--lora <r>', 'train LoRA adapters of rank r instead of every weight', parsePositiveInt('--lora'))
    .option(
      '--tokenizer <dir>',
      'tokenizer for --init (default: models/tokenizer-tiny; models/tokenizer-tiny-vl for -vl)',
    )
    .option(
      '--preset <name>',
      'the preset whose agent settings (context mode, turns, lengths) the demos use; keep the one you will train with',
      'sokoban-ppo',
    )
    .option('--set <key=value...>', 'agent setting overrides on top of the preset, e.g. maxActionsPerTurn=1')
    .option(
      '--env-config <Env.key=value...>',
      'env config overrides, e.g. FrozenLake.successRate=1 (demos and validation)',
    )
    .option(
      '--noise <Env=p...>',
      'per env, the fraction of demo episodes that play random actions (e.g. Bandit=1: format without the arm preference)',
    )
    .option(
      '--val-every <n>',
      'save checkpoints/step-N (and validate) every n steps (0: only at the end)',
      parseCount,
      100,
    )
    .option(
      '--val-groups <n>',
      'validation seeds per env (val split, from 123); 0: no validation (checkpoints only)',
      parseCount,
      32,
    )
    .option('--val-temperature <t>', 'validation sampling temperature', Number, 0.5)
    .option('--seed <n>', 'seed of initialisation and shuffling', parseSeed, 0)
    .option('--progress <mode>', 'auto | bar | plain | none', 'auto')
    .addHelpText('after', EXAMPLES)
    .action(async (opts: SftCliOptions) => {
      await runSftCommand(opts);
    });
}

function parseLr(text: string): number {
  const x = Number(text);
  if (!Number.isFinite(x) || x <= 0) throw new UsageError(`Bad --lr \`${text}\`: give a number > 0, e.g. 1e-3.`);
  return x;
}

function parseCount(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`Bad count \`${text}\`: give an integer >= 0.`);
  return n;
}

/** `Env.key=value` pairs into per-env config objects (env ids resolved). */
export function parseEnvConfig(pairs: readonly string[] = []): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const pair of pairs) {
    const dot = pair.indexOf('.');
    if (dot <= 0 || !pair.includes('='))
      throw new UsageError(`Bad --env-config \`${pair}\`: write Env.key=value, e.g. FrozenLake.successRate=1.`);
    const env = resolveEnvId(pair.slice(0, dot));
    Object.assign((out[env] ??= {}), parseConfigPairs([pair.slice(dot + 1)]));
  }
  return out;
}

/** `Env=p` pairs into per-env noise fractions in [0, 1]. */
export function parseNoise(pairs: readonly string[] = []): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pair of pairs) {
    const [env, p] = pair.split('=');
    const x = Number(p);
    if (!env || p === undefined || !(x >= 0 && x <= 1))
      throw new UsageError(`Bad --noise \`${pair}\`: write Env=p with p in [0, 1], e.g. Bandit=1.`);
    out[resolveEnvId(env)] = x;
  }
  return out;
}

/** Build the demos, train, validate and save, as `opts` say. */
export async function runSftCommand(opts: SftCliOptions): Promise<void> {
  if (opts.model && opts.init) throw new UsageError('Give --model <dir> or --init <size>, not both.');
  if (opts.model) opts = { ...opts, model: await resolveModelPath(opts.model, { flag: '--model' }) }; // ragen-tiny, a Hub id
  const envs = opts.env
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(resolveEnvId);
  if (envs.length === 0) throw new UsageError('Give at least one env id to --env, e.g. --env SimpleSokoban.');
  const preset = loadConfig({ config: opts.preset });
  let agent: AgentConfig;
  try {
    agent = agentConfig({ ...preset.agent, ...(parseConfigPairs(opts.set) as Partial<AgentConfig>) });
  } catch (err) {
    throw new UsageError(`Bad --set: ${(err as Error).message}`);
  }
  const envConfig = parseEnvConfig(opts.envConfig);
  for (const env of envs) envConfig[env] = { ...(preset.env.config[env] ?? {}), ...(envConfig[env] ?? {}) };
  const noise = parseNoise(opts.noise);

  const vlInit = opts.init !== undefined && Object.hasOwn(VL_SIZE_PRESETS, opts.init);
  const shippedTokenizer = () => opts.tokenizer ?? (vlInit ? tinyVLTokenizerDir() : tinyTokenizerDir());
  const tokDir = opts.model && existsSync(join(opts.model, 'tokenizer.json')) ? opts.model : shippedTokenizer();
  const tokenizer = loadTokenizer(tokDir);
  const decode = (ids: number[]) => tokenizer.decode(ids);
  let engine: LocalEngine;
  if (opts.model) {
    engine = await LocalEngine.fromPretrained(opts.model, {
      decode,
      seed: opts.seed,
      lora: opts.lora ? { r: opts.lora, alpha: 2 * opts.lora, dropout: 0, targetModules: 'all-linear' } : null,
    });
  } else if (vlInit) {
    // from scratch, the vision tower trains with the language model
    const vl = Qwen25VL.init(presetVLConfig(opts.init!, tokenizer, agent.maxContextTokens), opts.seed);
    if (opts.lora)
      throw new UsageError(
        `--lora trains adapters on a checkpoint; --init ${opts.init} starts from scratch: drop one.`,
      );
    engine = new LocalEngine({
      policy: vl.lm,
      vision: { model: vl, processor: SFT_VL_PROCESSOR },
      visionTrain: true,
      decode,
      seed: opts.seed,
      tokenizerPath: join(tokDir, 'tokenizer.json'),
    });
  } else {
    const config = presetModelConfig(opts.init ?? 'tiny', tokenizer.vocabSize, agent.maxContextTokens, {
      eosTokenId: tokenizer.eosTokenId,
      padTokenId: tokenizer.padTokenId,
    });
    const policy = Transformer.init(config, opts.seed);
    if (opts.lora)
      LoraAdapters.attach(
        policy,
        { r: opts.lora, alpha: 2 * opts.lora, dropout: 0, targetModules: 'all-linear' },
        opts.seed + 1,
      );
    engine = new LocalEngine({ policy, decode, seed: opts.seed, tokenizerPath: join(tokDir, 'tokenizer.json') });
  }
  const say = (s: string) => console.error(s);
  say(
    `model: ${opts.model ?? `--init ${opts.init ?? 'tiny'}`}, ${(countParameters(engine.policy.config) / 1e6).toFixed(2)}M parameters${opts.lora ? `, LoRA r=${opts.lora}` : ''}; tokenizer ${tokDir}`,
  );
  say(
    `agent: ${agent.contextWindowMode}, window ${agent.maxContextWindow ?? 'all'}, ${agent.maxTurns} turns x ${agent.maxActionsPerTurn} actions, maxNewTokens ${agent.maxNewTokens}`,
  );

  const t0 = performance.now();
  const demos = await buildDemos(tokenizer, agent, {
    envs,
    envConfig,
    episodes: opts.episodes,
    noise,
    seed: opts.seed,
    ...(engine.vision ? { vision: engine.vision } : {}),
  });
  const tokens = demos.samples.reduce((a, s) => a + s.ids.length, 0);
  const trained = demos.samples.reduce((a, s) => a + s.lossMask.reduce((x, m) => x + m, 0), 0);
  say(
    `demos: ${demos.episodes.length} episodes, ${demos.samples.length} sequences, ${tokens} tokens (${trained} trained), demo success ${JSON.stringify(demos.success)}, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );

  const sink = new ConsoleSink({ totalSteps: opts.steps, mode: opts.progress ?? 'auto' });
  let lossEma = NaN;
  const result = await runSft(engine, tokenizer, agent, demos.samples, {
    steps: opts.steps,
    batch: opts.batch,
    lr: opts.lr,
    seed: opts.seed,
    valEvery: opts.valEvery,
    ...(opts.valGroups > 0
      ? { val: { envs, envConfig, groups: opts.valGroups, seed: 123, temperature: opts.valTemperature } }
      : {}),
    out: opts.out,
    onStep: (step, s) => {
      lossEma = Number.isNaN(lossEma) ? s.loss : 0.9 * lossEma + 0.1 * s.loss;
      // the bar's "reward" column shows the (smoothed) loss: SFT has no reward
      if (step % 10 === 0 || step === opts.steps)
        sink.write({ step, time: Date.now(), 'train/reward_mean': lossEma, 'timing_s/step': s.seconds });
    },
    onVal: (step, success, formatError) => {
      const parts = Object.entries(success).map(
        ([tag, v]) => `${tag} ${(100 * v).toFixed(1)}% (format errors ${(100 * (formatError[tag] ?? 0)).toFixed(1)}%)`,
      );
      sink.write({
        step,
        time: Date.now(),
        ...Object.fromEntries(Object.entries(success).map(([t, v]) => [`val/${t}/success`, v])),
      });
      sink.message(`step ${step}: loss ${lossEma.toFixed(4)} | val success ${parts.join(', ')}`);
    },
  });
  sink.close();
  writeFileAt(
    join(opts.out, 'sft_args.json'),
    JSON.stringify(
      {
        command: `ragen ${process.argv.slice(2).join(' ')}`,
        envs,
        envConfig,
        noise,
        agent,
        steps: opts.steps,
        batch: opts.batch,
        lr: opts.lr,
        seed: opts.seed,
        episodes: opts.episodes,
        result: {
          firstLoss: result.firstLoss,
          finalLoss: result.finalLoss,
          seconds: result.seconds,
          valSuccess: result.valSuccess,
        },
      },
      null,
      2,
    ) + '\n',
    'write the SFT arguments',
    '--out',
  );
  say(
    `done: ${result.steps} steps in ${result.seconds.toFixed(0)} s, loss ${result.firstLoss.toFixed(4)} -> ${result.finalLoss.toFixed(4)}, val success ${JSON.stringify(result.valSuccess)}; saved ${opts.out}`,
  );
  engine.dispose();
}
