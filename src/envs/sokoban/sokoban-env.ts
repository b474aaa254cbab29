// The Sokoban environment: flat typed-array state, no allocation in the state update, cached rendering.
// Follows RAGEN's SokobanEnv (gym-sokoban rules and rewards) and Gymnasium's env semantics.
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
import { parseSokobanConfig, type SokobanConfig, type SokobanConfigInput } from './config.js';
import { SokobanGenerator } from './generate.js';
import { SokobanRenderer } from './render.js';
import {
  BOX,
  TARGET,
  WALL,
  parseGrid,
  vocabLegend,
  vocabSymbols,
  type SokobanLayout,
  type SokobanRoom,
} from './room.js';
import { ACTION_NAMES, directionDeltas } from './search.js';
import { solveSokoban } from './solve.js';

const STEP_PENALTY = -0.1;
const BOX_ON_TARGET = 1;
const SOLVED_BONUS = 10;
const RESET_OPTIONS = ['grid'];

const INSTRUCTION =
  'You are playing Sokoban. You are the player, and you must push every box onto a target. ' +
  'To push a box, stand right next to it and move toward it: it slides one cell in that direction. ' +
  'Boxes cannot be pulled, and a box cannot be pushed into a wall or into another box. ' +
  'Your moves are Up, Down, Left and Right. Answer with a sequence of moves, like <answer>Right || Right || Up</answer>.';

/**
 * Sokoban: push every box onto a target.
 *
 * ## Description
 * A room of walls and floor with as many targets as boxes. Rooms come from a seeded reverse-play
 * generator (see `SokobanGenerator`): each one is solvable and not already solved.
 *
 * ## Action Space
 * "Up", "Down", "Left", "Right", matched case-insensitively. Moving into a box pushes it one cell when
 * the cell beyond is free. Moving into a wall, or pushing a box into a wall or another box, changes
 * nothing (`actionIsEffective` false) but is a valid action and counts as a step. Any other text is
 * invalid: reward 0, state unchanged, not counted as a step, `info.reason` lists the valid names.
 *
 * ## Observation
 * `observationFormat` 'grid': one line per row, one symbol per cell (`gridVocab`; `legend` names them).
 * 'coord': board size, targets, boxes, boxes on target and the player as (row, column) lists, zero-indexed
 * from the top left; walls are not listed (as in RAGEN). 'grid_coord': "Coordinates:" + coord + "Grid:" + grid.
 * Every result carries its observation as a plain string, rendered once per state change (a no-op
 * shows the previous string again). Rendering is cheap because `SokobanRenderer` caches each room's
 * rows; a lazily rendered getter was measured 40x slower to allocate than a plain object in V8, and
 * spreading a result (`{...r}`, as wrappers do) must keep the observation.
 *
 * ## Starting State
 * A generated room for `seed` (same seed, same room), or a hand-built one: `reset({seed, options: {grid}})`
 * with a grid string in the env's vocabulary (`SokobanEnv.fromGrid` for short).
 *
 * ## Rewards
 * -0.1 per step; +1 when a push puts a box on a target, -1 when it takes one off; +10 when every box is
 * on a target. Invalid actions: 0.
 *
 * ## Episode End
 * Terminated when every box is on a target. Truncated after `maxSteps` steps. Stepping afterwards, or
 * before the first reset, throws `ResetNeededError`.
 *
 * ## Info
 * `success` (all boxes on targets), `actionIsValid`, `actionIsEffective` (the player moved),
 * `boxesOnTarget` (a number).
 *
 * ## Arguments
 * See `SokobanConfig`: dimRoom, numBoxes, maxSteps, searchDepth, observationFormat, gridVocab.
 */
export class SokobanEnv implements Env {
  readonly instruction = INSTRUCTION;
  readonly legend: string;
  readonly actionNames: readonly string[] = ACTION_NAMES;
  readonly config: SokobanConfig;

  private readonly renderer: SokobanRenderer;
  private readonly rng = new Rng(0);
  private readonly generator = new SokobanGenerator();
  private layout: SokobanLayout | undefined;
  /** statics | BOX per padded cell. */
  private cells = new Uint8Array(0);
  private player = 0;
  /** Padded indices of the boxes (in no particular order). */
  private boxes = new Int32Array(0);
  private delta = new Int32Array(4);
  private boxesOnTarget = 0;
  private steps = 0;
  private done = true;
  /** The observation of the current state. */
  private observation = '';

  constructor(config: SokobanConfigInput = {}) {
    this.config = parseSokobanConfig(config);
    this.renderer = new SokobanRenderer(this.config.observationFormat, vocabSymbols(this.config.gridVocab));
    this.legend = this.config.observationFormat === 'coord' ? '' : vocabLegend(this.config.gridVocab);
  }

  /** A new env reset to a hand-built room (a grid string in `config.gridVocab`, default # _ O √ X P S). */
  static fromGrid(grid: string, config: SokobanConfigInput = {}): SokobanEnv {
    const env = new SokobanEnv(config);
    env.reset({ seed: 0, options: { grid } });
    return env;
  }

