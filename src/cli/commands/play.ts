// `ragen play`: play an environment in the terminal, or replay a scripted action list (optionally as JSON).
import type { Readable, Writable } from 'node:stream';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import {
  envSpec,
  makeEnv,
  resolveEnvId,
  type Env,
  type EnvInfo,
  type EnvMode,
  type StepResult,
} from '../../env/index.js';
import { registerRemoteEnvs } from '../../env/remote/index.js';
import { addEpisodeOptions, parseActions } from './env-options.js';
import { parseConfigPairs, parsePositiveInt } from '../../util/index.js';
import { actionKeys, keyCommand, keysHelp, readKeys, type KeyInput } from './play-keys.js';

interface PlayOptions {
  seed: number;
  mode: EnvMode;
  config?: string[];
  actions?: string;
  maxActions?: number;
  json?: boolean;
  /** The action cap in force (`maxActions` or the env's own). */
  cap?: number;
}

/** The `--json` output of `ragen play`. */
export interface PlayRecord {
  envId: string;
  seed: number;
  initial: { observation: string; info: EnvInfo };
  steps: {
    action: string;
    observation: string;
    reward: number;
    terminated: boolean;
    truncated: boolean;
    info: EnvInfo;
  }[];
}

const EXAMPLES = `
Examples:
  $ ragen play SimpleSokoban --seed 3                      # interactive in a terminal: arrow keys (or u/d/l/r) move at once, q quits
  $ ragen play Countdown --seed 1                          # envs without single-key actions read a line per action
  $ ragen play SimpleSokoban --seed 3 --actions "Up || Left || Up"
  $ ragen play FrozenLake --seed 1 --actions "Down || Right" --json
  $ ragen play Bandit --seed 0 --config loArmScore=0.2 hiArmHiscoreProb=0.5
  $ ragen play MetamathQA --mode val --seed 4 --actions "42"`;

export function register(program: Command): void {
  addEpisodeOptions(
    program
      .command('play')
      .description('Play an environment: interactively in a terminal, or scripted with --actions.')
      .argument(
        '<envId>',
        'environment id (see `ragen envs`), or remote:ws://host:port/<EnvId> for one served by `ragen env serve`',
      ),
  )
    .option('--actions <list>', 'actions to play, separated by || (as in an agent answer)')
    .option(
      '--max-actions <n>',
      "truncate the episode after n actions, unrecognised ones included (default: the env's per-episode cap, `ragen envs --json`)",
      parsePositiveInt('--max-actions'),
    )
    .option('--json', 'print {envId, seed, initial, steps} as JSON')
    .addHelpText('after', EXAMPLES)
    .action(async (envId: string, opts: PlayOptions) => {
      await registerRemoteEnvs([envId]); // remote:ws://host:port/<EnvId>: reads the server's /metadata
      const id = resolveEnvId(envId);
      // Every env gets its training cap, not only those that end episodes themselves. Unlike EnvGroups,
      // unrecognised names count too, so no scripted episode outlives the cap.
      opts.cap = opts.maxActions ?? envSpec(id).maxActionsPerEpisode;
      const env = makeEnv(id, parseConfigPairs(opts.config), { maxActions: opts.cap });
      try {
        if (opts.actions === undefined && !opts.json && process.stdin.isTTY) {
          await playInteractive(env, id, opts.seed, opts.mode, process.stdin, process.stdout);
        } else {
          await playScripted(env, id, opts);
        }
      } finally {
        await env.close();
      }
    });
}

async function playScripted(env: Env, id: string, opts: PlayOptions): Promise<void> {
  const initial = await env.reset({ seed: opts.seed, mode: opts.mode });
  const record: PlayRecord = { envId: id, seed: opts.seed, initial, steps: [] };
  if (!opts.json) printHeader(env, id, opts.seed, opts.mode, initial.observation, (s) => console.log(s));
  const actions = parseActions(opts.actions ?? '');
  if (opts.actions === undefined && !opts.json) {
    console.log(
      `\n(stdin is not a terminal) Replay actions with: ragen play ${id} --seed ${opts.seed} --actions "${exampleActions(env)}"`,
    );
    return;
  }
  let ended = false;
  for (const [i, action] of actions.entries()) {
    if (ended) {
      const atCap = record.steps.at(-1)!.truncated && i === opts.cap;
      console.error(
        `ragen: the episode ended after ${i} action(s)${atCap ? ' (the action cap; --max-actions changes it)' : ''}; ignored the remaining ${actions.length - i}.`,
      );
      break;
    }
    const r = await env.step(action);
    record.steps.push({ action, ...r });
    ended = r.terminated || r.truncated;
    if (!opts.json) console.log(formatStep(action, r));
  }
  if (opts.json) console.log(JSON.stringify(record, null, 2));
  else console.log(`\n${summary(record.steps)}`);
}

/**
 * The terminal game: shows the observation, reads an action, shows reward and info. From a terminal (a TTY with raw
 * mode) an env whose actions have keys (`actionKeys`: arrows, first letters) plays key by key, at once; otherwise
 * (pipes, free-text envs) it reads an action a line. `q` quits; after an episode ends, `n` starts the next seed.
 * Streams are parameters for tests.
 */
