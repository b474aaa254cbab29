#!/usr/bin/env node
// Behaviour-unchanged check for refactors of the trainer: the default preset's first 3 steps must give the same
// metrics (wall-clock fields aside), the same rollouts and the same step-3 checkpoint (weights, optimizer state,
// trainer state), fresh and resumed, as a baseline run made before the change with the same native build.
//
//   node scripts/check-identical-steps.mjs run <dir>            # <dir>/full: 3 steps; <dir>/resumed: 2, then --resume
//   node scripts/check-identical-steps.mjs compare <base> <run> # exit 1 and name the first differences if any
//   node scripts/check-identical-steps.mjs check <base> <dir>   # run, then compare <base> with <dir>/full and /resumed
//
// <base> is a run directory of the same command made before the change (`node bin/ragen.js train --steps 3
// logging.runDir=<base>`); run `npx tsc -p tsconfig.build.json` first, as the CLI runs dist/.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Wall-clock fields: they differ between any two runs, so they are left out before comparing (a resumed run also has
 * no `timing_s/checkpoint` on its first step: the write it times happened before the resume).
 */
const WALL_TIME = (key) =>
  key === 'time' ||
  key.startsWith('timing_s/') ||
  ['perf/gen_tokens_per_s', 'perf/tokens_per_s', 'perf/rss_mb'].includes(key);

const train = (args) => execFileSync('node', ['bin/ragen.js', 'train', ...args], { stdio: 'inherit' });

function run(dir) {
  train(['--steps', '3', `logging.runDir=${join(dir, 'full')}`]);
  train(['--steps', '3', '--stop-after', '2', `logging.runDir=${join(dir, 'resumed')}`]);
  train(['--resume', join(dir, 'resumed')]);
}

/** metrics.jsonl with the wall-clock fields left out (key order kept: it is part of the bytes compared). */
function metrics(dir) {
  return readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.stringify(JSON.parse(line), (k, v) => (WALL_TIME(k) ? undefined : v)));
}

function files(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** What must be identical: rollouts byte for byte, and the step-3 checkpoint's weights, optimizer and trainer state. */
function hashes(dir) {
  const ckpt = join(dir, 'checkpoints', 'step-3');
  const picked = [
    ...files(join(dir, 'rollouts')),
    ...files(ckpt).filter((f) => f.endsWith('.safetensors') || f.endsWith('trainer-state.json')),
  ];
  return new Map(picked.map((f) => [relative(dir, f), sha256(f)]));
}

function compare(base, other) {
  const diffs = [];
  const [a, b] = [metrics(base), metrics(other)];
  if (a.length !== b.length) diffs.push(`metrics.jsonl: ${a.length} lines vs ${b.length}`);
  a.forEach((line, i) => {
    if (b[i] !== undefined && line !== b[i]) diffs.push(`metrics.jsonl line ${i + 1} differs:\n  ${line}\n  ${b[i]}`);
  });
  const [ha, hb] = [hashes(base), hashes(other)];
  if (![...ha.keys()].some((f) => f.includes('step-3'))) diffs.push(`${base} has no checkpoints/step-3`);
  for (const f of new Set([...ha.keys(), ...hb.keys()]))
    if (ha.get(f) !== hb.get(f)) diffs.push(`${f}: ${ha.get(f) ?? 'missing'} vs ${hb.get(f) ?? 'missing'}`);
  console.log(`${other} vs ${base}: ${a.length} metric lines, ${ha.size} files hashed`);
  for (const [f, h] of ha) if (f.includes('step-3')) console.log(`  ${h}  ${f}`);
  if (diffs.length === 0) {
    console.log('  identical (wall-clock fields ignored: time, timing_s/*, perf/*_per_s, perf/rss_mb)');
    return true;
  }
  console.log(diffs.slice(0, 10).join('\n'));
  return false;
}

const [mode, x, y] = process.argv.slice(2);
if (mode === 'run' && x) run(x);
else if (mode === 'compare' && x && y) process.exitCode = compare(x, y) ? 0 : 1;
else if (mode === 'check' && x && y) {
  run(y);
  const ok = [compare(x, join(y, 'full')), compare(x, join(y, 'resumed'))].every(Boolean);
  process.exitCode = ok ? 0 : 1;
} else {
  console.error('usage: check-identical-steps.mjs run <dir> | compare <base> <run> | check <base> <dir>');
  process.exitCode = 2;
}
