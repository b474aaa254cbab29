// The package entry: its runtime exports are exactly the documented public API (docs/api.md), so an accidental
// export (an internal helper, a benchmark constant) fails here; and the entry imports in a fresh Node process.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as api from './index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The public runtime names, by section of src/index.ts (types are checked by tsc, not listed here). */
const PUBLIC = {
  env: [
    'invalidInfo',
    'matchActionName',
    'registerEnv',
    'makeEnv',
    'listEnvs',
    'envSpec',
    'resolveEnvId',
    'resolveEnvConfig',
    'Wrapper',
    'OrderEnforcing',
    'TimeLimit',
    'EpisodeStatistics',
    'wrapEnv',
    'checkEnv',
    'checkRegisteredEnv',
    'EnvCheckError',
    'RewardScale',
    'FormatPenalty',
    'ObservationTruncation',
    'EpisodeRecorder',
  ],
  remote: ['EnvServer', 'RemoteEnv', 'RemoteEnvError', 'registerRemoteEnv', 'registerRemoteEnvs'],
  engine: ['LocalEngine', 'TorchEngine', 'sequenceBatch'],
  model: ['Transformer', 'modelConfig', 'countParameters', 'loadModel', 'saveModel'],
  tokenizer: ['HfTokenizer', 'loadTokenizer', 'loadQwenTokenizer', 'tinyTokenizerDir', 'ChatTemplate'],
  agent: [
    'agentConfig',
    'EnvGroups',
    'enginePolicy',
    'oraclePolicy',
    'randomPolicy',
    'openaiPolicy',
    'rollout',
    'parseResponse',
    'collate',
    'episodeRecord',
    'writeEpisodeRecords',
  ],
  algo: [
    'computeAdvantage',
    'needsCritic',
    'gae',
    'biLevelGae',
    'grpoAdvantage',
    'rlooAdvantage',
    'reinforcePPAdvantage',
    'reinforcePPBaselineAdvantage',
    'softReweightByGroupStd',
    'scaleByKeptRatio',
    'lengthWeightAdvantages',
    'normalizeRewards',
    'aggNorm',
    'aggLoss',
    'ppoPolicyLoss',
    'entropyBonus',
    'actorLoss',
    'clippedValueLoss',
    'klPenalty',
    'klLoss',
    'applyKLPenalty',
    'KLController',
    'filterRollouts',
    'selectGroups',
    'collapseMetrics',
    'earlyWarnings',
    'truncatedImportanceWeights',
  ],
  serve: ['OpenAIServer', 'ApiError', 'localTopLogprobs'],
  train: ['train', 'loadConfig', 'defaultConfig', 'listPresets'],
  metrics: ['METRICS', 'describeMetric', 'MetricLogger', 'JsonlSink', 'readMetricsFile'],
  util: [
    'Rng',
    'RagenError',
    'ConfigError',
    'EnvNotFoundError',
    'ResetNeededError',
    'ShapeError',
    'CheckpointError',
    'UsageError',
  ],
  tensor: ['tensor'],
};

describe('the package entry (src/index.ts)', () => {
  it('exports exactly the public API: adding or dropping a name means updating this list and docs/api.md', () => {
    expect(Object.keys(api).sort()).toEqual(Object.values(PUBLIC).flat().sort());
  });

  it('lists every public name in docs/api.md', () => {
    const doc = readFileSync(join(root, 'docs', 'api.md'), 'utf8');
    for (const name of Object.values(PUBLIC).flat()) expect(doc, name).toContain(`\`${name}`);
  });

  it('keeps internals out: no benchmark, torch-probe, kernel-backend or config-plumbing names at the top level', () => {
    for (const name of [
      'BENCH_MODEL',
      'TORCH_MISSING',
      'runEngineBench',
      'findTorchPython',
      'setBackend',
      'configToYaml',
      'agentSettings',
      'assert',
      'STRIPPED_MARKERS',
    ]) {
      expect(name in api, name).toBe(false);
    }
    expect(typeof api.tensor.matmul).toBe('function'); // the tensor library is one namespace
  });

  it('imports in a fresh Node process (built-in envs registered), as `import ... from "ragen-ts"` would', () => {
    const script =
      "const m = await import('./src/index.ts'); console.log(JSON.stringify({ n: Object.keys(m).length, envs: m.listEnvs().length }));";
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
    });
    const r = JSON.parse(out.trim().split('\n').pop()!) as { n: number; envs: number };
    expect(r.n).toBe(Object.values(PUBLIC).flat().length);
    expect(r.envs).toBeGreaterThan(10);
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { main: string; types: string };
    expect([pkg.main, pkg.types]).toEqual(['dist/src/index.js', 'dist/src/index.d.ts']); // where tsconfig.build.json puts src/index.ts
  });
});