export async function playInteractive(
  env: Env,
  id: string,
  seed: number,
  mode: EnvMode,
  input: Readable,
  output: Writable,
): Promise<void> {
  const initial = await env.reset({ seed, mode });
  const keys = isKeyInput(input) ? actionKeys(env.actionNames) : null;
  if (keys) return playByKeys(env, id, seed, mode, initial.observation, keys, input as KeyInput, output);
  const say = (s: string): void => void output.write(`${s}\n`);
  const rl = createInterface({ input, output, terminal: false });
  let steps: StepResult[] = [];
  let ended = false;
  const start = async (first?: string): Promise<void> => {
    const observation = first ?? (await env.reset({ seed, mode })).observation;
    printHeader(env, id, seed, mode, observation, say);
    say(`Type an action (${exampleActions(env)}), or q to quit.`);
    steps = [];
    ended = false;
  };
  await start(initial.observation);
  output.write('action> ');
  for await (const raw of rl) {
    const line = raw.trim();
    if (line === 'q' || line === 'quit') break;
    if (ended) {
      if (line !== 'n') break;
      seed++;
      await start();
    } else if (line !== '') {
      const typed = translateArrows(line, env.actionNames);
      if (typed.unmapped)
        say(
          `(arrow keys play ${id}'s actions only when it has Up/Down/Left/Right; type an action: ${exampleActions(env)})`,
        );
      for (const action of parseActions(typed.line)) {
        const r = await env.step(action);
        steps.push(r);
        say(formatStep(action, r));
        if (r.terminated || r.truncated) {
          ended = true;
          say(`\n${summary(steps)}\nn: next seed (${seed + 1}), anything else: quit`);
          break;
        }
      }
    }
    output.write(ended ? '> ' : 'action> ');
  }
  say('');
  rl.close();
}

function isKeyInput(input: Readable): boolean {
  return (input as Partial<KeyInput>).isTTY === true && typeof (input as Partial<KeyInput>).setRawMode === 'function';
}

/** The key-by-key game (raw mode: lines end in \r\n, as the terminal no longer adds the carriage return). */
async function playByKeys(
  env: Env,
  id: string,
  seed: number,
  mode: EnvMode,
  observation: string,
  keys: Map<string, string>,
  input: KeyInput,
  output: Writable,
): Promise<void> {
  const say = (s: string): void => void output.write(`${s.replace(/\r?\n/g, '\r\n')}\r\n`);
  const help = `${keysHelp(keys)} play at once; q quits`;
  let steps: StepResult[] = [];
  let ended = false;
  const start = (obs: string) => {
    printHeader(env, id, seed, mode, obs, say);
    say(`Keys: ${help}.`);
    steps = [];
    ended = false;
  };
  start(observation);
  await readKeys(input, output, async (str, key) => {
    const cmd = keyCommand(str, key, keys, ended);
    if (cmd.kind === 'quit') return false;
    if (cmd.kind === 'next') {
      seed++;
      start((await env.reset({ seed, mode })).observation);
    } else if (cmd.kind === 'other') {
      say(`(keys: ${help})`);
    } else {
      const r = await env.step(cmd.action);
      steps.push(r);
      say(formatStep(cmd.action, r));
      if (r.terminated || r.truncated) {
        ended = true;
        say(`\n${summary(steps)}\nn: next seed (${seed + 1}), any other key: quit`);
      }
    }
    return true;
  });
}

const ARROWS: Record<string, string> = { A: 'up', B: 'down', C: 'right', D: 'left' };

/**
 * A typed line with the terminal's arrow-key escape sequences (ESC [ A or ESC O A ...) turned into the env's
 * directional actions (`Up`, as the env spells it), one action each; other escape sequences dropped. `unmapped`: an
 * arrow had no such action (free-text envs, Bandit...) and was dropped too.
 */
export function translateArrows(
  line: string,
  names: readonly string[] | undefined,
): { line: string; unmapped: boolean } {
  let unmapped = false;
  const text = line.replace(/\x1b(?:\[[0-9;]*|O)([A-Za-z~])/g, (_, key: string) => {
    const dir = ARROWS[key];
    if (!dir) return ' ';
    const name = names?.find((n) => n.toLowerCase() === dir);
    if (name === undefined) {
      unmapped = true;
      return ' ';
    }
    return ` || ${name} || `;
  });
  return { line: text, unmapped };
}

function printHeader(
  env: Env,
  id: string,
  seed: number,
  mode: EnvMode,
  observation: string,
  say: (s: string) => void,
): void {
  say(`${id}  seed ${seed}  (${mode})`);
  if (env.instruction) say(env.instruction);
  if (env.legend) say(env.legend);
  if (env.actionNames) say(`Actions: ${env.actionNames.join(', ')}`);
  say('');
  say(observation);
}

function exampleActions(env: Env): string {
  const names = env.actionNames;
  return names && names.length > 0 ? names.slice(0, 2).join(' || ') : 'your answer';
}

function formatStep(action: string, r: StepResult): string {
  const { success, actionIsValid, actionIsEffective, reason, ...extra } = r.info;
  const flags = [
    r.terminated && 'terminated',
    r.truncated && 'truncated',
    success && 'success',
    !actionIsValid && 'invalid',
    actionIsValid && !actionIsEffective && 'no effect',
  ].filter(Boolean);
  const extras = Object.entries(extra).map(([k, v]) => `${k}=${v}`);
  const lines = [
    `\n> ${action}`,
    r.observation,
    `reward ${r.reward}${flags.length ? `  [${flags.join(', ')}]` : ''}${extras.length ? `  ${extras.join(' ')}` : ''}`,
  ];
  if (reason) lines.push(`(${reason})`);
  return lines.join('\n');
}

function summary(steps: { reward: number; terminated: boolean; truncated: boolean; info: EnvInfo }[]): string {
  const total = steps.reduce((s, x) => s + x.reward, 0);
  const last = steps.at(-1);
  const state = !last ? 'not started' : last.terminated ? 'terminated' : last.truncated ? 'truncated' : 'not finished';
  return `${steps.length} action(s), return ${Math.round(total * 1e6) / 1e6}, ${state}, success ${last?.info.success ?? false}`;
}
