// Runs a user's agent once per episode against the gateway (a command in its own session, the episode URL in
// OPENAI_BASE_URL, the task in RAGEN_* variables, killed with everything it started when it exits or at the time
// budget; or an in-process function), bounded in number, and settles the episode's reward (verifier, HTTP report,
// exit record / return value).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Gateway } from './server.js';
import type { EpisodeLog } from './episodes.js';
import { callAgent, describeValue, errorText, returnedReward, type AgentFunction } from './in-process.js';
import { EPISODE_TAG_VARIABLE, canTrackTree, killEpisodeTree, startTicks } from './process-tree.js';

export type { AgentContext, AgentFunction } from './in-process.js';

/** The API key agents get (clients insist on one; the gateway does not check it). */
const AGENT_API_KEY = 'ragen-gateway';

/** How to run the agent (the `env.train.N.agent` config block, its modules loaded: see `resolveAgentProgram`). */
export interface AgentProgram {
  /** A shell command line, run with `sh -c` in `cwd` (e.g. "node my-agent.mjs"). One of `command` and `agent`. */
  command?: string | null;
  /** An in-process agent, called once per episode instead of a command (see in-process.ts). */
  agent?: AgentFunction | null;
  /** When set, computes every finished episode's reward from its calls; a reward the program reported is ignored. */
  verifier?: TaskVerifier | null;
  /**
   * Wall-clock budget of one episode in seconds; past it the program and everything it started are killed (a function
   * is abandoned).
   */
  timeoutS: number;
  /** Working directory. @default the trainer's */
  cwd?: string | null;
  /** Extra environment variables. */
  env?: Record<string, string>;
}

/** One episode's task, given to the program as RAGEN_SEED, RAGEN_GROUP, RAGEN_EPISODE. */
export interface AgentTask {
  episodeId: string;
  seed: number;
  group: number;
  /** The episode's sampling seed (the gateway derives each call's from it); unset: the batch's. */
  samplingSeed?: number;
}

/** One call of an episode as a verifier sees it: the request's messages and tools as sent, the reply's text. */
export interface TranscriptCall {
  messages: unknown[];
  tools: unknown[] | null;
  completion: string;
}

/** A task verifier: the reward of an episode from its task and its calls. */
export type TaskVerifier = (task: AgentTask, transcript: TranscriptCall[]) => number | Promise<number>;

/**
 * How an episode ended: `ok` (finished with a reward), `no_reward` (finished without one, or its verifier failed),
 * `crashed`, `timeout`.
 */
export type AgentStatus = 'ok' | 'no_reward' | 'crashed' | 'timeout';

/**
 * Where an `ok` episode's reward came from (the first that applies): verifier, HTTP report, exit record / return value.
 */
export type RewardSource = 'verifier' | 'http' | 'exit' | 'return';

export interface AgentOutcome {
  task: AgentTask;
  status: AgentStatus;
  /** The reward trained on: the one of `rewardSource` when `ok`, else `failureReward`. */
  reward: number;
  rewardSource: RewardSource | null;
  /** A reward the program reported but the verifier overrode (undefined when none was reported or no verifier). */
  ignoredReward: number | undefined;
  log: EpisodeLog;
  exitCode: number | null;
  signal: string | null;
  /** The last bytes of the program's stderr (bounded), or an in-process agent's error, for the reason it failed. */
  stderrTail: string;
  durationMs: number;
}

export interface RunOptions {
  /** The reward of an episode that crashed, timed out or reported none. @default 0 */
  failureReward?: number;
  /** Programs running at once. @default 4 */
  concurrency?: number;
  /** Calls one episode may make (the gateway answers later ones 429); default: the gateway's. */
  maxCalls?: number;
  /** Bytes of stderr (and of stdout, read for the exit record) kept per program. @default 4096 */
  stderrBytes?: number;
  log?: (line: string) => void;
}

/** How the program part of an episode ended, before the reward is settled. */
interface ProgramEnd {
  failed: 'crashed' | 'timeout' | null;
  /** The reward the program gave without HTTP: its exit record's or its return value. */
  claimed: { reward: number; source: 'exit' | 'return' } | undefined;
  exitCode: number | null;
  signal: string | null;
  stderr: string;
}

/**
 * Run one episode: open it on the gateway, run the program (at most timeoutS), close it, settle the reward. The
 * reward: the verifier's when one is set (a reported one is then ignored); else the one POSTed to the reward URL;
 * else the exit record (a command's last stdout line `{"reward": x}`) or an in-process agent's return value.
 */
