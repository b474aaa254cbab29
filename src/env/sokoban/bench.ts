// Quick Sokoban/FrozenLake timing through the Env interface (the official numbers come from `ragen bench envs`).
// Run: npx tsx src/env/sokoban/bench.ts [envId ...]
import { Rng } from '../../util/index.js';
import { makeEnv } from '../index.js';

const ids = process.argv.slice(2).length ? process.argv.slice(2) : ['SimpleSokoban', 'LargerSokoban', 'SokobanDifferentGridVocab', 'CoordSokoban'];
const SECONDS = 1;

/** Work per second of this process's CPU time (user + system), so other load on the machine matters less. */
function time(run: () => number): number {
  run(); // warm up
  const cpu = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  const t0 = cpu();
  let n = 0;
  while (cpu() - t0 < SECONDS) n += run();
  return n / (cpu() - t0);
}

for (const id of ids) {
  const env = makeEnv(id);
  const names = env.actionNames!;
  let seed = 0;
  const resets = time(() => {
    for (let i = 0; i < 1000; i++) env.reset({ seed: seed++ });
    return 1000;
  });
  const rng = new Rng(1);
  const stepsLoop = (readObservation: boolean) => () => {
    env.reset({ seed: seed++ });
    let chars = 0;
    for (let i = 0; i < 10_000; i++) {
      const r = env.step(names[rng.nextUint32() & 3]!) as { observation: string; terminated: boolean; truncated: boolean };
      if (readObservation) chars += r.observation.length;
      if (r.terminated || r.truncated) env.reset({ seed: seed++ });
    }
    return 10_000 + (chars & 0);
  };
  const steps = time(stepsLoop(false));
  const stepsRead = time(stepsLoop(true));
  console.log(`${id.padEnd(26)} resets/s ${Math.round(resets).toLocaleString('en').padStart(9)}   steps/s ${Math.round(steps).toLocaleString('en').padStart(11)}   steps/s reading observation ${Math.round(stepsRead).toLocaleString('en').padStart(10)}`);
}
