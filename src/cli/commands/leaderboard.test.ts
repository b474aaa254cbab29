// `ragen leaderboard` on the command line: entries named after files or NAME=FILE, both files written, and the
// mistakes a user makes (two entries with one name, a file that is not there) told in one sentence.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../testing.js';

const tmp = mkdtempSync(join(tmpdir(), 'ragen-lb-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const ep = (success: boolean) =>
  JSON.stringify({ env: 'Bandit', seed: 123, group: 0, member: 0, success, n_tokens: 4 });

describe('ragen leaderboard', () => {
  writeFileSync(join(tmp, 'tiny.jsonl'), `${ep(true)}\n`);
  writeFileSync(join(tmp, 'other.jsonl'), `${ep(false)}\n`);

  it('writes index.html and leaderboard.json, entries named after their files or NAME=FILE', async () => {
    const out = join(tmp, 'site');
    const r = await runCli('leaderboard', join(tmp, 'tiny.jsonl'), `An API=${join(tmp, 'other.jsonl')}`, '--out', out);
    expect(r.code).toBe(0);
    const board = JSON.parse(readFileSync(join(out, 'leaderboard.json'), 'utf8')) as { entries: { name: string }[] };
    expect(board.entries.map((e) => e.name)).toEqual(['tiny', 'An API']);
    expect(readFileSync(join(out, 'index.html'), 'utf8')).toContain('<td class="name">An API');
  });

  it('refuses two entries with one name, and a missing file, in one sentence each', async () => {
    const same = await runCli('leaderboard', join(tmp, 'tiny.jsonl'), `tiny=${join(tmp, 'other.jsonl')}`);
    expect(same.code).not.toBe(0);
    expect(same.err).toMatch(/Two entries are named `tiny`: name them apart with NAME=FILE/);
    const missing = await runCli('leaderboard', join(tmp, 'nope.jsonl'), '--out', join(tmp, 'x'));
    expect(missing.code).not.toBe(0);
    expect(missing.err).toMatch(/nope\.jsonl/);
    expect(missing.err).not.toMatch(/\n\s+at /);
  });
});
