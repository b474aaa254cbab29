// `ragen new`: working starting files in a new folder: an environment of your own (`env`), an agent program trained
// through the gateway (`agent`), or a real MCP server from npm as the environment (`mcp`). The templates live in the
// package's templates/ folder; `__DIR__` becomes the new folder's path as the presets and scripts need it (relative
// to where the command runs), `__ENV_ID__` the environment's id.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative, resolve, sep } from 'node:path';
import type { Command } from 'commander';
import { didYouMean, makeDir, packageRoot, UsageError, writeFileAt } from '../../util/index.js';

/** What each kind writes, and the command that runs it first. */
export const KINDS = {
  env: 'an environment of your own (env.mjs), its preset and a training script; needs `ragen-ts` and `zod` installed',
  agent: 'an agent program (agent.mjs) trained through the gateway as it is, and its preset',
  mcp: 'the official filesystem MCP server from npm as the environment: files, tasks, a verifier and a preset',
} as const;
export type Kind = keyof typeof KINDS;

/** Options of `ragen new`, as commander parses them. */
export interface NewOptions {
  name?: string;
}

const EXAMPLES = `
Kinds:
${Object.entries(KINDS)
  .map(([k, what]) => `  ${k.padEnd(6)} ${what}`)
  .join('\n')}

Examples:
  $ ragen new env my-env && node my-env/train.mjs trainer.steps=2
  $ ragen new agent my-agent && npx ragen train --config my-agent/preset.yaml --steps 2
  $ ragen new mcp my-tools && npx ragen eval --preset my-tools/preset.yaml`;

export function register(program: Command): void {
  program
    .command('new')
    .description('Write working starting files into a new folder: an environment, an agent program or an MCP task set.')
    .argument('<kind>', `what to write: ${Object.keys(KINDS).join(' | ')}`)
    .argument('<dir>', 'the new folder (must not exist, or be empty)')
    .option('--name <EnvId>', "the environment's id, for `env` [the folder's name in PascalCase]")
    .addHelpText('after', EXAMPLES)
    .action((kind: string, dir: string, opts: NewOptions) => {
      const written = scaffold(kind, dir, opts);
      for (const f of written) process.stderr.write(`new: wrote ${f}\n`);
      process.stderr.write(`new: next, ${nextStep(kind as Kind, relDir(dir))}\n`);
    });
}

/** The folder as the templates name it: relative to the working directory, `/`-separated. */
function relDir(dir: string): string {
  const rel = relative(process.cwd(), resolve(dir)) || '.';
  return rel.split(sep).join('/');
}

function nextStep(kind: Kind, dir: string): string {
  if (kind === 'env') return `\`node ${dir}/train.mjs trainer.steps=2\` (after \`npm install ragen-ts zod\`)`;
  if (kind === 'agent') return `\`npx ragen train --config ${dir}/preset.yaml --steps 2\``;
  return `\`npx ragen eval --preset ${dir}/preset.yaml\`, then \`npx ragen train --config ${dir}/preset.yaml\``;
}

/** `my-env` -> `MyEnv`: an env id from a folder name. */
export function envIdOf(name: string): string {
  const id = name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
  return /^[A-Za-z]/.test(id) ? id : `Env${id}`;
}

/** Every file of a template folder, relative to it. */
function templateFiles(root: string, rel = ''): string[] {
  return readdirSync(join(root, rel))
    .sort()
    .flatMap((name) => {
      const path = rel ? `${rel}/${name}` : name;
      return statSync(join(root, path)).isDirectory() ? templateFiles(root, path) : [path];
    });
}

/** Write the template `kind` into `dir`; the files written. */
export function scaffold(kind: string, dir: string, opts: NewOptions = {}): string[] {
  if (!(kind in KINDS))
    throw new UsageError(
      `Unknown kind \`${kind}\` for \`ragen new\`.${didYouMean(kind, Object.keys(KINDS))} Give one of: ${Object.keys(KINDS).join(', ')}.`,
    );
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0))
    throw new UsageError(`\`${dir}\` already exists and is not an empty folder: give a new folder, e.g. ${dir}-2.`);
  const envId = opts.name ?? envIdOf(basename(resolve(dir)));
  if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(envId))
    throw new UsageError(`--name \`${envId}\` is not an env id: use letters, digits, - and _, starting with a letter.`);
  const template = join(packageRoot(), 'templates', kind);
  const at = relDir(dir);
  makeDir(dir, 'create the folder', '<dir>');
  return templateFiles(template).map((file) => {
    const text = readFileSync(join(template, file), 'utf8').replaceAll('__DIR__', at).replaceAll('__ENV_ID__', envId);
    const out = join(dir, file);
    makeDir(join(out, '..'), 'create the folder', '<dir>');
    writeFileAt(out, text, 'write a starting file', '<dir>');
    return out;
  });
}