export async function runAgentEpisode(
  gateway: Gateway,
  program: AgentProgram,
  task: AgentTask,
  options: RunOptions = {},
): Promise<AgentOutcome> {
  const failureReward = options.failureReward ?? 0;
  const say = options.log ?? (() => {});
  if (!program.agent && !program.command)
    throw new Error('An agent program needs a command or an in-process agent function.');
  const { baseUrl, rewardUrl } = gateway.open(task.episodeId, {
    ...(options.maxCalls !== undefined ? { maxCalls: options.maxCalls } : {}),
    ...(task.samplingSeed !== undefined ? { seed: task.samplingSeed } : {}),
  });
  const start = Date.now();
  const end = program.agent
    ? await inProcess(program.agent, program.timeoutS, task, baseUrl, rewardUrl, options, say)
    : await spawnProgram(program, task, baseUrl, rewardUrl, options, say);
  const log = gateway.finish(task.episodeId);
  const reported = log.reward !== undefined ? { reward: log.reward, source: 'http' as const } : end.claimed;
  // A crashed or timed-out program scores failureReward whatever it reported, and is not verified.
  const verdict =
    end.failed === null && program.verifier ? await verify(program.verifier, task, log, program.timeoutS) : undefined;
  let settled: { reward: number; source: RewardSource } | undefined;
  if (end.failed === null)
    settled =
      verdict === undefined
        ? reported
        : typeof verdict === 'number'
          ? { reward: verdict, source: 'verifier' }
          : undefined;
  const status: AgentStatus = end.failed ?? (settled ? 'ok' : 'no_reward');
  const ignoredReward = verdict !== undefined ? reported?.reward : undefined;
  if (typeof verdict === 'object') {
    say(`episode ${task.episodeId}: the verifier failed (${verdict.error}), reward ${failureReward}`);
  } else if (settled?.source === 'verifier' && ignoredReward !== undefined) {
    say(
      `episode ${task.episodeId}: the program reported reward ${ignoredReward}, ignored: the verifier scores it ${settled.reward}`,
    );
  } else if (status !== 'ok') {
    const why = status === 'timeout' ? ` after ${program.timeoutS}s` : '';
    const how = program.agent ? '' : ` (exit ${end.exitCode ?? end.signal})`;
    const detail = !end.stderr
      ? ''
      : program.agent
        ? `; error: ${end.stderr.split('\n')[0]}`
        : `; stderr: ${stderrGist(end.stderr)}`;
    say(`episode ${task.episodeId}: ${status}${why}${how}, reward ${failureReward}${detail}`);
  }
  return {
    task,
    status,
    reward: settled?.reward ?? failureReward,
    rewardSource: settled?.source ?? null,
    ignoredReward,
    log,
    exitCode: end.exitCode,
    signal: end.signal,
    stderrTail: end.stderr,
    durationMs: Date.now() - start,
  };
}

/**
 * What a failed program's stderr says in one line: its last error line (`Error: Cannot find module ...`,
 * `ValueError: ...`: Node's and Python's crashes end in a stack or a version banner, not in the message), else its
 * last three lines.
 */
export function stderrGist(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return [...lines].reverse().find((l) => /^[\w.]*(Error|Exception)\b:?/.test(l)) ?? lines.slice(-3).join(' | ');
}

/**
 * Start the command in its own session, marked with a random tag (see process-tree.ts), and wait for it; when it exits
 * or at timeoutS, everything it started is killed. stdout and stderr bounded.
 */
async function spawnProgram(
  program: AgentProgram,
  task: AgentTask,
  baseUrl: string,
  rewardUrl: string,
  options: RunOptions,
  say: (line: string) => void,
): Promise<ProgramEnd> {
  const keep = options.stderrBytes ?? 4096;
  if (!canTrackTree && !warnedNoTree) {
    warnedNoTree = true;
    say(
      `agent programs: ${process.platform} has no /proc, so only each program's process group is killed at its episode's end; a child it starts detached (its own session) outlives the episode`,
    );
  }
  const tag = randomBytes(16).toString('hex');
  let tree: { root: number; since: number } | undefined;
  const end = () => {
    if (!tree) return;
    const { left } = killEpisodeTree(tree.root, tag, tree.since);
    if (left > 0)
      say(
        `episode ${task.episodeId}: ${left} process(es) the program started could not be killed (not permitted); end them yourself`,
      );
  };
  let stderr = '';
  let stdout = '';
  let timedOut = false;
  const exit = await new Promise<{ code: number | null; signal: string | null; spawnError?: Error }>((resolve) => {
    const child = spawn('/bin/sh', ['-c', program.command!], {
      cwd: program.cwd ?? undefined,
      // detached: the program leads a new session and process group; with the tag, the kill finds what leaves them.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...program.env,
        OPENAI_BASE_URL: baseUrl,
        OPENAI_API_KEY: AGENT_API_KEY,
        RAGEN_SEED: String(task.seed),
        RAGEN_GROUP: String(task.group),
        RAGEN_EPISODE: task.episodeId,
        RAGEN_REWARD_URL: rewardUrl,
        [EPISODE_TAG_VARIABLE]: tag,
      },
    });
    if (child.pid !== undefined) {
      tree = { root: child.pid, since: startTicks(child.pid) };
      liveTrees.set(child.pid, { tag, since: tree.since });
    }
    // setEncoding: a character split between two chunks is decoded whole. A flooding program costs `keep` bytes each.
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-keep)));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout = (stdout + chunk).slice(-keep)));
    const timer = setTimeout(() => {
      timedOut = true;
      end();
    }, program.timeoutS * 1000);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, spawnError: err });
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      end(); // whatever the program left running goes with it
      if (child.pid !== undefined) liveTrees.delete(child.pid);
      // The exit record needs all of stdout: wait for the pipes to close (bounded: a process the kill could not end
      // could hold them open).
      const done = () => resolve({ code, signal });
      const late = setTimeout(done, 1000);
      child.once('close', () => {
        clearTimeout(late);
        done();
      });
    });
  });
  if (exit.spawnError) stderr = `${stderr}\n${exit.spawnError.message}`.slice(-keep);
  const failed = timedOut ? 'timeout' : exit.code !== 0 ? 'crashed' : null;
  const reward = failed === null ? exitRecordReward(stdout) : undefined;
  return {
    failed,
    claimed: reward === undefined ? undefined : { reward, source: 'exit' },
    exitCode: exit.code,
    signal: exit.signal,
    stderr,
  };
}

