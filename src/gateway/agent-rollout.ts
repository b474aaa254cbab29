// The gateway as an episode source: groups x groupSize runs of an agent program become the same RolloutBatch the
// built-in loop returns (episodes, token-exact training samples, per-tag metrics), for the trainer's groups,
// filters and advantages to consume unchanged.
import {
  computeMetrics,
  type AgentCall,
  type AgentProgramConfig,
  type Episode,
  type EpisodeTurn,
  type RolloutBatch,
  type TrainingSample,
} from '../agent/index.js';
import { resolveAgentProgram } from './program-module.js';
import { runAgentEpisodes, type AgentOutcome, type AgentProgram, type AgentTask } from './runner.js';
import { samplesFromCalls } from './samples.js';
import { parseToolCalls, unparsedToolCall } from './qwen-tools.js';
import type { CallRecord } from './episodes.js';
import type { Gateway } from './server.js';
import type { ToolFormatName } from '../tokenizer/index.js';

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
  /** The agent block's config key, for errors about its modules (e.g. `env.train.0.agent`). @default "agent" */
  configKey?: string;
  /**
   * Sampling seed of the rollout: episode (g, m) samples from a seed mixed from it, g and m (see Gateway.open); unset:
   * batch seeds (not reproducible).
   */
  samplingSeed?: number;
  log?: (line: string) => void;
}

/**
 * Run every episode (bounded by `program.concurrency`) and assemble the batch. An episode's `success` is a reward
 * above 0 from a program that finished (`ok`); its score is the reward trained on (the failure reward otherwise).
 * The block's modules (an in-process agent, a verifier) load at the first call: a missing file or export is a
 * ConfigError before any episode runs (call `resolveAgentProgram` at startup to fail even earlier).
 */
export async function agentRollout(
  gateway: Gateway,
  program: AgentProgramConfig,
  options: AgentRolloutOptions,
): Promise<{ batch: RolloutBatch; outcomes: AgentOutcome[] }> {
  const tasks: (AgentTask & { member: number })[] = [];
  for (let g = 0; g < options.groups; g++) {
    for (let m = 0; m < options.groupSize; m++)
      tasks.push({
        episodeId: `${options.idPrefix}-g${g}-m${m}`,
        seed: options.seedBase + g,
        group: g,
        member: m,
        ...(options.samplingSeed !== undefined ? { samplingSeed: episodeSeed(options.samplingSeed, g, m) } : {}),
      });
  }
  const outcomes = await runAgentEpisodes(gateway, await loaded(program, options.configKey ?? 'agent'), tasks, {
    failureReward: program.failureReward,
    concurrency: program.concurrency,
    maxCalls: program.maxCalls,
    ...(options.log ? { log: options.log } : {}),
  });
  const episodes = outcomes.map((o, i) =>
    episodeOf(o, { index: i, member: tasks[i]!.member, tag: options.tag }, gateway.toolFormat, program.formatPenalty),
  );
  const samples: TrainingSample[] = outcomes.flatMap((o, i) =>
    samplesFromCalls(o.log.calls, episodes[i]!.score, { episode: i, group: o.task.group, tag: options.tag }),
  );
  return {
    batch: { episodes, samples, metrics: computeMetrics(episodes, options.groupSize), groupSize: options.groupSize },
    outcomes,
  };
}

// One load per agent block: its modules are imported (and checked) at the first rollout, i.e. when the run starts.
const programs = new WeakMap<AgentProgramConfig, Promise<AgentProgram>>();
function loaded(config: AgentProgramConfig, where: string): Promise<AgentProgram> {
  let p = programs.get(config);
  if (!p) {
    p = resolveAgentProgram(config, where);
    programs.set(config, p);
    p.catch(() => programs.delete(config)); // a failed load (a ConfigError the caller reports) is retried next time
  }
  return p;
}

/** The sampling seed of member m of group g: distinct per episode, so the G members of a group sample differently. */
function episodeSeed(seed: number, group: number, member: number): number {
  return (
    (Math.imul(seed ^ 0x2f6b1d3c, 0x85ebca6b) +
      Math.imul(group + 1, 0xc2b2ae35) +
      Math.imul(member + 1, 0x27d4eb2f)) >>>
    0
  );
}

/**
 * A recorded call as the program saw it: its request, and the reply the gateway answered (the same parse, with the
 * same ids, as src/gateway/server.ts's answer).
 */
function agentCall(c: CallRecord, episodeId: string, format: ToolFormatName): AgentCall {
  const { content, calls } =
    c.tools !== null ? parseToolCalls(c.text, `call_${episodeId}_${c.index}`, format) : { content: c.text, calls: [] };
  return {
    messages: c.messages,
    tools: c.tools,
    reply: { role: 'assistant', content, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
  };
}

/**
 * An agent episode: one turn per call (its prompt and sampled ids, the call as sent and answered), the reward on the
 * last turn, a format error and `formatPenalty` per garbled tool call; its score is the reward plus the penalties, as
 * the built-in loop's. The built-in loop's details (observations, parsed actions) have no counterpart here and are
 * absent.
 */
function episodeOf(
  o: AgentOutcome,
  at: { index: number; member: number; tag: string },
  format: ToolFormatName,
  formatPenalty: number,
): Episode {
  const success = o.status === 'ok' && o.reward > 0;
  const turns: EpisodeTurn[] = o.log.calls.map((c, i, all) => {
    // a reply holding tool-call text that does not parse: the format error of an agent call (`format_error_rate`)
    const garbled = c.tools !== null && unparsedToolCall(c.text, format);
    return {
      turn: i,
      promptIds: c.promptIds,
      ...(c.images ? { promptImages: c.images } : {}),
      tokens: c.completionIds,
      logprobs: c.logprobs,
      finishReason: c.finishReason,
      response: c.text,
      reward: i === all.length - 1 ? o.reward : 0,
      penalty: garbled ? formatPenalty : 0,
      formatError: garbled ? 'the reply holds tool-call text that is not a well-formed <tool_call>' : undefined,
      // reported_reward_ignored: 1 when a verifier overrode the program's own reward (`train/<tag>/info/...`).
      info: {
        success,
        actionIsValid: true,
        actionIsEffective: true,
        reported_reward_ignored: o.ignoredReward === undefined ? 0 : 1,
        ...(o.status === 'ok' ? {} : { reason: o.status }),
      },
      agentCall: agentCall(c, o.log.id, format),
    };
  });
  return {
    index: at.index,
    tag: at.tag,
    group: o.task.group,
    member: at.member,
    seed: o.task.seed,
    turns,
    success,
    envReturn: o.reward,
    score: turns.reduce((a, t) => a + t.penalty, o.reward),
    numActions: turns.length,
    endReason: o.status === 'timeout' ? 'truncated' : 'terminated',
  };
}
