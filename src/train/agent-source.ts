// Agent programs as a rollout source (`env.train.N.agent`, `env.val.N.agent`): a training gateway over the run's
// engine and tokenizer, one `agentRollout` per agent entry, and the built-in and agent batches joined into one.
import type { RolloutBatch } from '../agent/index.js';
import { agentEntries, samplingOf, type RagenConfig } from '../config/index.js';
import { LocalEngine, type Engine } from '../engine/index.js';
import { agentRollout, Gateway, unparsedToolCall, type AgentOutcome } from '../gateway/index.js';
import type { MetricValues } from '../metrics/index.js';
import type { Tokenizer, ToolFormatName } from '../tokenizer/index.js';
import { findModelPath, loadTextConfig } from '../model/index.js';

/**
 * A gateway answering agent programs with the run's policy: loopback, a free port, sampling fixed to the split's
 * (`generation.*`, or `generation.val.*`), at most `agent.maxNewTokens` tokens per call, the model's context length.
 */
export async function openGateway(
  config: RagenConfig,
  engine: Engine,
  tokenizer: Tokenizer,
  mode: 'train' | 'val',
  log?: (line: string) => void,
): Promise<Gateway> {
  const s = samplingOf(config, mode, 0);
  const { contextLength, vocabSize } = await modelSizes(config, engine);
  const gateway = new Gateway({
    engine,
    tokenizer,
    modelName: config.name ?? 'ragen-policy',
    contextLength,
    vocabSize,
    sampling: { temperature: s.temperature, topP: s.topP, topK: s.topK },
    maxTokens: config.agent.maxNewTokens,
    ...(log ? { log } : {}),
  });
  await gateway.listen(0, '127.0.0.1');
  return gateway;
}

/**
 * The policy's context length and vocabulary: the local engine's model, else `model.path`'s config.json (a
 * Qwen2.5-VL's language model's).
 */
async function modelSizes(config: RagenConfig, engine: Engine): Promise<{ contextLength: number; vocabSize: number }> {
  if (engine instanceof LocalEngine)
    return { contextLength: engine.policy.config.maxPositionEmbeddings, vocabSize: engine.policy.config.vocabSize };
  const cfg = await loadTextConfig(findModelPath(config.model.path) ?? config.model.path);
  return {
    contextLength: cfg.maxPositionEmbeddings,
    vocabSize: 'vocabSize' in engine ? Number((engine as { vocabSize: number }).vocabSize) : cfg.vocabSize,
  };
}

/** Where a split's agent rollout starts: its groups' task seeds, its sampling seed, its episode-id prefix. */
export interface AgentRolloutPlan {
  /** Task seed of the first agent group; agent groups follow each other (entry by entry). */
  seedBase: number;
  samplingSeed: number;
  /** Unique per rollout of one gateway (`s3`, `val`); entries add their index. */
  idPrefix: string;
}

/**
 * Every agent entry of `mode`, rolled out through `gateway`; one batch (groups numbered per entry), the outcomes, and
 * the requests the gateway refused for naming no open episode since the last rollout (`Gateway.takeUnauthorized`).
 */
export async function agentBatches(
  gateway: Gateway,
  config: RagenConfig,
  mode: 'train' | 'val',
  plan: AgentRolloutPlan,
  log?: (line: string) => void,
): Promise<{ batches: RolloutBatch[]; outcomes: AgentOutcome[]; unauthorized: number }> {
  const batches: RolloutBatch[] = [];
  const outcomes: AgentOutcome[] = [];
  let seed = plan.seedBase;
  for (const e of agentEntries(config, mode)) {
    const r = await agentRollout(gateway, e.program, {
      tag: e.name,
      groups: e.groups,
      groupSize: e.groupSize,
      seedBase: seed,
      idPrefix: `${plan.idPrefix}-e${e.index}`,
      configKey: `env.${mode}.${e.index}.agent`,
      samplingSeed: (plan.samplingSeed + Math.imul(e.index, 0x632be5ab)) >>> 0,
      ...(log ? { log } : {}),
    });
    const failure = gateway.takeEngineFailure();
    if (failure) throw failure; // the policy broke, not a program: stop the step as the built-in loop does
    seed += e.groups;
    batches.push(r.batch);
    outcomes.push(...r.outcomes);
  }
  return { batches, outcomes, unauthorized: gateway.takeUnauthorized() };
}

/** Join rollout batches of one group size: episodes and samples renumbered to their place in the joined batch. */
export function joinBatches(batches: readonly RolloutBatch[]): RolloutBatch {
  if (batches.length === 1) return batches[0]!;
  const out: RolloutBatch = { episodes: [], samples: [], metrics: {}, groupSize: batches[0]!.groupSize };
  for (const b of batches) {
    const offset = out.episodes.length;
    out.episodes.push(...b.episodes.map((e) => ({ ...e, index: e.index + offset })));
    out.samples.push(...b.samples.map((s) => ({ ...s, episode: s.episode + offset })));
    Object.assign(out.metrics, b.metrics); // keyed by tag, and tags differ between entries (config check)
  }
  return out;
}

/**
 * The gateway's metrics of a rollout: calls, refused calls, requests that named no open episode (`unauthorized`, see
 * `agentBatches`), second rewards, episodes by status, mean calls per episode, and the share of calls offered tools
 * whose reply holds tool-call text that does not parse (`unparsedToolCall`; 0 with no such calls).
 */
export function gatewayMetrics(
  outcomes: readonly AgentOutcome[],
  unauthorized = 0,
  format: ToolFormatName = 'qwen',
): MetricValues {
  const calls = outcomes.reduce((n, o) => n + o.log.calls.length, 0);
  const withTools = outcomes.flatMap((o) => o.log.calls.filter((c) => c.tools !== null));
  const count = (status: AgentOutcome['status']) => outcomes.filter((o) => o.status === status).length;
  return {
    'gateway/calls': calls,
    'gateway/refused_calls': outcomes.reduce((n, o) => n + o.log.refusedCalls, 0),
    'gateway/unauthorized_calls': unauthorized,
    'gateway/duplicate_rewards': outcomes.reduce((n, o) => n + o.log.duplicateRewards, 0),
    'gateway/calls_per_episode': outcomes.length > 0 ? calls / outcomes.length : 0,
    'gateway/episodes_ok': count('ok'),
    'gateway/episodes_no_reward': count('no_reward'),
    'gateway/episodes_crashed': count('crashed'),
    'gateway/episodes_timeout': count('timeout'),
    'gateway/unparsed_tool_call_rate':
      withTools.length > 0 ? withTools.filter((c) => unparsedToolCall(c.text, format)).length / withTools.length : 0,
  };
}

/**
 * What the gateway refused in a rollout, as one console line (null when nothing was): requests that named no open
 * episode (404), second rewards (409) and calls over `maxCalls` (429), each with its count.
 */
export function gatewayRefusals(m: MetricValues): string | null {
  const n = (key: keyof MetricValues) => m[key] ?? 0;
  const parts = [
    n('gateway/unauthorized_calls') > 0
      ? `${n('gateway/unauthorized_calls')} request(s) that named no open episode (404: a wrong secret in the URL, or an episode that had ended)`
      : '',
    n('gateway/duplicate_rewards') > 0
      ? `${n('gateway/duplicate_rewards')} second reward(s) of an episode (409: the first one counts)`
      : '',
    n('gateway/refused_calls') > 0 ? `${n('gateway/refused_calls')} call(s) over an episode's maxCalls (429)` : '',
  ].filter((p) => p !== '');
  return parts.length > 0 ? `the gateway refused ${parts.join(', ')}` : null;
}