/** The exit record: the last non-empty line of stdout, when it is a JSON object with a finite `reward`. */
export function exitRecordReward(stdout: string): number | undefined {
  const line = stdout.trimEnd().split('\n').pop()!.trim();
  if (!line.startsWith('{')) return undefined;
  try {
    const r = (JSON.parse(line) as { reward?: unknown }).reward;
    return typeof r === 'number' && Number.isFinite(r) ? r : undefined;
  } catch {
    return undefined;
  }
}

async function inProcess(
  fn: AgentFunction,
  timeoutS: number,
  task: AgentTask,
  baseUrl: string,
  rewardUrl: string,
  options: RunOptions,
  say: (line: string) => void,
): Promise<ProgramEnd> {
  const end = await callAgent(
    fn,
    { baseUrl, apiKey: AGENT_API_KEY, rewardUrl, seed: task.seed, group: task.group, episodeId: task.episodeId },
    timeoutS,
    say,
  );
  const none = { claimed: undefined, exitCode: null, signal: null, stderr: '' };
  if (end.kind === 'timeout') return { ...none, failed: 'timeout' };
  if (end.kind === 'threw')
    return { ...none, failed: 'crashed', stderr: errorText(end.error, options.stderrBytes ?? 4096) };
  let reward: number | undefined;
  try {
    reward = returnedReward(end.value);
  } catch (err) {
    say(`episode ${task.episodeId}: reading the agent's return value threw ${errorText(err, 200).split('\n')[0]}`); // e.g. a getter or a Proxy
  }
  if (reward === undefined && end.value !== undefined)
    say(
      `episode ${task.episodeId}: the agent returned ${describeValue(end.value)}, not a finite number or {reward: <finite number>}; no reward from its return value`,
    );
  return { ...none, failed: null, claimed: reward === undefined ? undefined : { reward, source: 'return' } };
}

/** The verifier's reward, or why there is none (it threw, returned a non-finite value, or ran past timeoutS). */
async function verify(
  verifier: TaskVerifier,
  task: AgentTask,
  log: EpisodeLog,
  timeoutS: number,
): Promise<number | { error: string }> {
  const transcript: TranscriptCall[] = log.calls.map((c) => ({
    messages: c.messages,
    tools: c.tools,
    completion: c.text,
  }));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ error: string }>(
    (resolve) => (timer = setTimeout(() => resolve({ error: `it ran past ${timeoutS}s` }), timeoutS * 1000)),
  );
  const run = Promise.resolve()
    .then(() => verifier({ ...task }, transcript))
    .then(
      (r) =>
        typeof r === 'number' && Number.isFinite(r)
          ? r
          : { error: `it returned ${describeValue(r)}, not a finite number` },
      (err: unknown) => ({ error: `it threw ${errorText(err, 300).split('\n')[0]}` }),
    );
  try {
    return await Promise.race([run, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Run every task, at most `concurrency` programs at once; outcomes in task order. */
export async function runAgentEpisodes(
  gateway: Gateway,
  program: AgentProgram,
  tasks: readonly AgentTask[],
  options: RunOptions = {},
): Promise<AgentOutcome[]> {
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const outcomes = new Array<AgentOutcome>(tasks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++;
      outcomes[i] = await runAgentEpisode(gateway, program, tasks[i]!, options);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
  return outcomes;
}

// Programs lead their own sessions (detached), so they would outlive a trainer that exits mid-rollout; the exit hook
// below kills every program still running and what it started (a signal that ends the trainer without `exit` cannot
// run it).
const liveTrees = new Map<number, { tag: string; since: number }>();
let warnedNoTree = false;
process.once('exit', () => {
  for (const [root, { tag, since }] of liveTrees) killEpisodeTree(root, tag, since);
});
