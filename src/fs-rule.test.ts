// The filesystem rule (issue 34, item 14): shipped code creates folders and writes files a user named through
// util/make-dir.ts (`makeDir`, `writeFileAt`), which refuse /proc & co. by name and report EROFS/ENOSPC as sentences,
// never through Node's raw `mkdir`/`mkdirSync`/`writeFile`/`writeFileSync` (a recursive mkdir loops forever under
// /proc). dependency-cruiser sees modules, not named imports, so this test scans the sources itself.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = import.meta.dirname;
const ROOT = join(SRC, '..');

/** A raw call: the name not after a `.` or a word character (so `writeFileAt(`, `fs.x.mkdir(` of a stub are not). */
const RAW_CALL = /(?:^|[^.\w$])(mkdirSync|writeFileSync|mkdir|writeFile)\s*\(/;

/**
 * Files allowed raw calls, and how many: each writes only inside a folder that code above it created with
 * `makeDir` (a run directory, a checkpoint), or is a test helper or a developer's benchmark script. A new raw call
 * anywhere, or one more in these files, fails the rule: use `makeDir` / `writeFileAt` instead.
 */
const ALLOWED: Readonly<Record<string, number>> = {
  // The helpers themselves (one level at a time: each mkdir gives its true errno).
  'src/util/make-dir.ts': 2,
  // Inside the run directory, which run-setup.ts created with makeDir (logging.runDir / logging.runsDir).
  'src/train/checkpoint-io.ts': 5,
  'src/train/run-setup.ts': 1,
  'src/metrics/console-log.ts': 1,
  'src/metrics/jsonl-sink.ts': 1,
  'src/metrics/tensorboard-sink.ts': 2,
  'src/engine/local-optim.ts': 1,
  // Model folders: the CLI commands that name them (`model init --out`, `sft --out`, checkpoints in a run) make them
  // first with makeDir, so these recursive mkdirs find the folder there; the library's own callers are the same.
  'src/model/checkpoint.ts': 3,
  'src/model/lora.ts': 2,
  'src/model/random-init.ts': 2,
  'src/model/safetensors.ts': 2,
  // refs/ beside the snapshot the Hub download just wrote into the same cache folder.
  'src/model/hub.ts': 2,
  // The shipped tiny tokenizer's folder, written by the build and by tests, never a user's path.
  'src/tokenizer/tiny.ts': 3,
  // Test helpers (temporary folders of their own).
  'src/envs/mcp/testing.ts': 6,
  'src/util/mounts-testing.ts': 2,
  // Developer benchmarks and scripts (`ragen bench ...`, src/bench/scripts): not yet converted; their outputs
  // default to folders under the project.
  'src/bench/commands/bench-engine.ts': 1,
  'src/bench/commands/bench-gpu-check.ts': 3,
  'src/bench/commands/bench-learning.ts': 3,
  'src/bench/commands/bench-ragen2.ts': 3,
  'src/bench/scripts/gateway-agents.ts': 1,
  'src/bench/scripts/gateway-overhead.ts': 1,
  'src/bench/scripts/soak-remote.ts': 2,
  'src/bench/scripts/wasm-tiles.ts': 3,
  'src/bench/study/png.ts': 1,
  'src/bench/study/runs.ts': 2,
  'src/bench/tools/hf-check.ts': 1,
};

/** 1-based line numbers of raw calls in `source` (comment lines skipped). */
export function rawCallLines(source: string): number[] {
  const lines: number[] = [];
  source.split('\n').forEach((line, i) => {
    const t = line.trim();
    if (t.startsWith('//') || t.startsWith('*') || t.startsWith('/*')) return;
    if (RAW_CALL.test(line)) lines.push(i + 1);
  });
  return lines;
}

/** `file:line` of every raw call past the allow-list, for `sources` (path relative to the project -> text). */
function violations(sources: ReadonlyMap<string, string>, allowed: Readonly<Record<string, number>>): string[] {
  const out: string[] = [];
  for (const [file, text] of sources) {
    const lines = rawCallLines(text);
    if (lines.length > (allowed[file] ?? 0)) out.push(...lines.map((n) => `${file}:${n}`));
  }
  return out;
}

function shippedSources(): Map<string, string> {
  const sources = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts'))
        sources.set(relative(ROOT, p), readFileSync(p, 'utf8'));
    }
  };
  walk(SRC);
  return sources;
}

describe('item 14: no raw mkdir/writeFile outside the helpers that know about /proc and EROFS', () => {
  it('item 14: shipped code has no raw mkdir/mkdirSync/writeFile/writeFileSync past the allow-list', () => {
    expect(violations(shippedSources(), ALLOWED)).toEqual([]);
  });

  it('item 14: the allow-list holds no stale entries (a converted file leaves it)', () => {
    const sources = shippedSources();
    const stale = Object.entries(ALLOWED)
      .filter(([file, n]) => rawCallLines(sources.get(file) ?? '').length < n)
      .map(([file]) => file);
    expect(stale).toEqual([]);
  });

  it('item 14: a planted raw call fails the rule, naming file:line, in a new file and as one more in an allowed one', () => {
    const sources = shippedSources();
    const planted = new Map(sources);
    planted.set(
      'src/cli/commands/planted.ts',
      "import { mkdirSync } from 'node:fs';\n\nexport const f = (d: string) => mkdirSync(d, { recursive: true });\n",
    );
    const io = sources.get('src/train/checkpoint-io.ts')!;
    planted.set(
      'src/train/checkpoint-io.ts',
      `${io}\nexport const g = async (p: string) => { await writeFile(p, ''); };\n`,
    );
    const found = violations(planted, ALLOWED);
    expect(found).toContain('src/cli/commands/planted.ts:3');
    expect(found).toContain(`src/train/checkpoint-io.ts:${io.split('\n').length + 1}`);
    // the helpers and comments are not raw calls
    expect(rawCallLines("writeFileAt(p, 'x', 'save');\n// mkdirSync(p) is what we avoid\nmakeDir(d, 'a');\n")).toEqual(
      [],
    );
  });
});
