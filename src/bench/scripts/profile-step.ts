// Per-phase time of StarPO steps on a preset (default sokoban-ppo) with engine token counts (real vs padded) and
// FLOP rates. Usage: npx tsx src/bench/scripts/profile-step.ts [--model DIR | --size tiny] [--steps 3] [--val]
// [--no-share-prefix] [key=value ...]
import '../../envs/index.js'; // the built-in environments
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnvGroups } from '../../agent/index.js';
import { KLController } from '../../algo/index.js';
import type { LocalEngine } from '../../engine/index.js';
import { getBackend } from '../../tensor/index.js';
import { DEFAULT_PRESET, envGroupsOptions, loadConfig } from '../../config/index.js';
import { openModels, SIZE_PRESETS, starpoStep, validate, type StepContext } from '../../train/index.js';
import { writeMicroModel } from '../../train/testing.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const v = argv[i + 1]!;
  argv.splice(i, 2);
  return v;
};
const bool = (name: string): boolean => {
  const i = argv.indexOf(name);
  if (i >= 0) argv.splice(i, 1);
  return i >= 0;
};
const steps = Number(flag('--steps') ?? 3);
const preset = flag('--config') ?? DEFAULT_PRESET;
const size = flag('--size') ?? 'tiny';
const withVal = bool('--val');
const noShare = bool('--no-share-prefix'); // the padded batches of before the shared-prefix path (for comparisons)
let model = flag('--model');
if (!model) {
  const shipped = loadConfig({ config: preset }).model.path;
  if (existsSync(join(shipped, 'config.json'))) model = shipped;
  else {
    const s = (
      SIZE_PRESETS as Record<
        string,
        { hiddenSize: number; intermediateSize: number; numLayers: number; numHeads: number }
      >
    )[size];
    if (!s) throw new Error(`unknown --size ${size}`);
    model = await writeMicroModel(mkdtempSync(join(tmpdir(), 'ragen-prof-')), { ...s, seed: 1 });
    console.log(`(no ${shipped}: random-init ${size} model ${JSON.stringify(s)})`);
  }
}
const config = loadConfig({ config: preset, overrides: [`model.path=${model}`, 'logging.console=none', ...argv] });
const { engine, tokenizer } = await openModels(config);
const local = engine as LocalEngine;
if (noShare) (local as unknown as { options: { sharedPrefixMin: number } }).options.sharedPrefixMin = 0;
const pc = local.policy.config;
console.log(
  `preset ${preset} model ${model}: hidden ${pc.hiddenSize} layers ${pc.numLayers} vocab ${pc.vocabSize} params ${(local.policy.numParameters / 1e6).toFixed(2)}M backend ${getBackend().name}`,
);
console.log(
  `critic ${config.model.critic.mode}, recomputeOldLogprobs ${(config.algo as { recomputeOldLogprobs?: unknown }).recomputeOldLogprobs ?? '(n/a)'}, collapse.every ${config.trainer.collapse.every}`,
);
// Forward FLOPs per token ~ 2 x (non-embedding params + LM head); backward ~ 2x forward.
const flopsPerToken = 2 * (local.policy.numParameters - pc.vocabSize * pc.hiddenSize + pc.vocabSize * pc.hiddenSize);
const agent = config.agent;
const groups = new EnvGroups(envGroupsOptions(config, 'train'));
const ctx: StepContext = {
  config,
  engine,
  tokenizer,
  agent,
  groups,
  kl: new KLController({ type: 'fixed', klCoef: 0 }),
  collapseEma: {},
};

const phases = ['gen', 'collapse', 'old_log_prob', 'ref', 'values', 'update_critic', 'update_actor', 'step'];
const fmt = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(2)).padStart(8);
console.log(`step ${phases.map((p) => p.padStart(13)).join('')}   real/padded tokens per phase (fwd; bwd)`);
for (let step = 1; step <= steps; step++) {
  local.tokenStats.reset();
  const out = await starpoStep(ctx, step);
  const m = out.metrics as Record<string, number | undefined>;
  const s = local.tokenStats;
  console.log(
    `${String(step).padStart(4)} ${phases.map((p) => fmt(m[`timing_s/${p}`]).padStart(13)).join('')}   ` +
      `fwd ${s.forwardReal}/${s.forwardPadded} bwd ${s.backwardReal}/${s.backwardPadded} gen ${m['perf/total_tokens']} batch ${m['train/batch_size']} ` +
      `fwd+bwd ${((flopsPerToken * (s.forwardPadded + 3 * s.backwardPadded)) / 1e9 / ((m['timing_s/old_log_prob'] ?? 0) + (m['timing_s/values'] ?? 0) + (m['timing_s/update_critic'] ?? 0) + (m['timing_s/update_actor'] ?? 0))).toFixed(2)} GFLOP/s`,
  );
}
if (withVal) {
  const v = await validate(config, engine, tokenizer, agent);
  console.log(
    `validation of ${config.env.val.reduce((a, x) => a + x.groups * (x.groupSize ?? 1), 0)} episodes: ${v?.seconds.toFixed(2)} s, success ${JSON.stringify(v?.success)}`,
  );
}
const c0 = performance.now();
await engine.save(mkdtempSync(join(tmpdir(), 'ragen-prof-ckpt-')), { optimizer: true });
console.log(`checkpoint (models + optimizer): ${((performance.now() - c0) / 1000).toFixed(2)} s`);
await groups.close();
engine.dispose();
