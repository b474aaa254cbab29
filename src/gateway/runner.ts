// Runs a user's agent program once per episode against the gateway: its own process group, the episode URL in
// OPENAI_BASE_URL, the task in RAGEN_* variables, killed with its whole group at the time budget, bounded in number.
import { spawn } from 'node:child_process';
import type { Gateway } from './server.js';
import type { EpisodeLog } from './episodes.js';

/** How to start the agent program (the `env.train.N.agent` config block). */
export interface AgentProgram {
  /** A shell command line, run with `sh -c` in `cwd` (e.g. "node my-agent.mjs"). */
  command: string;
  /** Wall-clock budget of one episode in seconds; past it the program's process group is killed. */
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

/** How an episode ended: `ok` (exit 0 with a reward), `no_reward` (exit 0 without one), `crashed`, `timeout`. */
export type AgentStatus = 'ok' | 'no_reward' | 'crashed' | 'timeout';

export interface AgentOutcome {
  task: AgentTask;
  status: AgentStatus;
  /** The reward trained on: the reported one when `ok`, else `failureReward`. */
  reward: number;
  log: EpisodeLog;
  exitCode: number | null;
  signal: string | null;
  /** The last bytes of the program's stderr (bounded), for the reason it failed. */
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
  /** Bytes of stderr kept per program. @default 4096 */
  stderrBytes?: number;
  log?: (line: string) => void;
}

/** Run one episode: open it on the gateway, start the program, wait (at most timeoutS), kill its group, close it. */
export async function runAgentEpisode(gateway: Gateway, program: AgentProgram, task: AgentTask, options: RunOptions = {}): Promise<AgentOutcome> {
  const failureReward = options.failureReward ?? 0;
  const keep = options.stderrBytes ?? 4096;
  const { baseUrl, rewardUrl } = gateway.open(task.episodeId, { ...(options.maxCalls !== undefined ? { maxCalls: options.maxCalls } : {}), ...(task.samplingSeed !== undefined ? { seed: task.samplingSeed } : {}) });
  const start = Date.now();
  let stderr = '';
  let timedOut = false;
  const exit = await new Promise<{ code: number | null; signal: string | null; spawnError?: Error }>((resolve) => {
    const child = spawn('/bin/sh', ['-c', program.command], {
      cwd: program.cwd ?? undefined,
      // detached: the program leads a new process group, so the kill below reaches everything it started.
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env,
        ...program.env,
        OPENAI_BASE_URL: baseUrl,
        OPENAI_API_KEY: 'ragen-gateway', // clients insist on a key; the gateway does not check it
        RAGEN_SEED: String(task.seed),
        RAGEN_GROUP: String(task.group),
        RAGEN_EPISODE: task.episodeId,
        RAGEN_REWARD_URL: rewardUrl,
      },
    });
    if (child.pid !== undefined) liveGroups.add(child.pid);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-keep); // a program that floods stderr costs `keep` bytes
    });
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, program.timeoutS * 1000);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, spawnError: err });
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      killGroup(child.pid); // whatever the program left running in its group goes with it
      if (child.pid !== undefined) liveGroups.delete(child.pid);
      resolve({ code, signal });
    });
  });
  const log = gateway.finish(task.episodeId);
  const status: AgentStatus = timedOut ? 'timeout' : exit.code !== 0 ? 'crashed' : log.reward === undefined ? 'no_reward' : 'ok';
  if (exit.spawnError) stderr = `${stderr}\n${exit.spawnError.message}`.slice(-keep);
  if (status !== 'ok') {
    options.log?.(`episode ${task.episodeId}: ${status}${timedOut ? ` after ${program.timeoutS}s` : ''} (exit ${exit.code ?? exit.signal}), reward ${failureReward}${stderr ? `; stderr: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}`);
  }
  return { task, status, reward: status === 'ok' ? log.reward! : failureReward, log, exitCode: exit.code, signal: exit.signal, stderrTail: stderr, durationMs: Date.now() - start };
}

/** Run every task, at most `concurrency` programs at once; outcomes in task order. */
export async function runAgentEpisodes(gateway: Gateway, program: AgentProgram, tasks: readonly AgentTask[], options: RunOptions = {}): Promise<AgentOutcome[]> {
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

// Programs lead their own process groups (detached), so they would outlive a trainer that exits mid-rollout; the
// exit hook below kills every group still running (a signal that ends the trainer without `exit` cannot run it).
const liveGroups = new Set<number>();
process.once('exit', () => {
  for (const pid of liveGroups) killGroup(pid);
});

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err; // ESRCH: the group is already gone
  }
}
