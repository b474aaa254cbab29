// Policies the rollout loop can drive: a model behind the Engine interface, the env's own solver
// written in the model's output format (`oracle`), and uniformly random action names (`random`).
import { Rng, UsageError } from '../util/index.js';
import type { Engine, Generation, SamplingParams } from '../engine/index.js';
import { IMAGE_PAD, type ChatMessage, type Tokenizer, type VisionProcessor } from '../tokenizer/index.js';
import type { AgentConfig } from './config.js';
import type { EnvSlot } from './env-groups.js';

/** One prompt of a batched generation, with the env it is for (scripted policies look at it). */
export interface PolicyRequest {
  /** The exact prompt ids (chat template + prefill). */
  prompt: number[];
  slot: EnvSlot;
  /** 0-based turn. */
  turn: number;
  /** Actions the env may still take. */
  actionsLeft: number;
  /** The chat `prompt` renders (without the prefilled tag), for policies that send messages to a chat API. */
  messages?: readonly ChatMessage[];
}

/** Anything that answers a batch of prompts with sampled ids and their log-probs. */
export interface Policy {
  readonly name: string;
  /** A vision-language policy's image processor: rollouts then show each turn's images as vision tokens. */
  readonly vision?: VisionProcessor;
  /** One batched call per turn; `call` counts calls within the rollout (for seeding). */
  generate(requests: readonly PolicyRequest[], call: number): Promise<Generation[]>;
}

/** Sampling settings of `enginePolicy`. */
export interface EngineSampling {
  /** 0 = greedy. @default 1 */
  temperature?: number;
  topP?: number;
  topK?: number;
  /** Base seed; call i samples with a seed derived from (seed, i). @default 0 */
  seed?: number;
}

/** The stop settings every policy follows: the tokenizer's EOS, and `</answer>` if `stopAtAnswer`. */
export function stopSettings(
  tokenizer: Tokenizer,
  cfg: Pick<AgentConfig, 'stopAtAnswer'>,
): Pick<SamplingParams, 'stopTokenIds' | 'stopStrings'> {
  return { stopTokenIds: [tokenizer.eosTokenId], ...(cfg.stopAtAnswer ? { stopStrings: ['</answer>'] } : {}) };
}

/** A model behind the Engine interface: one `engine.generate` call per turn. */
export function enginePolicy(
  engine: Engine,
  tokenizer: Tokenizer,
  cfg: AgentConfig,
  sampling: EngineSampling = {},
): Policy {
  const base = sampling.seed ?? 0;
  return {
    name: `model(${engine.kind})`,
    ...(engine.vision ? { vision: engine.vision } : {}),
    async generate(requests, call) {
      const params: SamplingParams = {
        maxNewTokens: cfg.maxNewTokens,
        temperature: sampling.temperature ?? 1,
        ...(sampling.topP !== undefined ? { topP: sampling.topP } : {}),
        ...(sampling.topK !== undefined ? { topK: sampling.topK } : {}),
        ...stopSettings(tokenizer, cfg),
        seed: (Math.imul(base, 0x9e3779b1) ^ Math.imul(call + 1, 0x85ebca6b)) >>> 0,
      };
      // A prompt with vision tokens (a context with a vision processor) carries its messages' images, in order.
      const pad = tokenizer.tokenToId(IMAGE_PAD);
      const images = requests.map((r) =>
        pad !== undefined && r.prompt.includes(pad) ? r.messages?.flatMap((m) => m.images ?? []) : undefined,
      );
      if (images.some((im) => im !== undefined)) params.images = images;
      const gens = await engine.generate(
        requests.map((r) => r.prompt),
        params,
      );
      if (gens.length !== requests.length)
        throw new Error(`engine ${engine.kind} returned ${gens.length} generations for ${requests.length} prompts`);
      return gens;
    },
  };
}

/**
 * Text written as the model would (after the prefilled tag), tokenized, with log-probs 0 (a scripted
 * policy is deterministic). Ends with EOS unless `stopAtAnswer` (a model would be stopped at `</answer>`).
 */
export function scriptedGeneration(
  text: string,
  tokenizer: Tokenizer,
  cfg: Pick<AgentConfig, 'stopAtAnswer'>,
): Generation {
  const tokens = tokenizer.encode(text);
  if (!cfg.stopAtAnswer) tokens.push(tokenizer.eosTokenId);
  return { tokens, logprobs: tokens.map(() => 0), finishReason: 'stop' };
}

/** The continuation after the prefill that answers `actions` in the configured format. */
export function formatAnswer(
  actions: readonly string[],
  cfg: Pick<AgentConfig, 'enableThink' | 'actionSep'>,
  think = '',
): string {
  const answer = `${actions.join(` ${cfg.actionSep} `)}</answer>`;
  return cfg.enableThink ? `${think}</think><answer>${answer}` : answer;
}

/**
 * The env's solver (`envSpec(id).solve`) playing through the text loop: on a slot's first turn it
 * solves the slot's seed, then writes the next `min(maxActionsPerTurn, actionsLeft)` actions of the
 * plan each turn. Needs deterministic envs (e.g. CoordFrozenLake with successRate=1).
 */
export function oraclePolicy(
  tokenizer: Tokenizer,
  cfg: AgentConfig,
  think: (actions: readonly string[]) => string = () => '',
): Policy {
  const plans = new Map<number, { seed: number; plan: string[] }>();
  return {
    name: 'oracle',
    async generate(requests) {
      return requests.map((r) => {
        let entry = plans.get(r.slot.index);
        if (!entry || entry.seed !== r.slot.seed || r.turn === 0) {
          const solve = r.slot.spec.solve;
          if (!solve)
            throw new UsageError(
              `Environment \`${r.slot.tag}\` has no solver, so \`--policy oracle\` cannot play it. Use --policy random or model.`,
            );
          const plan = solve(r.slot.config, r.slot.seed, r.slot.mode);
          if (!plan) throw new UsageError(`The solver of \`${r.slot.tag}\` found no solution for seed ${r.slot.seed}.`);
          entry = { seed: r.slot.seed, plan: plan.slice() };
          plans.set(r.slot.index, entry);
        }
        const actions = entry.plan.splice(0, Math.max(1, Math.min(cfg.maxActionsPerTurn, r.actionsLeft)));
        return scriptedGeneration(formatAnswer(actions, cfg, think(actions)), tokenizer, cfg);
      });
    },
  };
}

/** Uniformly random action names (1 to the per-turn limit of them): the floor a model must beat. */
export function randomPolicy(tokenizer: Tokenizer, cfg: AgentConfig, seed = 0): Policy {
  const rng = new Rng(seed);
  return {
    name: 'random',
    async generate(requests) {
      return requests.map((r) => {
        const names = r.slot.env.actionNames;
        const n = 1 + rng.int(Math.max(1, Math.min(cfg.maxActionsPerTurn, r.actionsLeft)));
        const actions = Array.from({ length: n }, () =>
          names && names.length > 0 ? rng.choice(names) : String(rng.int(100)),
        );
        return scriptedGeneration(formatAnswer(actions, cfg), tokenizer, cfg);
      });
    },
  };
}
