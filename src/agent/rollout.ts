// The rollout loop (RAGEN's agent_proxy.rollout, inventory section 2.3): per turn, render the prompts
// of the active envs, generate in one batch, parse, step concurrently; finished envs drop out.
import type { EnvInfo } from '../env/index.js';
import type { Generation } from '../engine/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import type { RgbImage } from '../util/index.js';
import type { AgentConfig } from './config.js';
import type { EnvGroups, EnvSlot } from './env-groups.js';
import type { EndReason, Episode, LoopEpisode } from './episode.js';
import { EpisodeContext } from './episode-context.js';
import { computeMetrics, type TagMetrics } from './metrics.js';
import { parseResponse } from './parse.js';
import type { Policy, PolicyRequest } from './policies.js';
import { prefillText, systemPrompt } from './prompt.js';
import type { TrainingSample } from './sequence.js';

export type { AgentCall, Episode, EpisodeTurn, EndReason, LoopEpisode, LoopTurn } from './episode.js';

/** What a rollout returns: episodes for logging/eval, samples for training, metrics per tag. */
export interface RolloutBatch {
  episodes: Episode[];
  /** Training sequences (see TrainingSample); `collate` pads them into (B, T) arrays. */
  samples: TrainingSample[];
  metrics: Record<string, TagMetrics>;
  groupSize: number;
}

/** Settings of `rollout`. */
export interface RolloutOptions {
  groups: EnvGroups;
  policy: Policy;
  tokenizer: Tokenizer;
  agent: AgentConfig;
  /** Reset seed base (see EnvGroups.nextSeeds); default: the manager's own schedule. */
  resetSeed?: number;
  /** Called after each turn with the number of envs that generated (progress bars). */
  onTurn?: (turn: number, active: number) => void;
}

interface SlotState {
  ctx: EpisodeContext;
  obs: string;
  images: readonly RgbImage[] | undefined;
  previousReward: number | undefined;
  invalidWarning: boolean;
  info: EnvInfo;
  ended: EndReason | undefined;
  episode: Episode & { loop: LoopEpisode };
}

/** The system message of a slot's episodes (its env's instruction, legend, actions and action cap). */
export function slotSystemPrompt(slot: EnvSlot, cfg: AgentConfig): string {
  return systemPrompt(
    {
      instruction: slot.env.instruction,
      legend: slot.env.legend,
      actionNames: slot.env.actionNames,
      maxActionsPerEpisode: slot.maxActions,
    },
    cfg,
  );
}

/** Run one batch of episodes to the end. */
export async function rollout(opts: RolloutOptions): Promise<RolloutBatch> {
  const { groups, policy, tokenizer, agent: cfg } = opts;
  const observations = await groups.reset(opts.resetSeed);
  const states: SlotState[] = groups.slots.map((slot, i) => {
    const system = slotSystemPrompt(slot, cfg);
    return {
      ctx: new EpisodeContext(tokenizer, cfg, system, undefined, policy.vision),
      obs: observations[i]!,
      images: groups.imagesOf(slot),
      previousReward: undefined,
      invalidWarning: false,
      info: { success: false, actionIsValid: true, actionIsEffective: false },
      ended: undefined,
      episode: {
        index: i,
        tag: slot.tag,
        group: slot.group,
        member: slot.member,
        seed: slot.seed,
        turns: [],
        success: false,
        envReturn: 0,
        score: 0,
        numActions: 0,
        endReason: 'max_turns',
        loop: { system, contextTruncations: 0, finalObservation: observations[i]! },
      },
    };
  });

  for (let turn = 0, call = 0; ; turn++) {
    // summaryMemory: the policy first summarises the turns this turn's window leaves out (its tokens are not trained)
    const asks: { s: SlotState; upTo: number; req: PolicyRequest }[] = [];
    groups.slots.forEach((slot, i) => {
      const s = states[i]!;
      if (s.ended || turn >= (slot.maxTurns ?? cfg.maxTurns)) return;
      const ask = s.ctx.summaryRequest();
      if (ask)
        asks.push({
          s,
          upTo: ask.upTo,
          req: { prompt: ask.ids, slot, turn, actionsLeft: groups.actionsLeft(slot), messages: ask.messages },
        });
    });
    if (asks.length > 0) {
      const summaries = await policy.generate(
        asks.map((a) => a.req),
        call++,
      );
      asks.forEach((a, j) => a.s.ctx.setSummary(a.upTo, summaries[j]!));
    }
    const requests: PolicyRequest[] = [];
    const active: SlotState[] = [];
    const userTexts: string[] = [];
    const promptImages: (readonly RgbImage[])[] = [];
    groups.slots.forEach((slot, i) => {
      const s = states[i]!;
      if (s.ended) return;
      if (turn >= (slot.maxTurns ?? cfg.maxTurns)) {
        s.ended = 'max_turns';
        return;
      }
      const actionsLeft = groups.actionsLeft(slot);
      const view = {
        turn: turn + 1,
        state: s.obs,
        ...(s.images ? { images: s.images } : {}),
        actionsLeft,
        previousReward: s.previousReward,
        invalidWarning: s.invalidWarning,
      };
      const prompt = s.ctx.prompt(view);
      if (!prompt) {
        s.ended = 'context_full';
        return;
      }
      const messages = s.ctx.promptMessages;
      requests.push({ prompt, slot, turn, actionsLeft, ...(messages ? { messages } : {}) });
      active.push(s);
      userTexts.push(s.ctx.userText(view));
      promptImages.push(s.ctx.promptImages);
    });
    if (requests.length === 0) break;
    const gens = await policy.generate(requests, call++);
    await Promise.all(
      requests.map((req, j) =>
        stepOne(req.slot, active[j]!, gens[j]!, req, userTexts[j]!, promptImages[j]!, groups, cfg),
      ),
    );
    opts.onTurn?.(turn, requests.length);
  }

  const episodes = states.map((s) => finishEpisode(s));
  const samples: TrainingSample[] = [];
  states.forEach((s) => {
    const e = s.episode;
    const meta = { episode: e.index, group: e.group, tag: e.tag };
    const reward = cfg.useTurnScores
      ? { turnRewards: e.turns.map((t) => t.reward + t.penalty) }
      : { episodeScore: e.score };
    samples.push(...s.ctx.samples(meta, reward));
  });
  return {
    episodes,
    samples,
    metrics: computeMetrics(episodes, groups.options.groupSize),
    groupSize: groups.options.groupSize,
  };
}

