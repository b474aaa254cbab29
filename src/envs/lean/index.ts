// Lean: registers RAGEN's `Lean` tag (theorem proving through a Kimina Lean server) with its config schema.
import { registerEnv } from '../../env/index.js';
import { LeanEnv, leanTheorem, type LeanConfig, leanSchema } from './lean-env.js';

export { LeanEnv, leanTheorem, LEAN_INSTRUCTION, type LeanConfig, leanSchema } from './lean-env.js';
export {
  KiminaClient,
  LeanServerError,
  type KiminaClientOptions,
  type ReplResponse,
  type CommandResponse,
  type LeanMessage,
} from './kimina-client.js';
export { judge, judgeFailure, formatMessages, type LeanVerdict } from './verdict.js';
export { generateTheorems, loadTheorems, splitFormalSections, DEFAULT_IMPORTS, type LeanTheorem } from './theorems.js';

registerEnv<LeanConfig>('Lean', {
  description:
    'Lean: prove a theorem one Lean 4 tactic at a time, checked by a Kimina Lean server (RAGEN rewards; generated miniF2F-style set or a miniF2F JSONL).',
  schema: leanSchema,
  create: (config) => new LeanEnv(config),
  requires: 'a Kimina Lean server (env config serverUrl, default http://127.0.0.1:8000)',
  maxActionsPerEpisode: 30,
  /** The generated theorem's known proof; none for loaded records. */
  solve: (config, seed, mode = 'train') => leanTheorem(config, seed, mode).proof?.slice(),
});
