// How well a Sokoban policy reads its state: each turn's <think> cells (`player (r, c), box (r, c), target (r, c)`, the
// shipped models' reasoning template) against the true state, replayed from the episode's seed and the actions the
// model took. For text (SimpleSokoban) and image (VisualSimpleSokoban) trajectories alike, so a VLM's reading of the
// pixels can be set beside a text model's reading of the grid. Usage:
//   node bin/ragen.js eval --preset sokoban-vision-ppo --model DIR --groups 128 --out eval.jsonl
//   npx tsx src/bench/scripts/sokoban-think-accuracy.ts eval.jsonl [more.jsonl...]
// Prints one JSON line per file: turns, and the fraction whose whole <think>, player cell, box cell are right (and the
// player cell on first turns alone, where no earlier move can have desynchronised a replay).
import { readFileSync } from 'node:fs';
import { makeEnv } from '../../env/index.js';
import '../../envs/index.js'; // the built-in environments
import { DEMO_REASONING } from '../../train/index.js';

interface Turn {
  turn: number;
  think?: string | null;
  actions?: string[];
}
interface Trajectory {
  env: string;
  seed: number;
  turns: Turn[];
}

const truthOf = DEMO_REASONING.SimpleSokoban!;
const cell = (think: string, what: string): string | undefined =>
  think.match(new RegExp(`${what} (\\(\\d+, \\d+\\))`))?.[1];

async function accuracy(records: readonly Trajectory[]) {
  const n = { turns: 0, exact: 0, player: 0, box: 0, first: 0, firstPlayer: 0 };
  for (const r of records) {
    if (!/Sokoban/.test(r.env)) throw new Error(`${r.env}: not a Sokoban trajectory (seed ${r.seed})`);
    const env = makeEnv('SimpleSokoban'); // VisualSimpleSokoban's rooms and rules, its text observation
    let observation = (await env.reset({ seed: r.seed })).observation;
    for (const t of r.turns) {
      const truth = truthOf({ observation, actionNames: undefined, plan: [], actions: [] });
      const think = (t.think ?? '').trim();
      const player = cell(think, 'player') === cell(truth, 'player');
      n.turns++;
      n.exact += Number(think === truth);
      n.player += Number(player);
      n.box += Number(cell(think, 'box') === cell(truth, 'box'));
      if (t.turn === 0) {
        n.first++;
        n.firstPlayer += Number(player);
      }
      let over = false;
      for (const a of t.actions ?? []) {
        const s = await env.step(a);
        observation = s.observation;
        if (s.terminated || s.truncated) {
          over = true;
          break;
        }
      }
      if (over) break;
    }
  }
  const f = (x: number, d: number) => +(x / Math.max(d, 1)).toFixed(3);
  return {
    turns: n.turns,
    exact: f(n.exact, n.turns),
    player: f(n.player, n.turns),
    box: f(n.box, n.turns),
    firstTurnPlayer: f(n.firstPlayer, n.first),
  };
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error(
    'usage: npx tsx src/bench/scripts/sokoban-think-accuracy.ts EVAL.jsonl [...] (from `ragen eval --out`)',
  );
  process.exit(2);
}
for (const file of files) {
  const records = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Trajectory);
  console.log(JSON.stringify({ file, ...(await accuracy(records)) }));
}
