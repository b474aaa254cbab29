// The 2048 environment: slide tiles Up/Right/Down/Left, merge equal ones, reach the target tile.
// Follows RAGEN's ragen/env/game_2048 (rewards, spawning, render), with the invalid-move penalty kept.
import { z } from 'zod';
import { ResetNeededError, Rng } from '../../util/index.js';
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
import { Board2048, DIRECTIONS, tileExponent } from './board.js';

/** 2048's configuration (RAGEN's Game2048EnvConfig; keys in camelCase). */
export const game2048Schema = z.object({
  /** Side of the board. @default 4 */
  size: z.number().int().min(2).max(8).default(4),
  /** Probability that a new tile is a 2 (else a 4). RAGEN `two_prob`. @default 0.9 */
  twoProb: z.number().min(0).max(1).default(0.9),
  /** Reward 0.1 * log2(merge sum + 1) instead of the merge sum. RAGEN `use_log_reward`. @default true */
  useLogReward: z.boolean().default(true),
  /** Reward of a move that changes nothing (applied with or without the log reward). @default -0.1 */
  invalidMovePenalty: z.number().default(-0.1),
  /** Tile whose presence counts as success. @default 2048 */
  targetTile: z.number().int().min(4).default(2048),
});

export type Game2048Config = z.infer<typeof game2048Schema>;

/** The task text for a board of side `size` (RAGEN's, which always said 4x4). */
export function game2048Instruction(size = 4): string {
  return (
    `You are playing the 2048 game on a ${size}x${size} grid. Merge equal tiles by sliding Up, Right, Down, or Left.\n` +
    'If a move is invalid (no tiles move), a small penalty is applied. Respond with a single action.\n' +
    'Example: <answer>Up</answer>'
  );
}

/** The task text of the default 4x4 board. */
export const GAME_2048_INSTRUCTION = game2048Instruction(4);

/**
 * 2048 (multi turn).
 *
 * ## Description
 * Slide all tiles in one direction; two equal tiles that meet merge into their sum (once per move). After
 * every move that changes the board a new tile appears. Reach the target tile (2048).
 *
 * ## Action Space
 * Discrete, by name: `Up`, `Right`, `Down`, `Left` (case-insensitive). Other text is invalid (reward 0).
 * A direction in which no tile moves is invalid too (as in RAGEN) and costs `invalidMovePenalty`.
 *
 * ## Observation
 * `Current 2048 Grid:`, one `Row i: [a, b, c, d]` line per row (0 = empty), the valid actions, the goal
 * and the score.
 *
 * ## Starting State
 * An empty board with two tiles spawned; each spawn picks a uniform empty cell, 2 with probability
 * `twoProb`, else 4. All randomness comes from the env's Rng, seeded at reset.
 *
 * ## Rewards
 * The merge sum of the move, or `0.1 * log2(sum + 1)` with `useLogReward` (0 for a move without merges).
 * A move that changes nothing gets `invalidMovePenalty` (-0.1) in both modes: RAGEN zeroed it in log mode.
 *
 * ## Episode End
 * Terminated when no move can change the board (full, no equal neighbours). No truncation in the env
 * (RAGEN's tag caps episodes at 700 actions through the manager).
 *
 * ## Info
 * `success` (the target tile is on the board: RAGEN only checked at game over, so a capped episode that
 * reached 2048 counted as a failure), `actionIsValid`, `actionIsEffective`, `score` (sum of all merges),
 * `rawReward` (this move's merge sum or the penalty) and `maxTile`.
 *
 * ## Arguments
 * See {@link Game2048Config}.
 */
export class Game2048Env implements Env {
  readonly instruction: string;
  readonly legend = 'Numbers are tile values; 0 is an empty cell. Row 1 is the top row.';
  readonly actionNames = DIRECTIONS;
  private readonly board: Board2048;
  private readonly rng = new Rng(0);
  private started = false;
  private done = false;
  private score = 0;
  private observation = '';

  constructor(readonly config: Game2048Config) {
    this.board = new Board2048(config.size);
    this.instruction = game2048Instruction(config.size);
  }

