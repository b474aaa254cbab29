// Quick timing of the Sokoban and FrozenLake ids through the Env interface. Each figure is the best of
// many short rounds, so other load on a shared machine matters less; the official numbers come from
// `ragen bench envs`. Run: npx tsx src/bench/scripts/sokoban-timing.ts [envId ...]
import { envSpec, makeEnv, resolveEnvConfig } from '../../env/index.js';
import type { StepResult } from '../../env/index.js';

const ids = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ['SimpleSokoban', 'LargerSokoban', 'SokobanDifferentGridVocab', 'CoordSokoban', 'FrozenLake', 'CoordFrozenLake'];
const ROUNDS = 200;

for (const id of ids) {
  const env = makeEnv(id);
  const spec = envSpec(id);
  const config = resolveEnvConfig(id);
  // The solver's actions for 64 seeds: every step reaches a new state (nothing to reuse).
  const plans = Array.from({ length: 64 }, (_, seed) => ({ seed, actions: spec.solve!(config, seed)! }));
  let bestReset = Infinity;
  let bestStep = Infinity;
  let seed = 1000;
  let check = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) env.reset({ seed: seed++ });
    bestReset = Math.min(bestReset, (performance.now() - t0) / 200);
    let spent = 0;
    let steps = 0;
    for (const plan of plans) {
      env.reset({ seed: plan.seed });
      const t1 = performance.now();
      for (const action of plan.actions) {
        const r = env.step(action) as StepResult;
        check += r.observation.charCodeAt(r.observation.length - 1); // reads (and flattens) the observation
        steps++;
        if (r.terminated || r.truncated) break;
      }
      spent += performance.now() - t1;
    }
    bestStep = Math.min(bestStep, spent / steps);
  }
  const perSecond = (ms: number): string =>
    Math.round(1000 / ms)
      .toLocaleString('en')
      .padStart(11);
  console.log(
    `${id.padEnd(26)} resets/s ${perSecond(bestReset)}   steps/s ${perSecond(bestStep)}${check ? '' : ' (no observation read)'}`,
  );
}
