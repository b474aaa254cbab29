// `ragen leaderboard`: `ragen eval --out` files (one per model, API endpoint or scripted policy) into a static page
// and its JSON: success with 95% intervals, pass@k and tokens per episode per environment, entries ranked.
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Command } from 'commander';
import { boardHtml, buildBoard, parseEvalFile } from '../../metrics/index.js';
import { makeDir, UsageError, withFileErrors, writeFileAt } from '../../util/index.js';

/** Options of `ragen leaderboard`, as commander parses them. */
export interface LeaderboardOptions {
  out: string;
  title: string;
}

const EXAMPLES = `
Each file is one entry, named NAME=FILE or after the file (its name without .jsonl). Evaluate every entry on the
same seeds (the same --env, --groups, --group-size and --seed) so the columns compare; the page says where they
differ. See docs/leaderboard.md.

Examples:
  $ ragen eval --env SimpleSokoban,CoordFrozenLake --model ragen-tiny --groups 64 --out lb/ragen-tiny.jsonl
  $ ragen eval --env SimpleSokoban,CoordFrozenLake --policy openai --base-url https://api.openai.com/v1 \\
      --model gpt-4o-mini --groups 64 --out lb/gpt-4o-mini.jsonl
  $ ragen leaderboard lb/ragen-tiny.jsonl "GPT-4o mini=lb/gpt-4o-mini.jsonl" --out site/`;

export function register(program: Command): void {
  program
    .command('leaderboard')
    .description(
      '`ragen eval --out` files into a static leaderboard page and its JSON (success with 95% CIs, pass@k, tokens).',
    )
    .argument('<files...>', 'eval trajectory files (`ragen eval --out`), each FILE or NAME=FILE')
    .option('--out <dir>', 'where to write index.html and leaderboard.json', 'leaderboard')
    .option('--title <text>', "the page's title", 'ragen-ts leaderboard')
    .addHelpText('after', EXAMPLES)
    .action((files: string[], opts: LeaderboardOptions) => {
      const { html, json } = writeLeaderboard(files, opts);
      process.stderr.write(`leaderboard: wrote ${html} and ${json}\n`);
    });
}

/** `NAME=FILE` or `FILE` as an entry's name and file. */
function entryOf(arg: string): { name: string; file: string } {
  const eq = arg.indexOf('=');
  if (eq > 0) return { name: arg.slice(0, eq), file: arg.slice(eq + 1) };
  return { name: basename(arg).replace(/\.jsonl$/, ''), file: arg };
}

/** Build the board of `args` and write it into `opts.out`; the two files written. */
export function writeLeaderboard(args: string[], opts: LeaderboardOptions): { html: string; json: string } {
  const entries = args.map((arg) => {
    const { name, file } = entryOf(arg);
    const text = withFileErrors('read the eval file', file, () => readFileSync(file, 'utf8'));
    return { name, source: basename(file), episodes: parseEvalFile(text, file) };
  });
  const names = entries.map((e) => e.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) throw new UsageError(`Two entries are named \`${twice}\`: name them apart with NAME=FILE.`);
  const board = buildBoard(entries);
  makeDir(opts.out, 'create the leaderboard folder', '--out');
  const generated = `${entries.length} entries, ${board.envs.length} environments`;
  const html = join(opts.out, 'index.html');
  const json = join(opts.out, 'leaderboard.json');
  writeFileAt(html, boardHtml(board, { title: opts.title, generated }), 'write the page', '--out');
  writeFileAt(json, `${JSON.stringify(board, null, 1)}\n`, 'write the JSON', '--out');
  return { html, json };
}