  /** `options.board` (rows of tile values, 0 = empty) starts from a hand-built board instead of two spawns. */
  reset({ seed, options }: ResetOptions): ResetResult {
    checkResetOptions('game_2048', options, ['board']);
    this.rng.seed(seed);
    this.board.cells.fill(0);
    if (options?.board !== undefined) this.load(options.board);
    else {
      this.board.spawn(this.rng, this.config.twoProb);
      this.board.spawn(this.rng, this.config.twoProb);
    }
    this.started = true;
    this.done = this.board.isGameOver();
    this.score = 0;
    this.observation = this.draw();
    return { observation: this.observation, info: this.info(true, false, 0) };
  }

  step(action: string): StepResult {
    if (!this.started) throw new ResetNeededError('game_2048.step() called before reset(); call reset({seed}) first.');
    if (this.done)
      throw new ResetNeededError(
        'game_2048.step() called after the game ended; call reset({seed}) to start a new one.',
      );
    const d = matchActionName(DIRECTIONS, action);
    if (d < 0) {
      const shown = action.length > 40 ? `${JSON.stringify(action.slice(0, 40))}...` : JSON.stringify(action);
      return this.result(0, false, {
        ...invalidInfo(`${shown} is not an action; answer one of Up, Right, Down, Left`),
        ...this.metrics(0),
      });
    }
    const merged = this.board.move(d);
    if (merged < 0) {
      const penalty = this.config.invalidMovePenalty;
      return this.result(penalty, false, {
        ...invalidInfo(`${DIRECTIONS[d]} moves no tile; valid now: ${this.validActions().join(', ')}`),
        ...this.metrics(penalty),
      });
    }
    this.board.spawn(this.rng, this.config.twoProb);
    this.score += merged;
    const reward = this.config.useLogReward ? (merged > 0 ? 0.1 * Math.log2(merged + 1) : 0) : merged;
    this.done = this.board.isGameOver();
    this.observation = this.draw();
    return this.result(reward, this.done, this.info(true, true, merged));
  }

  render(): string {
    return this.observation;
  }

  close(): void {}

  private result(reward: number, terminated: boolean, info: EnvInfo): StepResult {
    return { observation: this.observation, reward, terminated, truncated: false, info };
  }

  private metrics(rawReward: number): { score: number; rawReward: number; maxTile: number } {
    return { score: this.score, rawReward, maxTile: this.board.maxTile() };
  }

  private info(valid: boolean, effective: boolean, rawReward: number): EnvInfo {
    const m = this.metrics(rawReward);
    return { success: m.maxTile >= this.config.targetTile, actionIsValid: valid, actionIsEffective: effective, ...m };
  }

  private validActions(): string[] {
    const out: string[] = [];
    for (let d = 0; d < 4; d++) if (this.board.canMove(d)) out.push(DIRECTIONS[d]!);
    return out;
  }

  private draw(): string {
    const s = this.config.size;
    let text = 'Current 2048 Grid:';
    for (let r = 0; r < s; r++) {
      let row = '';
      for (let c = 0; c < s; c++) row += (c ? ', ' : '') + this.board.value(r * s + c);
      text += `\nRow ${r + 1}: [${row}]`;
    }
    if (this.done) {
      text += `\n\nGame over: no move changes the board. Max tile: ${this.board.maxTile()}.`;
    } else {
      const valid = this.validActions();
      text += `\n\nValid Actions: ${valid.length ? valid.join(', ') : 'None'}.`;
    }
    text += `\nGoal: Merge same numbers to reach ${this.config.targetTile}.\nCurrent Score: ${this.score}`;
    if (!this.done) text += '\nWhat is your next move?';
    return text;
  }

  private load(spec: unknown): void {
    const s = this.config.size;
    const rows = spec as unknown[];
    const ok =
      Array.isArray(rows) &&
      rows.length === s &&
      rows.every((r) => Array.isArray(r) && r.length === s && r.every((v) => tileExponent(v) >= 0));
    if (!ok)
      throw new TypeError(
        `game_2048 reset options.board must be ${s} rows of ${s} tile values (0 or powers of two >= 2), got ${JSON.stringify(spec)}`,
      );
    (rows as number[][]).forEach((row, r) => row.forEach((v, c) => (this.board.cells[r * s + c] = tileExponent(v))));
  }
}