async function stepOne(
  slot: EnvSlot,
  s: SlotState,
  gen: Generation,
  req: PolicyRequest,
  userText: string,
  promptImages: readonly RgbImage[],
  groups: EnvGroups,
  cfg: AgentConfig,
): Promise<void> {
  const rec = s.ctx.respond(gen);
  const parsed = parseResponse(rec.fullText, {
    enableThink: cfg.enableThink,
    actionSep: cfg.actionSep,
    maxActions: cfg.maxActionsPerTurn,
  });
  const step = await groups.step(slot, parsed.actions);
  const attempted = step.actions.filter((a) => !a.skipped);
  const bad = !parsed.ok || attempted.some((a) => !a.valid);
  // Format penalty, then RAGEN's newer think-length and per-action step penalties (its es_manager, PR #160).
  let penalty = bad ? cfg.formatPenalty : 0;
  const limit = cfg.thinkLenLimit;
  if (parsed.ok && limit !== null && cfg.thinkLenPenalty !== 0 && parsed.think.length > limit)
    penalty += (cfg.thinkLenPenalty * (parsed.think.length - limit)) / limit;
  if (cfg.stepPenalty !== 0) penalty += cfg.stepPenalty * step.actions.filter((a) => a.executed).length;
  s.episode.turns.push({
    turn: req.turn,
    promptIds: req.prompt,
    ...(promptImages.length > 0 ? { promptImages } : {}),
    tokens: gen.tokens.slice(),
    logprobs: gen.logprobs.slice(),
    finishReason: gen.finishReason,
    response: rec.decoded,
    reward: step.reward,
    penalty,
    formatError: parsed.ok ? undefined : parsed.reason,
    info: step.info,
    loop: {
      observation: s.obs,
      ...(s.images ? { images: s.images } : {}),
      userText,
      think: parsed.think,
      answer: parsed.answer,
      actions: step.actions,
      droppedActions: parsed.droppedActions,
    },
  });
  s.ctx.endTurn(
    step.actions.filter((a) => a.executed).map((a) => a.action),
    step.reward,
  );
  s.obs = step.observation;
  s.images = step.images;
  s.previousReward = step.reward;
  s.invalidWarning = step.validCount === 0;
  s.info = step.info;
  if (slot.done) s.ended = step.terminated ? 'terminated' : step.capReached ? 'action_cap' : 'truncated';
}

function finishEpisode(s: SlotState): Episode {
  const e = s.episode;
  e.success = s.info.success === true;
  e.envReturn = e.turns.reduce((a, t) => a + t.reward, 0);
  e.score = e.turns.reduce((a, t) => a + t.reward + t.penalty, 0);
  e.numActions = e.turns.reduce((a, t) => a + (t.loop?.actions.filter((x) => x.executed).length ?? 0), 0);
  e.endReason = s.ended ?? 'max_turns';
  e.loop.contextTruncations = s.ctx.truncations;
  e.loop.finalObservation = s.obs;
  return e;
}

/**
 * The built-in loop's conversation of an episode as OpenAI-style messages: system, then user / assistant per turn (the
 * assistant text includes the prefilled tag). Empty for an agent program's episode: each turn's `agentCall` holds its
 * call as the program sent it.
 */
export function episodeMessages(
  e: Episode,
  cfg: Pick<AgentConfig, 'enableThink'>,
): { role: string; content: string }[] {
  if (!e.loop) return [];
  const prefill = prefillText(cfg);
  const msgs = [{ role: 'system', content: e.loop.system }];
  for (const t of e.turns)
    msgs.push({ role: 'user', content: t.loop?.userText ?? '' }, { role: 'assistant', content: prefill + t.response });
  return msgs;
}