  reset({ seed, options }: ResetOptions): ResetResult {
    checkResetOptions('Sokoban', options, RESET_OPTIONS);
    let room: SokobanRoom;
    if (options?.grid !== undefined) {
      if (typeof options.grid !== 'string')
        throw new ConfigError(`Sokoban reset option \`grid\` must be a string, got ${typeof options.grid}.`);
      room = parseGrid(options.grid, this.config.gridVocab);
    } else {
      this.rng.seed(seed);
      const [rows, cols] = this.config.dimRoom;
      room = this.generator.generate(this.rng, {
        rows,
        cols,
        numBoxes: this.config.numBoxes,
        searchDepth: this.config.searchDepth,
      });
    }
    this.load(room);
    return { observation: this.observation, info: this.info(true, false) };
  }

  step(action: string): StepResult {
    if (this.done) {
      throw new ResetNeededError(
        this.layout
          ? 'Sokoban: the episode has ended; call reset() before step().'
          : 'Sokoban: call reset() before the first step().',
      );
    }
    // Exact names first: a string comparison, no allocation; then the case-insensitive match.
    let a = -1;
    for (let i = 0; i < 4; i++) if (action === ACTION_NAMES[i]) a = i;
    if (a < 0) a = typeof action === 'string' ? matchActionName(ACTION_NAMES, action) : -1;
    if (a < 0)
      return this.result(
        0,
        false,
        false,
        invalidInfo(`Unknown action ${preview(action)}; valid actions: ${ACTION_NAMES.join(', ')}.`, {
          boxesOnTarget: this.boxesOnTarget,
        }),
      );

    const cells = this.cells;
    const d = this.delta[a]!;
    const from = this.player;
    const to = from + d;
    const there = cells[to]!;
    let effective = false;
    let reward = STEP_PENALTY;
    if (there & BOX) {
      const beyond = to + d;
      const next = cells[beyond]!;
      if (!(next & (WALL | BOX))) {
        cells[to] = there & ~BOX;
        cells[beyond] = next | BOX;
        const boxes = this.boxes;
        for (let b = 0; b < boxes.length; b++) if (boxes[b] === to) boxes[b] = beyond;
        const change = (next & TARGET ? 1 : 0) - (there & TARGET ? 1 : 0);
        this.boxesOnTarget += change;
        reward += change * BOX_ON_TARGET;
        this.player = to;
        effective = true;
      }
    } else if (!(there & WALL)) {
      this.player = to;
      effective = true;
    }
    this.steps++;
    const success = this.boxesOnTarget === this.boxes.length;
    if (success) reward += SOLVED_BONUS;
    const truncated = !success && this.steps >= this.config.maxSteps;
    this.done = success || truncated;
    return this.result(reward, success, truncated, {
      success,
      actionIsValid: true,
      actionIsEffective: effective,
      boxesOnTarget: this.boxesOnTarget,
    });
  }

  render(): string {
    if (!this.layout) throw new ResetNeededError('Sokoban: call reset() before render().');
    return this.observation;
  }

  close(): void {}

  /** A copy of the current room (layout shared: it is immutable). */
  room(): SokobanRoom {
    if (!this.layout) throw new ResetNeededError('Sokoban: call reset() before room().');
    return { layout: this.layout, player: this.player, boxes: Int32Array.from(this.boxes) };
  }

  /** The optimal action sequence from the current state (`[]` if solved, undefined if unsolvable). */
  solution(): string[] | undefined {
    return solveSokoban(this.room());
  }

  private load(room: SokobanRoom): void {
    const { layout } = room;
    this.layout = layout;
    this.cells = Uint8Array.from(layout.statics);
    this.boxes = Int32Array.from(room.boxes);
    this.boxesOnTarget = 0;
    for (let b = 0; b < this.boxes.length; b++) {
      this.cells[this.boxes[b]!]! |= BOX;
      if (layout.statics[this.boxes[b]!]! & TARGET) this.boxesOnTarget++;
    }
    this.player = room.player;
    this.delta = directionDeltas(layout.width);
    this.steps = 0;
    this.done = false;
    this.observation = this.renderer.render(layout, this.player, this.boxes);
  }

  /** Renders only when the state changed: a no-op or an invalid action shows the last observation again. */
  private result(reward: number, terminated: boolean, truncated: boolean, info: EnvInfo): StepResult {
    if (info.actionIsEffective) this.observation = this.renderer.render(this.layout!, this.player, this.boxes);
    return { observation: this.observation, reward, terminated, truncated, info };
  }

  private info(actionIsValid: boolean, actionIsEffective: boolean): EnvInfo {
    return {
      success: this.boxesOnTarget === this.boxes.length,
      actionIsValid,
      actionIsEffective,
      boxesOnTarget: this.boxesOnTarget,
    };
  }
}

/** A short, safe quote of (possibly huge or hostile) action text for error reasons. */
export function preview(action: unknown): string {
  if (typeof action !== 'string') return `of type ${typeof action}`;
  return action.length > 40
    ? `${JSON.stringify(action.slice(0, 40))}... (${action.length} characters)`
    : JSON.stringify(action);
}
