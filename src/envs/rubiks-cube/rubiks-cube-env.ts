// The 2x2 Rubik's cube environment: undo a seeded scramble with quarter turns in Singmaster notation.
// Follows RAGEN's ragen/env/rubikscube (faces, colours, actions, reward, step limit, render).
import { z } from 'zod';
import { ResetNeededError, Rng } from '../../util/index.js';
import {
  checkResetOptions,
  invalidInfo,
  type Env,
  type EnvInfo,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../../env/index.js';
import {
  COLORS,
  FACE_NAMES,
  FACES,
  MOVE_NAMES,
  applyMove,
  inverseMove,
  isSolved,
  moveIndex,
  solvedCube,
} from './cube.js';

/** The cube's configuration (RAGEN's RubiksCube2x2Config; keys in camelCase). */
export const rubiksCubeSchema = z.object({
  /** Random quarter turns applied to a solved cube at reset. RAGEN `scramble_depth`. @default 5 */
  scrambleDepth: z.number().int().min(1).max(1000).default(5),
  /** Valid actions after which the episode is truncated. RAGEN `max_steps`. @default 20 */
  maxSteps: z.number().int().min(1).default(20),
});

export type RubiksCubeConfig = z.infer<typeof rubiksCubeSchema>;

export const RUBIKS_CUBE_INSTRUCTION =
  "You are solving a 2x2 Rubik's Cube (Pocket Cube). The goal is to restore the cube so that each of the faces consists of a single, unique color.\n" +
  "Available actions use standard Singmaster notation for face rotations: U, U', D, D', L, L', R, R', F, F', B, B'.\n" +
  '- Faces: U (Up), D (Down), L (Left), R (Right), F (Front), B (Back).\n' +
  "- Modifiers: A letter alone means 90° clockwise (e.g., 'R'). A letter with prime (') means 90° counter-clockwise (e.g., \"R'\").\n" +
  'Respond with a sequence of actions separated by "||".\n' +
  'Example: <answer>U</answer>';

export const RUBIKS_CUBE_LEGEND =
  'Colours: W white, O orange, G green, R red, B blue, Y yellow. Each face is listed as [top-left, top-right] ' +
  '[bottom-left, bottom-right] as seen looking at it: the side faces with Up on top, Up from above with Back on top, ' +
  'Down from below with Front on top. Clockwise means clockwise as seen looking at that face.';

/**
 * The scramble for a seed: `depth` moves drawn uniformly from the 12, never undoing the previous move
 * and never turning one face three times in a row (RAGEN could draw U then U', leaving a solved cube);
 * a scramble that still ends solved is drawn again.
 */
export function scrambleMoves(depth: number, seed: number): number[] {
  const rng = new Rng(seed);
  const cube = solvedCube();
  const scratch = new Uint8Array(24);
  for (;;) {
    const moves: number[] = [];
    while (moves.length < depth) {
      const m = rng.int(12);
      const k = moves.length;
      if (k >= 1 && m === inverseMove(moves[k - 1]!)) continue;
      if (k >= 2 && m === moves[k - 1] && m === moves[k - 2]) continue;
      moves.push(m);
    }
    cube.set(solvedCube());
    for (const m of moves) applyMove(cube, m, scratch);
    if (depth === 0 || !isSolved(cube)) return moves;
  }
}

/**
 * Rubik's cube 2x2 (multi turn).
 *
 * ## Description
 * A pocket cube scrambled by `scrambleDepth` random quarter turns; restore it so each face has one colour.
 *
 * ## Action Space
 * Discrete, by name: `U, U', D, D', L, L', R, R', F, F', B, B'` (RAGEN's ids 1..12 in that order). Names
 * match case-insensitively; ’ and ` count as '. Other text is invalid: reward 0, cube unchanged.
 *
 * ## Observation
 * A step counter, one line per face (`Up (U):    [W, W] [W, W]`), then the available actions.
 *
 * ## Starting State
 * A solved cube (U white, L orange, F green, R red, B blue, D yellow) after the seed's scramble
 * (see {@link scrambleMoves}); never already solved.
 *
 * ## Rewards
 * +1 on the move that solves the cube (any whole-cube orientation counts), else 0.
 *
 * ## Episode End
 * Terminated when solved. Truncated after `maxSteps` valid moves, without penalty.
 *
 * ## Info
 * `success` (solved), `actionIsValid`, `actionIsEffective` (every valid move changes the cube), `reason`,
 * and `steps`.
 *
 * ## Arguments
 * See {@link RubiksCubeConfig}.
 */
export class RubiksCubeEnv implements Env {
  readonly instruction = RUBIKS_CUBE_INSTRUCTION;
  readonly legend = RUBIKS_CUBE_LEGEND;
  readonly actionNames = MOVE_NAMES;
  private readonly cube = new Uint8Array(24);
  private readonly scratch = new Uint8Array(24);
  private started = false;
  private done = false;
  private steps = 0;
  private observation = '';

  constructor(readonly config: RubiksCubeConfig) {}

  /** `options.scramble` (move names) sets the scramble instead of the seed's. */
  reset({ seed, options }: ResetOptions): ResetResult {
    checkResetOptions('rubikscube', options, ['scramble']);
    let moves: number[];
    if (options?.scramble !== undefined) {
      const names = options.scramble;
      moves = Array.isArray(names) ? names.map((n) => (typeof n === 'string' ? moveIndex(n) : -1)) : [-1];
      if (moves.includes(-1))
        throw new TypeError(
          `rubikscube reset options.scramble must be move names (${MOVE_NAMES.join(', ')}), got ${JSON.stringify(names)}`,
        );
    } else {
      moves = scrambleMoves(this.config.scrambleDepth, seed);
    }
    this.cube.set(solvedCube());
    for (const m of moves) applyMove(this.cube, m, this.scratch);
    this.started = true;
    this.steps = 0;
    this.done = isSolved(this.cube);
    this.observation = this.draw();
    return { observation: this.observation, info: this.info(this.done, true, false) };
  }

  step(action: string): StepResult {
    if (!this.started) throw new ResetNeededError('rubikscube.step() called before reset(); call reset({seed}) first.');
    if (this.done)
      throw new ResetNeededError(
        'rubikscube.step() called after the episode ended; call reset({seed}) to start a new one.',
      );
    const m = moveIndex(action);
    if (m < 0) {
      const shown = action.length > 40 ? `${JSON.stringify(action.slice(0, 40))}...` : JSON.stringify(action);
      const info = {
        ...invalidInfo(`${shown} is not a move; answer one of ${MOVE_NAMES.join(', ')}`),
        steps: this.steps,
      };
      return { observation: this.observation, reward: 0, terminated: false, truncated: false, info };
    }
    applyMove(this.cube, m, this.scratch);
    this.steps++;
    const solved = isSolved(this.cube);
    const truncated = !solved && this.steps >= this.config.maxSteps;
    this.done = solved || truncated;
    this.observation = this.draw();
    return {
      observation: this.observation,
      reward: solved ? 1 : 0,
      terminated: solved,
      truncated,
      info: this.info(solved, true, true),
    };
  }

  render(): string {
    return this.observation;
  }

  close(): void {}

  private info(success: boolean, valid: boolean, effective: boolean): EnvInfo {
    return { success, actionIsValid: valid, actionIsEffective: effective, steps: this.steps };
  }

  private draw(): string {
    const c = this.cube;
    let text = `Rubik's Cube 2x2. Step ${this.steps}/${this.config.maxSteps}.`;
    for (let f = 0; f < 6; f++) {
      const label = `${FACE_NAMES[f]} (${FACES[f]}):`.padEnd(11);
      const b = f * 4;
      text += `\n${label}[${COLORS[c[b]!]}, ${COLORS[c[b + 1]!]}] [${COLORS[c[b + 2]!]}, ${COLORS[c[b + 3]!]}]`;
    }
    if (isSolved(c)) text += '\nSolved: every face has a single colour.';
    else if (this.done) text += '\nOut of moves.';
    else text += `\nAvailable actions: ${MOVE_NAMES.join(', ')}`;
    return text;
  }
}
