// The FrozenLake environment: a random lake with a guaranteed safe path, Gymnasium's slip rule, text observations.
// Follows RAGEN's FrozenLakeEnv (which wraps Gymnasium's FrozenLakeEnv); fixes its instruction text.
import { z } from 'zod';
import { ConfigError, ResetNeededError, Rng } from '../../util/index.js';
import {
  checkResetOptions,
  invalidInfo,
  matchActionName,
  type Env,
  type EnvInfo,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';
import {
  ACTION_NAMES,
  GOAL,
  GRID_LEGEND,
  HOLE,
  generateLake,
  move,
  parseLake,
  renderLake,
  shortestPath,
  type LakeMap,
} from './lake.js';

export const frozenLakeConfigSchema = z.object({
  /** Side of the square lake (RAGEN `size`). @default 4 */
  size: z.number().int().min(2).max(64).default(4),
  /** Probability that a cell is frozen rather than a hole (RAGEN `p`). @default 0.9 */
  p: z.number().gt(0).max(1).default(0.9),
  /**
   * Probability that a slippery move goes the intended way; the rest splits evenly between the two perpendicular ways.
   * @default 0.8
   */
  successRate: z.number().min(0).max(1).default(0.8),
  /** Whether moves may slip at all (false: always the intended way). @default true */
  isSlippery: z.boolean().default(true),
  /** 'grid' (one symbol per cell), 'coord' ((row, column) lists) or both. @default 'grid' */
  observationFormat: z.enum(['grid', 'coord', 'grid_coord']).default('grid'),
  /** Steps after which the episode is truncated. @default 100 */
  maxSteps: z.number().int().min(1).default(100),
});

export type FrozenLakeConfig = z.infer<typeof frozenLakeConfigSchema>;
export type FrozenLakeConfigInput = z.input<typeof frozenLakeConfigSchema>;

const RESET_OPTIONS = ['map'];

/**
 * FrozenLake: walk from the start to the goal across a frozen lake without falling into a hole.
 *
 * ## Description
 * A `size` x `size` lake of frozen ice and holes (each cell frozen with probability `p`), with a start
 * and a goal on distinct random cells and always a safe path between them.
 *
 * ## Action Space
 * "Left", "Down", "Right", "Up", matched case-insensitively. When slippery, the move goes the intended
 * way with probability `successRate` and each perpendicular way with probability (1 - successRate) / 2
 * (Gymnasium's rule). A move off the edge leaves the player in place (`actionIsEffective` false).
 * Any other text is invalid: reward 0, state unchanged (no slip drawn, no step counted), and
 * `info.reason` lists the valid names.
 *
 * ## Observation
 * 'grid': one line per row: P player, _ frozen ice, O hole, G goal, X player in a hole, √ player on the
 * goal. The start tile is drawn as ordinary ice (as in RAGEN); the player stands on it at reset.
 * 'coord': board size, goal, holes and player as (row, column), zero-indexed from the top left.
 * 'grid_coord': "Coordinates:" + coord + "Grid:" + grid.
 *
 * ## Starting State
 * The lake for `seed` (same seed, same lake), the player on the start. Slips are drawn from the same
 * seeded generator, so the same seed and the same actions give the same trajectory. A hand-built lake:
 * `reset({seed, options: {map: 'SFFF\nFHFH\nFFFH\nHFFG'}})` (Gymnasium's letters).
 *
 * ## Rewards
 * +1 on reaching the goal, 0 otherwise (invalid actions included).
 *
 * ## Episode End
 * Terminated on the goal or in a hole. Truncated after `maxSteps` steps. Stepping afterwards, or before
 * the first reset, throws `ResetNeededError`.
 *
 * ## Info
 * `success` (on the goal), `actionIsValid`, `actionIsEffective` (the player moved), `slipped` (the move
 * went perpendicular to the intended one).
 *
 * ## Arguments
 * See `FrozenLakeConfig`: size, p, successRate, isSlippery, observationFormat, maxSteps.
 */
export class FrozenLakeEnv implements Env {
  readonly actionNames: readonly string[] = ACTION_NAMES;
  readonly legend: string;
  readonly config: FrozenLakeConfig;

  private readonly rng = new Rng(0);
  private map: LakeMap | undefined;
  /** Observation per player cell for the current map, rendered on first use. */
  private observations: (string | undefined)[] = [];
  private player = 0;
  private steps = 0;
  private done = true;

  constructor(config: FrozenLakeConfigInput = {}) {
    const result = frozenLakeConfigSchema.safeParse(config);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      throw new ConfigError(`Bad FrozenLake config: \`${issue.path.join('.')}\`: ${issue.message}.`);
    }
    this.config = result.data;
    this.legend = this.config.observationFormat === 'coord' ? '' : GRID_LEGEND;
  }

  /** The task for the system prompt, with the real board size (of the current map once reset). */
  get instruction(): string {
    const rows = this.map?.rows ?? this.config.size;
    const cols = this.map?.cols ?? this.config.size;
    const { isSlippery, successRate } = this.config;
    const slip = isSlippery && successRate < 1;
    return (
      `You are crossing a frozen lake, a grid of ${rows} rows and ${cols} columns. Walk from where you stand to the goal ` +
      `without stepping into a hole. Your moves are Left, Down, Right and Up; a move off the edge leaves you in place. ` +
      (slip
        ? `The ice is slippery: a move goes the way you chose with probability ${successRate}, otherwise sideways (perpendicular to it). `
        : '') +
      `Positions are (row, column), from (0, 0) at the top left to (${rows - 1}, ${cols - 1}) at the bottom right. ` +
      `Answer with a sequence of moves, like <answer>Down || Right || Right</answer>.`
    );
  }

  /** A new env reset to a hand-built lake (Gymnasium's S/F/H/G letters). */
  static fromMap(map: string, config: FrozenLakeConfigInput = {}): FrozenLakeEnv {
    const env = new FrozenLakeEnv(config);
    env.reset({ seed: 0, options: { map } });
    return env;
  }

  reset({ seed, options }: ResetOptions): ResetResult {
    checkResetOptions('FrozenLake', options, RESET_OPTIONS);
    this.rng.seed(seed);
    if (options?.map !== undefined) {
      if (typeof options.map !== 'string')
        throw new ConfigError(`FrozenLake reset option \`map\` must be a string, got ${typeof options.map}.`);
      this.map = parseLake(options.map);
    } else {
      this.map = generateLake(this.rng, this.config.size, this.config.p);
    }
    this.observations = new Array(this.map.tiles.length);
    this.player = this.map.start;
    this.steps = 0;
    this.done = false;
    return {
      observation: this.render(),
      info: { success: false, actionIsValid: true, actionIsEffective: false, slipped: false },
    };
  }

  step(action: string): StepResult {
    if (this.done)
      throw new ResetNeededError(
        this.map
          ? 'FrozenLake: the episode has ended; call reset() before step().'
          : 'FrozenLake: call reset() before the first step().',
      );
    let a = -1;
    for (let i = 0; i < 4; i++) if (action === ACTION_NAMES[i]) a = i;
    if (a < 0) a = typeof action === 'string' ? matchActionName(ACTION_NAMES, action) : -1;
    if (a < 0) {
      const info = invalidInfo(`Unknown action ${preview(action)}; valid actions: ${ACTION_NAMES.join(', ')}.`, {
        slipped: false,
      });
      return { observation: this.render(), reward: 0, terminated: false, truncated: false, info };
    }

    let dir = a;
    const { isSlippery, successRate } = this.config;
    if (isSlippery && successRate < 1) {
      // Gymnasium's order: (a - 1) mod 4, a, (a + 1) mod 4 with (1 - s) / 2, s, (1 - s) / 2.
      const u = this.rng.random();
      const side = (1 - successRate) / 2;
      dir = u < side ? (a + 3) & 3 : u < side + successRate ? a : (a + 1) & 3;
    }
    const map = this.map!;
    const from = this.player;
    this.player = move(map, from, dir);
    this.steps++;
    const tile = map.tiles[this.player];
    const success = tile === GOAL;
    const terminated = success || tile === HOLE;
    const truncated = !terminated && this.steps >= this.config.maxSteps;
    this.done = terminated || truncated;
    const info: EnvInfo = { success, actionIsValid: true, actionIsEffective: this.player !== from, slipped: dir !== a };
    return { observation: this.render(), reward: success ? 1 : 0, terminated, truncated, info };
  }

  render(): string {
    if (!this.map) throw new ResetNeededError('FrozenLake: call reset() before render().');
    return (this.observations[this.player] ??= renderLake(this.map, this.player, this.config.observationFormat));
  }

  close(): void {}

  /** The current lake (immutable) and the player's cell (row * cols + column). */
  state(): { map: LakeMap; player: number } {
    if (!this.map) throw new ResetNeededError('FrozenLake: call reset() before state().');
    return { map: this.map, player: this.player };
  }

  /**
   * The shortest safe path from the player to the goal (undefined if none). Optimal when moves do not
   * slip (successRate 1 or isSlippery false); on slippery ice it is the plan, not a guarantee.
   */
  solution(): string[] | undefined {
    const { map, player } = this.state();
    return shortestPath(map, player);
  }
}

function preview(action: unknown): string {
  if (typeof action !== 'string') return `of type ${typeof action}`;
  return action.length > 40
    ? `${JSON.stringify(action.slice(0, 40))}... (${action.length} characters)`
    : JSON.stringify(action);
}
