// Rubik's cube 2x2: registers the `rubikscube` id (RAGEN's tag: scramble depth 1, 20 moves) with an optimal solver.
import { registerEnv } from '../../env/index.js';
import { MOVE_NAMES, applyMove, solvedCube } from './cube.js';
import { RubiksCubeEnv, scrambleMoves, type RubiksCubeConfig, rubiksCubeSchema } from './rubiks-cube-env.js';
import { solveCube } from './solver.js';

export {
  RubiksCubeEnv,
  scrambleMoves,
  RUBIKS_CUBE_INSTRUCTION,
  type RubiksCubeConfig,
  rubiksCubeSchema,
} from './rubiks-cube-env.js';
export { MOVE_NAMES, MOVES, applyMove, isSolved, moveIndex, solvedCube } from './cube.js';
export { solveCube, cornerFixedGoal } from './solver.js';

/** The optimal (fewest quarter turns) solution of the seed's scramble, as move names. */
export function solveRubiksCube(config: RubiksCubeConfig, seed: number): string[] {
  const cube = solvedCube();
  const scratch = new Uint8Array(24);
  for (const m of scrambleMoves(config.scrambleDepth, seed)) applyMove(cube, m, scratch);
  const moves = solveCube(cube);
  if (moves === undefined)
    throw new Error(`rubikscube: no solution found for seed ${seed} (a bug: every scramble is solvable)`);
  return moves.map((m) => MOVE_NAMES[m]!);
}

registerEnv<RubiksCubeConfig>('rubikscube', {
  description: "Rubik's cube 2x2: undo a 1-move scramble (configurable) with U/D/L/R/F/B quarter turns.",
  schema: rubiksCubeSchema,
  defaults: { scrambleDepth: 1, maxSteps: 20 },
  create: (config) => new RubiksCubeEnv(config),
  maxActionsPerEpisode: 20,
  solve: solveRubiksCube,
});
