// DeepCoder: registers RAGEN's `DeepCoder` tag with its config schema and the reference-solution solver.
import { z } from 'zod';
import { registerEnv } from '../registry.js';
import { DeepCoderEnv, deepCoderProblem, type DeepCoderConfig } from './deepcoder-env.js';
import { STYLES, TIERS } from './problem.js';

export { DeepCoderEnv, deepCoderProblem, sharedSandbox, testPassed, DEEPCODER_INSTRUCTION, type DeepCoderConfig } from './deepcoder-env.js';
export { assembleProgram, type AssembledProgram } from './answer.js';
export { FAMILIES, generateProblem, generateProblems, problemPool, renderProblem, isValProblem } from './problems.js';
export { TIERS, STYLES, pyRepr, pyStr, type Problem, type Family, type Tier, type Style, type TestCase } from './problem.js';

/** DeepCoder's config: see {@link DeepCoderConfig} for each field's meaning. */
export const deepCoderSchema = z.object({
  numProblems: z.number().int().min(20).max(100_000).default(400),
  tiers: z.array(z.enum(TIERS)).min(1).default([...TIERS]),
  styles: z.array(z.enum(STYLES)).min(1).default([...STYLES]),
  maxSteps: z.number().int().min(1).default(1),
  sandbox: z.enum(['bwrap', 'none']).default('bwrap'),
  wallSeconds: z.number().positive().max(600).default(10),
  cpuSeconds: z.number().positive().max(600).default(5),
  perTestSeconds: z.number().positive().max(600).default(2),
  memoryMB: z.number().int().min(64).max(65_536).default(512),
  outputBytes: z.number().int().min(1024).max(1 << 30).default(1 << 20),
  maxParallel: z.number().int().min(1).max(256).default(2),
});

registerEnv<DeepCoderConfig>('DeepCoder', {
  description: 'DeepCoder: write a Python 3 program for a generated problem (stdin or class Solution); reward = hidden tests passed / total, run in a bubblewrap sandbox (needs `bwrap`).',
  schema: deepCoderSchema as any,
  create: (config) => new DeepCoderEnv(config),
  maxActionsPerEpisode: 1,
  /** The problem's reference solution. */
  solve: (config, seed, mode = 'train') => [deepCoderProblem(config, seed, mode).reference],
});
