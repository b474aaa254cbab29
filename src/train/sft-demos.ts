// Demonstrations for SFT: the envs' solvers played through the real rollout loop (so the token layout and
// loss masks are exactly what RL later samples in), with short templated reasoning in <think> per env.
import {
  EnvGroups,
  formatAnswer,
  rollout,
  scriptedGeneration,
  type AgentConfig,
  type Episode,
  type Policy,
  type TrainingSample,
} from '../agent/index.js';
import { resolveEnvId } from '../env/index.js';
import type { Tokenizer, VisionProcessor } from '../tokenizer/index.js';
import { Rng, UsageError } from '../util/index.js';

/** What a reasoning template sees of one turn. */
export interface DemoTurn {
  /** The env's current state (`env.render()`, what the turn's prompt shows). */
  observation: string;
  /** The env's action names this episode (Bandit renames its arms at reset). */
  actionNames: readonly string[] | undefined;
  /** The solver's next actions from this state. */
  plan: readonly string[];
  /** The actions the demonstration writes (the plan, or random ones in a noisy episode). */
  actions: readonly string[];
}

/** Writes the text inside <think> for one turn. */
export type Reasoner = (turn: DemoTurn) => string;

/** Grid cells of the symbols a reasoner looks for, as `(row, col)` text, in reading order. */
function cells(observation: string, symbols: string): string[] {
  const rows = observation.split('\n').filter((l) => l.length > 0 && [...l].every((ch) => '#_OX√PSG'.includes(ch)));
  const out: string[] = [];
  rows.forEach((line, r) => [...line].forEach((ch, c) => symbols.includes(ch) && out.push(`(${r}, ${c})`)));
  return out;
}

/**
 * The reasoning of each env family: it names the positions the next move depends on, in the
 * observation's own `(row, column)` notation (the grid drawn in the state, row 0 at the top):
 *
 * | env | think |
 * |---|---|
 * | Sokoban, VisualSimpleSokoban (`#_OX√PS` grid) | `player (4, 2), box (3, 2), target (2, 1)` (player on target counts as player; a box on
 * target is left out) |
 * | FrozenLake, CoordFrozenLake, VisualFrozenLake | `player (3, 1), goal (2, 3)` |
 * | Bandit, BanditTest | `Prospector is the risky arm` / `Auditor is the safe arm` (of the arm pulled: the solver pulls
 * the risky one) |
 *
 * Envs without an entry get an empty <think></think>.
 */
export const DEMO_REASONING: Readonly<Record<string, Reasoner>> = {
  SimpleSokoban: sokobanThink,
  LargerSokoban: sokobanThink,
  VisualSimpleSokoban: sokobanThink,
  FrozenLake: lakeThink,
  CoordFrozenLake: lakeThink,
  VisualFrozenLake: lakeThink,
  Bandit: banditThink,
  BanditTest: banditThink,
};

function sokobanThink(t: DemoTurn): string {
  const boxes = cells(t.observation, 'X');
  const targets = cells(t.observation, 'OS');
  return `player ${cells(t.observation, 'PS')[0] ?? '?'}, box ${boxes.join(' ') || 'none'}, target ${targets.join(' ') || 'none'}`;
}

function lakeThink(t: DemoTurn): string {
  return `player ${cells(t.observation, 'P')[0] ?? '?'}, goal ${cells(t.observation, 'G')[0] ?? '?'}`;
}

function banditThink(t: DemoTurn): string {
  const arm = t.actions[0] ?? '';
  return `${arm} is the ${arm.toLowerCase() === (t.plan[0] ?? '').toLowerCase() ? 'risky' : 'safe'} arm`;
}

/** Settings of `demoPolicy`. */
export interface DemoPolicyOptions {
  /**
   * Per env id: the fraction of episodes (drawn per seed) that play random valid actions instead of the solver's.
   * @default none
   */
  noise?: Readonly<Record<string, number>>;
  /** Reasoning templates by env id. @default DEMO_REASONING */
  reasoning?: Readonly<Record<string, Reasoner>>;
  /** Salt of the per-seed noise draw. @default 0 */
  seed?: number;
  /**
   * A vision-language model's image processor: the demos' prompts then show each turn's images as vision tokens (and
   * their samples carry the images), as that model's rollouts will.
   */
  vision?: VisionProcessor;
}

/**
 * The env's solver written in the model's output format (as `oraclePolicy` does: solve the seed on
 * the first turn, then the next `min(maxActionsPerTurn, actionsLeft)` actions of the plan each turn),
 * with the env's reasoning template in <think>; a noisy episode writes random action names instead.
 * Needs deterministic envs (e.g. FrozenLake with successRate=1).
 */
