#!/usr/bin/env node
// The `ragen` command: runs the compiled CLI (built by `npm install` / `npm run build`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
if (!existsSync(entry)) {
  console.error(`ragen: ${entry} is missing. Run \`npm install\` (or \`npm run build\`) in the ragen-ts folder first.`);
  process.exit(1);
}
// A closed pipe (`ragen envs | head`) ends the command quietly instead of with a stack trace.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});
const { main } = await import(entry);
process.exitCode = await main(process.argv.slice(2));
