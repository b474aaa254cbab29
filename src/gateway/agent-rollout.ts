// The gateway as an episode source: groups x groupSize runs of an agent program become the same RolloutBatch the
// built-in loop returns (episodes, token-exact training samples, per-tag metrics), for the trainer's groups,
// filters and advantages to consume unchanged.
import { computeMetrics, type AgentProgramConfig, type Episode, type EpisodeTurn, type RolloutBatch, type TrainingSample } from '../agent/index.js';
import { runAgentEpisodes, type AgentOutcome, type AgentTask } from './runner.js';
import { samplesFromCalls } from './samples.js';
import type { Gateway } from './server.js';

/** Which episodes one rollout runs. */
export interface AgentRolloutOptions {
  /** The metric tag of these episodes (`train/<tag>/success`...). */
  tag: string;
  groups: number;
  groupSize: number;
  /** Group g runs with seed `seedBase + g` (all its members share it: G samples of one task). */
  seedBase: number;
  /** Makes episode ids unique across rollouts of one gateway (`<prefix>-g<group>-m<member>`). */
  idPrefix: string;
  /** Sampling seed of the rollout: episode (g, m) samples from a seed mixed from it, g and m (see Gateway.open); unset: batch seeds (not reproducible). */
  samplingSeed?: number;
  log?: (line: string) => void;
}

/**
 * Run every episode (bounded by `program.concurrency`) and assemble the batch. An episode's `success` is a reward
 * above 0 from a program that finished (`ok`); its score is the reward trained on (the failure reward otherwise).
 */
export async function agentRollout(gateway: Gateway, program: AgentProgramConfig, options: AgentRolloutOptions): Promise<{ batch: RolloutBatch; outcomes: AgentOutcome[] }> {
  const tasks: (AgentTask & { member: number })[] = [];
  for (let g = 0; g < options.groups; g++) {
    for (let m = 0; m < options.groupSize; m++) tasks.push({ episodeId: `${options.idPrefix}-g${g}-m${m}`, seed: options.seedBase + g, group: g, member: m, ...(options.samplingSeed !== undefined ? { samplingSeed: episodeSeed(options.samplingSeed, g, m) } : {}) });
  }
  const outcomes = await runAgentEpisodes(gateway, { command: program.command, timeoutS: program.timeoutS, cwd: program.cwd }, tasks, {
    failureReward: program.failureReward,
    concurrency: program.concurrency,
    maxCalls: program.maxCalls,
    ...(options.log ? { log: options.log } : {}),
  });
  const episodes = outcomes.map((o, i) => episodeOf(o, i, tasks[i]!.member, options.tag));
  const samples: TrainingSample[] = outcomes.flatMap((o, i) => samplesFromCalls(o.log.calls, o.reward, { episode: i, group: o.task.group, tag: options.tag }));
  return { batch: { episodes, samples, metrics: computeMetrics(episodes, options.groupSize), groupSize: options.groupSize }, outcomes };
}

/** The sampling seed of member m of group g: distinct per episode, so the G members of a group sample differently. */
function episodeSeed(seed: number, group: number, member: number): number {
  return (Math.imul(seed ^ 0x2f6b1d3c, 0x85ebca6b) + Math.imul(group + 1, 0xc2b2ae35) + Math.imul(member + 1, 0x27d4eb2f)) >>> 0;
}

/** An agent episode in the built-in loop's record shape: one turn per call, no env actions, the reward on the last turn. */
function episodeOf(o: AgentOutcome, index: number, member: number, tag: string): Episode {
  const success = o.status === 'ok' && o.reward > 0;
  const turns: EpisodeTurn[] = o.log.calls.map((c, i, all) => ({
    turn: i,
    observation: '',
    userText: '',
    promptIds: c.promptIds,
    response: c.text,
    think: '',
    answer: '',
    formatError: undefined,
    actions: [],
    droppedActions: 0,
    reward: i === all.length - 1 ? o.reward : 0,
    penalty: 0,
    info: { success, actionIsValid: true, actionIsEffective: true, ...(o.status === 'ok' ? {} : { reason: o.status }) },
    tokens: c.completionIds,
    logprobs: c.logprobs,
    finishReason: c.finishReason,
  }));
  return {
    index,
    tag,
    group: o.task.group,
    member,
    seed: o.task.seed,
    system: '',
    turns,
    success,
    envReturn: o.reward,
    score: o.reward,
    numActions: turns.length,
    endReason: o.status === 'timeout' ? 'truncated' : 'terminated',
    contextTruncations: 0,
    finalObservation: `agent program: ${o.status}${o.exitCode !== null && o.exitCode !== 0 ? ` (exit ${o.exitCode})` : ''}`,
  };
}
