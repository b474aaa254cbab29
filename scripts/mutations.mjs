#!/usr/bin/env node
// Mutation check of the trainer's direction tests (issue 13): applies each single-line mutation below to the
// source, runs the given test files, and reports whether a test failed (caught) or not (missed); the source
// is restored after each. Usage: node scripts/mutations.mjs [test files...] (default: the direction tests).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const MUTATIONS = [
  [
    'negate the actor log-prob gradient',
    'src/train/stage-update.ts',
    'grad: { logprobs: r.grad.logprobs,',
    'grad: { logprobs: r.grad.logprobs.map((x) => -x),',
  ],
  [
    'negate the critic value gradient',
    'src/train/stage-update.ts',
    'grad: { values: r.grad.values },',
    'grad: { values: r.grad.values.map((x) => -x) },',
  ],
  [
    'negate every advantage',
    'src/train/stage-advantages.ts',
    'let advantages = adv.advantages;',
    'let advantages = adv.advantages.map((x) => -x);',
  ],
  [
    'swap the low and high clip ratios',
    'src/train/step-batch.ts',
    'clipRatioLow: algo.clipRatioLow,\n    clipRatioHigh: algo.clipRatioHigh,',
    'clipRatioLow: algo.clipRatioHigh,\n    clipRatioHigh: algo.clipRatioLow,',
  ],
  [
    'negate the entropy coefficient',
    'src/train/step-batch.ts',
    'entropyCoeff: algo.entropyCoeff,',
    'entropyCoeff: -algo.entropyCoeff,',
  ],
  [
    'negate the KL-loss coefficient',
    'src/train/step-batch.ts',
    'klCoef: algo.kl.useKlLoss ? algo.kl.coef : 0,',
    'klCoef: algo.kl.useKlLoss ? -algo.kl.coef : 0,',
  ],
  [
    'skip reward normalisation',
    'src/train/stage-collate.ts',
    "if (s.rewardNorm.method !== 'identity') {",
    'if (false) {',
  ],
  [
    'swap gamma and lambda in the GAE call',
    'src/train/step-batch.ts',
    'gamma: algo.gamma,\n        lambda: algo.lambda,',
    'gamma: algo.lambda,\n        lambda: algo.gamma,',
  ],
  [
    'old log-probs = current ones (ratio 1)',
    'src/train/stage-update.ts',
    'oldLogprobs: takeRows(data.oldLogprobs, rows, T),',
    'oldLogprobs: out.logprobs,',
  ],
  [
    'negate the surrogate gradient inside the local engine',
    'src/engine/local.ts',
    'const part = sum(mul(out, tensor(g)));',
    'const part = sum(mul(out, tensor(g.map((x) => -x))));',
  ],
  [
    'value clip centred on the current values',
    'src/train/stage-update.ts',
    'oldValues: takeRows(oldValues, rows, T),',
    'oldValues: out.values!,',
  ],
];

const tests = process.argv.slice(2);
const files = tests.length > 0 ? tests : ['src/train/direction.test.ts'];
let missed = 0;
for (const [name, file, from, to] of MUTATIONS) {
  const src = readFileSync(file, 'utf8');
  if (src.split(from).length !== 2) {
    console.log(
      `STALE   ${name}: the line to mutate is not found exactly once in ${file}; update scripts/mutations.mjs`,
    );
    missed++;
    continue;
  }
  writeFileSync(file, src.replace(from, to));
  let caught = false;
  try {
    execFileSync('npx', ['vitest', 'run', ...files], { stdio: 'ignore' });
  } catch {
    caught = true;
  } finally {
    writeFileSync(file, src);
  }
  if (!caught) missed++;
  console.log(`${caught ? 'caught ' : 'MISSED '} ${name} (${file})`);
}
console.log(`${MUTATIONS.length - missed} of ${MUTATIONS.length} mutations caught by ${files.join(' ')}`);
process.exitCode = missed > 0 ? 1 : 0;