export function demoPolicy(tokenizer: Tokenizer, cfg: AgentConfig, options: DemoPolicyOptions = {}): Policy {
  const reasoning = options.reasoning ?? DEMO_REASONING;
  const plans = new Map<number, { seed: number; plan: string[]; rng: Rng | null }>();
  return {
    name: 'demo',
    ...(options.vision ? { vision: options.vision } : {}),
    async generate(requests) {
      return requests.map((r) => {
        const slot = r.slot;
        let entry = plans.get(slot.index);
        if (!entry || entry.seed !== slot.seed || r.turn === 0) {
          if (!slot.spec.solve)
            throw new UsageError(
              `Environment \`${slot.tag}\` has no solver, so it cannot give SFT demonstrations. Pick envs with a solver (see \`ragen envs\`).`,
            );
          const plan = slot.spec.solve(slot.config, slot.seed, slot.mode);
          if (!plan) throw new UsageError(`The solver of \`${slot.tag}\` found no solution for seed ${slot.seed}.`);
          const draw = new Rng(((slot.seed * 0x9e3779b1) ^ (options.seed ?? 0)) >>> 0);
          const noisy = draw.random() < (options.noise?.[slot.tag] ?? 0);
          entry = { seed: slot.seed, plan: plan.slice(), rng: noisy ? draw : null };
          plans.set(slot.index, entry);
        }
        const n = Math.max(1, Math.min(cfg.maxActionsPerTurn, r.actionsLeft));
        const plan = entry.plan.slice(0, n);
        const names = slot.env.actionNames;
        const actions =
          entry.rng && names && names.length > 0 ? Array.from({ length: n }, () => entry.rng!.choice(names)) : plan;
        entry.plan.splice(0, n);
        const think =
          reasoning[slot.tag]?.({ observation: slot.env.render(), actionNames: names, plan, actions }) ?? '';
        return scriptedGeneration(formatAnswer(actions, cfg, think), tokenizer, cfg);
      });
    },
  };
}

/** Settings of `buildDemos`. */
export interface BuildDemosOptions extends DemoPolicyOptions {
  /** Env ids (each must have a solver). */
  envs: readonly string[];
  /** Per env id: config overrides (e.g. `{FrozenLake: {successRate: 1}}`). */
  envConfig?: Readonly<Record<string, Record<string, unknown>>>;
  /** Episodes per env. */
  episodes: number;
  /** First reset seed (the train split; RAGEN's `seed.train` = 10000). @default 10000 */
  trainSeed?: number;
  /** Turns per episode per env id (default: `agent.maxTurns`). */
  maxTurns?: Readonly<Record<string, number>>;
}

/** Demonstrations: the rollout's episodes and its training samples (loss mask = the demonstrated tokens). */
export interface Demos {
  episodes: Episode[];
  samples: TrainingSample[];
  /** Solved episodes / all, per env id. */
  success: Record<string, number>;
}

/** Play `episodes` demonstrations of every env through `rollout` (in batches of 64) and collect the samples. */
export async function buildDemos(tokenizer: Tokenizer, cfg: AgentConfig, opts: BuildDemosOptions): Promise<Demos> {
  const episodes: Episode[] = [];
  const samples: TrainingSample[] = [];
  const success: Record<string, number> = {};
  let seed = opts.trainSeed ?? 10000;
  for (const raw of opts.envs) {
    const env = resolveEnvId(raw);
    let solved = 0;
    for (let done = 0; done < opts.episodes;) {
      const n = Math.min(64, opts.episodes - done);
      const groups = new EnvGroups({
        tags: [
          {
            env,
            nGroups: n,
            config: { ...(opts.envConfig?.[env] ?? {}) },
            ...(opts.maxTurns?.[env] ? { maxTurns: opts.maxTurns[env] } : {}),
          },
        ],
        groupSize: 1,
        mode: 'train',
        seed,
      });
      const batch = await rollout({ groups, policy: demoPolicy(tokenizer, cfg, opts), tokenizer, agent: cfg });
      await groups.close();
      // indices over the whole demo set (a sample's `episode` indexes `episodes`)
      const offset = episodes.length;
      episodes.push(...batch.episodes.map((e) => ({ ...e, index: e.index + offset, group: e.group + offset })));
      samples.push(...batch.samples.map((s) => ({ ...s, episode: s.episode + offset, group: s.group + offset })));
      solved += batch.episodes.filter((e) => e.success).length;
      done += n;
      seed += n;
    }
    success[env] = solved / opts.episodes;
  }
  return { episodes, samples, success };
}
