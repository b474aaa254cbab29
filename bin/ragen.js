#!/usr/bin/env node
// The `ragen` command: runs the compiled CLI. An installed package ships it built; in a source checkout the first run
// builds it (`npm run build`: the package has no install-time script, so `npm install` does not).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
const sourceCheckout = () =>
  existsSync(new URL('../scripts/build-kernels.mjs', import.meta.url)) &&
  existsSync(new URL('../node_modules/typescript', import.meta.url));
if (!existsSync(entry) && sourceCheckout()) {
  console.error(
    'ragen: first run in this checkout: building the kernels, dist/ and the dashboard (`npm run build`)...',
  );
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  // the build's output goes to stderr: stdout stays the command's (`ragen envs --json | jq` on a first run)
  const built = spawnSync(npm, ['run', 'build'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (built.status !== 0) {
    console.error(`ragen: \`npm run build\` failed in ${root} (its output is above); fix that and run it again.`);
    process.exit(1);
  }
}
if (!existsSync(entry)) {
  console.error(
    `ragen: ${entry} is missing. In a ragen-ts checkout run \`npm install && npm run build\`; an installed package ` +
      'ships it: reinstall ragen-ts.',
  );
  process.exit(1);
}
// A closed pipe (`ragen envs | head`) ends the command quietly instead of with a stack trace.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});
const { main } = await import(entry);
process.exitCode = await main(process.argv.slice(2));
