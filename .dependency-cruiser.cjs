// The import rules of the library's modules (docs/architecture.md draws them), checked by dependency-cruiser
// (`npx depcruise src dashboard-ui/src` prints violations; src/layering.test.ts runs it in `npm test`). Type-only
// imports count: a circle of types is a circle.

/** Each library folder under src/ and the folders it may import (besides itself), lower layers first. */
const LAYERS = {
  util: [],
  tensor: ['util'],
  tokenizer: ['util'],
  sandbox: ['util'],
  // The env contract (core, registry, wrappers, checkEnv) and its wire transport (env/remote).
  env: ['util'],
  // The built-in environments, one folder each; sandbox for DeepCoder's programs, tokenizer for Qwen's tool format
  // (the MCP env shows tools and reads calls as the gateway does).
  envs: ['util', 'env', 'sandbox', 'tokenizer'],
  algo: ['util'],
  metrics: ['util'],
  model: ['util', 'tensor'],
  engine: ['util', 'tensor', 'model', 'tokenizer'],
  agent: ['util', 'env', 'tokenizer', 'engine'],
  // engine for the defaults of its settings (model.torch.tokenBudget), written once there; model to check that
  // model.path names a directory, a shipped model or a Hub id.
  config: ['util', 'env', 'algo', 'tokenizer', 'model', 'engine', 'agent'],
  // gateway for agent programs as a rollout source (env.train.N.agent).
  train: ['util', 'tensor', 'model', 'tokenizer', 'engine', 'env', 'agent', 'algo', 'metrics', 'config', 'gateway'],
  // The evaluation runner: validation rollouts (train's validationBatch) of a policy from a config, a run or a model.
  eval: ['util', 'env', 'agent', 'tokenizer', 'config', 'model', 'engine', 'train'],
  serve: ['util', 'tensor', 'model', 'tokenizer', 'engine'],
  // serve for its OpenAI server (the gateway is that server in its episode mode: prefix, transform, onCall);
  // agent for the TrainingSample its calls become.
  gateway: ['util', 'tokenizer', 'engine', 'serve', 'agent'],
  // agent for the type of a rollouts/step-N.jsonl line (EpisodeRecord), written by the agent's trajectories.ts.
  dashboard: ['util', 'metrics', 'agent'],
};
// Tests and their helpers (`testing.ts`, `*-testing.ts`) may reach across layers; shipped code may not.
const TESTS = '(\\.test\\.ts|/testing\\.ts|-testing\\.ts)$';

const layerRules = Object.entries(LAYERS).map(([folder, allowed]) => ({
  name: `layer-${folder}`,
  comment: `src/${folder} imports only ${allowed.length ? allowed.map((f) => `src/${f}`).join(', ') : 'nothing else in src/'} (docs/architecture.md)`,
  severity: 'error',
  from: { path: `^src/${folder}/`, pathNot: TESTS },
  to: { path: `^src/(?!(?:${[folder, ...allowed].join('|')})/)[^/]+/` },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Import circles tangle load order and layering; move the shared type down to the lower module.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'library-not-lab',
      comment: 'The library never imports the lab (src/bench): it measures the library from outside.',
      severity: 'error',
      from: { path: `^src/(?:${Object.keys(LAYERS).join('|')})/|^src/index\\.ts$`, pathNot: TESTS },
      to: { path: '^src/bench/' },
    },
    {
      name: 'cli-lab-entry-only',
      comment:
        "The CLI registers the lab's commands through src/bench/commands/index.ts and imports nothing else of it.",
      severity: 'error',
      from: { path: '^src/cli/', pathNot: TESTS },
      to: { path: '^src/bench/', pathNot: '^src/bench/commands/index\\.ts$' },
    },
    {
      name: 'lab-not-cli',
      comment:
        "The lab (src/bench) takes what it shares with the CLI from the library (src/eval, src/util's option values): the CLI -> lab edge is the only one between them.",
      severity: 'error',
      from: { path: '^src/bench/', pathNot: TESTS },
      to: { path: '^src/cli/' },
    },
    {
      name: 'through-index',
      comment:
        "Another folder's modules are imported through its index.ts, its public surface (STYLE.md); env/remote, the env transport kept out of env's index (Node only), has its own, and a folder's test helpers (testing.ts) are its surface for tests and the lab.",
      severity: 'error',
      from: { path: '^src/([^/]+)/', pathNot: TESTS },
      to: {
        path: `^src/(?:${Object.keys(LAYERS).join('|')})/`,
        pathNot: ['^src/$1/', '^src/[^/]+/index\\.ts$', '^src/env/remote/index\\.ts$', '(/testing|-testing)\\.ts$'],
      },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|build|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    reporterOptions: {
      // `npx depcruise src --output-type dot` (or archi) draws the graph by folder.
      archi: { collapsePattern: '^src/[^/]+' },
      dot: { collapsePattern: '^src/[^/]+' },
      text: { highlightFocused: true },
    },
  },
};
// scripts/architecture.mjs draws these layers into docs/architecture.md; not enumerable, so that dependency-cruiser's
// check of its own options does not see it.
Object.defineProperty(module.exports, 'layers', { value: LAYERS });
