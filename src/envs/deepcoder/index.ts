// DeepCoder: registers RAGEN's `DeepCoder` tag with its config schema and the reference-solution solver.
import { registerEnv } from '../../env/index.js';
import { DeepCoderEnv, deepCoderProblem, type DeepCoderConfig, deepCoderSchema } from './deepcoder-env.js';

export {
  DeepCoderEnv,
  deepCoderProblem,
  sharedSandbox,
  testPassed,
  DEEPCODER_INSTRUCTION,
  type DeepCoderConfig,
  deepCoderSchema,
} from './deepcoder-env.js';
export { assembleProgram, type AssembledProgram } from './answer.js';
export { FAMILIES, generateProblem, generateProblems, problemPool, renderProblem, isValProblem } from './problems.js';
export {
  TIERS,
  STYLES,
  pyRepr,
  pyStr,
  type Problem,
  type Family,
  type Tier,
  type Style,
  type TestCase,
} from './problem.js';

registerEnv<DeepCoderConfig>('DeepCoder', {
  description:
    'DeepCoder: write a Python 3 program for a generated problem (stdin or class Solution); reward = hidden tests passed / total, run in a bubblewrap sandbox (needs `bwrap`).',
  schema: deepCoderSchema,
  create: (config) => new DeepCoderEnv(config),
  maxActionsPerEpisode: 1,
  /** The problem's reference solution. */
  solve: (config, seed, mode = 'train') => [deepCoderProblem(config, seed, mode).reference],
});
