// eval: the evaluation runner (validation rollouts of a policy on env tags, their metrics and trajectories), shared by
// `ragen eval` and the lab; and where a model spec points (`resolveModelDir`).
export { runEval, agentEvalConfig, POLICIES, type EvalOptions, type PolicyName } from './run-eval.js';
export { formatTable, type EvalReport } from './report.js';
export { resolveModelDir, fetchHubModel } from './model-dir.js';
