// Lean: registers RAGEN's `Lean` tag (theorem proving through a Kimina Lean server) with its config schema.
import { z } from 'zod';
import { registerEnv } from '../registry.js';
import { LeanEnv, leanTheorem, type LeanConfig } from './lean-env.js';
import { DEFAULT_IMPORTS } from './theorems.js';

export { LeanEnv, leanTheorem, LEAN_INSTRUCTION, type LeanConfig } from './lean-env.js';
export { KiminaClient, LeanServerError, type KiminaClientOptions, type ReplResponse, type CommandResponse, type LeanMessage } from './kimina-client.js';
export { judge, judgeFailure, formatMessages, type LeanVerdict } from './verdict.js';
export { generateTheorems, loadTheorems, splitFormalSections, DEFAULT_IMPORTS, type LeanTheorem } from './theorems.js';

/** Lean's config: see {@link LeanConfig} for each field's meaning. */
export const leanSchema = z.object({
  serverUrl: z.string().url().default('http://127.0.0.1:8000'),
  apiKey: z.string().default(''),
  requestTimeout: z.number().positive().default(30),
  httpTimeout: z.number().positive().default(60),
  maxRetries: z.number().int().min(1).max(20).default(3),
  dataPath: z.string().default(''),
  numTheorems: z.number().int().min(10).max(100_000).default(120),
  maxSteps: z.number().int().min(1).default(100),
  stepPenalty: z.number().default(-0.1),
  validStepReward: z.number().default(1),
  invalidStepReward: z.number().default(-1),
  successReward: z.number().default(10),
  timeoutPenalty: z.number().default(-1),
  maxStepsPenalty: z.number().default(-2),
  defaultImports: z.string().default(DEFAULT_IMPORTS),
  messageTruncateLimit: z.number().int().min(0).default(0),
  maxTacticChars: z.number().int().min(16).default(4096),
});

registerEnv<LeanConfig>('Lean', {
  description: 'Lean: prove a theorem one Lean 4 tactic at a time, checked by a Kimina Lean server (RAGEN rewards; generated miniF2F-style set or a miniF2F JSONL).',
  schema: leanSchema as any,
  create: (config) => new LeanEnv(config),
  requires: 'a Kimina Lean server (env config serverUrl, default http://127.0.0.1:8000)',
  maxActionsPerEpisode: 30,
  /** The generated theorem's known proof; none for loaded records. */
  solve: (config, seed, mode = 'train') => leanTheorem(config, seed, mode).proof?.slice(),
});
