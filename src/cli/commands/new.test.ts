// `ragen new`: each kind writes files that work as written. The env passes the conformance checks from a project
// where `ragen-ts` resolves as an installed package; the agent program runs through the gateway in `ragen eval`;
// the MCP task set scores a read-then-answer episode with the real filesystem server from npm.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../../util/index.js';
import { runCli } from '../testing.js';
import { envIdOf, scaffold } from './new.js';

const ROOT = packageRoot();
const tmp = mkdtempSync(join(tmpdir(), 'ragen-new-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const cwd = process.cwd();
beforeEach(() => process.chdir(tmp));
afterEach(() => process.chdir(cwd));
const run = promisify(execFile);
const filesOf = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));

describe('ragen new', () => {
  it('names an env after its folder', () => {
    expect(envIdOf('my-env')).toBe('MyEnv');
    expect(envIdOf('2048_clone')).toBe('Env2048Clone');
  });

  it('env: the environment passes checkRegisteredEnv in a project with ragen-ts and zod installed', async () => {
    scaffold('env', 'counter-task');
    expect(readdirSync('counter-task').sort()).toEqual(['README.md', 'env.mjs', 'preset.yaml', 'train.mjs']);
    for (const f of filesOf('counter-task')) expect(readFileSync(f, 'utf8'), f).not.toMatch(/__DIR__|__ENV_ID__/);
    mkdirSync('node_modules');
    symlinkSync(ROOT, join('node_modules', 'ragen-ts'), 'dir'); // as `npm install ragen-ts` would place it
    symlinkSync(join(ROOT, 'node_modules', 'zod'), join('node_modules', 'zod'), 'dir');
    const check = `await import('./counter-task/env.mjs');
      const { checkRegisteredEnv, envSpec, resolveEnvConfig } = await import('ragen-ts');
      await checkRegisteredEnv('CounterTask');
      console.log(JSON.stringify(envSpec('CounterTask').solve(resolveEnvConfig('CounterTask'), 3)));`;
    const r = await run(process.execPath, ['--input-type=module', '-e', check], { cwd: tmp });
    expect(JSON.parse(r.stdout)).toEqual(['+2', '+2', '+1']); // seed 3: target 2 + 3 mod 5 = 5
  }, 120_000);

  it('agent: the program runs through the gateway and reports its reward in ragen eval', async () => {
    scaffold('agent', 'adder');
    const r = await runCli('eval', '--preset', 'adder/preset.yaml', '--groups', '2', '--json');
    expect(r.err).not.toMatch(/crash|timed out/i);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out) as { episodes: number; metrics: Record<string, Record<string, number>> };
    expect(report.episodes).toBe(2);
    expect(report.metrics['MyAgent']!['episodes']).toBe(2);
  }, 180_000);

  it('mcp: a read of the file and the right number score 1 with the real filesystem server; a guess scores 0', async () => {
    scaffold('mcp', 'stock');
    const preset = readFileSync(join('stock', 'preset.yaml'), 'utf8');
    expect(preset).toContain(
      'server: {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", stock/files]}',
    );
    // the same server, started from this repository's devDependency instead of through npx (no registry in tests)
    const server = resolve(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
    const play = (actions: string) =>
      runCli(
        'play',
        'MCP',
        '--seed',
        '0',
        '--config',
        `server={"command": "node", "args": [${JSON.stringify(server)}, "stock/files"]}`,
        'tasks={"file": "stock/tasks.jsonl"}',
        'verifier={"module": "stock/verify.mjs"}',
        'allowedTools=["read_text_file"]',
        '--actions',
        actions,
      );
    const read = '<tool_call>{"name": "read_text_file", "arguments": {"path": "apples.txt"}}</tool_call>';
    const good = await play(`${read} || 42`);
    expect(good.code).toBe(0);
    expect(good.out).toMatch(/apples: 42/);
    expect(good.out).toMatch(/success true/);
    const guess = await play('42');
    expect(guess.out).toMatch(/success false/); // the right number without reading the file: no reward
  }, 120_000);

  it('refuses a folder that is not empty and an unknown kind, in one sentence each', async () => {
    mkdirSync('taken');
    writeFileSync(join('taken', 'x'), '');
    expect(() => scaffold('env', 'taken')).toThrow(/`taken` already exists and is not an empty folder/);
    const r = await runCli('new', 'agnet', 'x');
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/Unknown kind `agnet`.*Did you mean `agent`/);
  });
});
