// Issue 34 item 3: nothing an agent program starts outlives its episode, a child it detaches (its own session and
// group) or daemonises (a double fork: reparented to init, in a new session) included; other processes are left alone.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canTrackTree } from './process-tree.js';
import { runAgentEpisode } from './runner.js';
import type { Gateway } from './server.js';
import { tinyGateway } from './testing.js';

const dir = mkdtempSync(join(os.tmpdir(), 'ragen-tree-'));
let gateway: Gateway;

beforeAll(async () => {
  gateway = await tinyGateway({ maxTokens: 4 });
});
afterAll(async () => {
  await gateway.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A program that leaves a detached `sleep 120` and a daemonised one behind, writes their pids, then `rest`. */
function leaver(name: string, rest: string): string {
  const file = join(dir, `${name}.mjs`);
  writeFileSync(
    file,
    `import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const out = ${JSON.stringify(join(dir, name))};
const detached = spawn('sh', ['-c', 'exec sleep 120'], { detached: true, stdio: 'ignore' });
detached.unref();
// a daemon: the middle shell runs setsid's child in a new session and exits, so sleep is reparented away from us
spawn('sh', ['-c', 'setsid sh -c "sleep 120 & echo \\\\$! > ' + out + '.daemon" &'], { stdio: 'ignore' }).unref();
while (!existsSync(out + '.daemon')) await new Promise((r) => setTimeout(r, 20));
writeFileSync(out + '.pids', detached.pid + ' ' + Number(readFileSync(out + '.daemon', 'utf8')));
${rest}
`,
  );
  return `node ${JSON.stringify(file)}`;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return !/State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'utf8')); // a zombie is dead, only unreaped
  } catch {
    return false;
  }
};

async function gone(pids: number[]): Promise<boolean> {
  for (let i = 0; i < 40 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 50));
  return !pids.some(alive);
}

describe.runIf(canTrackTree)('what an agent program starts ends with its episode (item 3)', () => {
  it('item 3: a detached and a daemonised child of a program that exits are killed when its episode ends; an unrelated process is not', async () => {
    const bystander = spawn('sleep', ['120'], { detached: true, stdio: 'ignore' }); // the user's own, started meanwhile
    try {
      const cmd = leaver(
        'exits',
        `await fetch(process.env.RAGEN_REWARD_URL, { method: 'POST', body: JSON.stringify({ reward: 1 }) });`,
      );
      const out = await runAgentEpisode(
        gateway,
        { command: cmd, timeoutS: 30 },
        { episodeId: 'tree-exit', seed: 0, group: 0 },
      );
      expect([out.status, out.reward]).toEqual(['ok', 1]);
      const pids = readFileSync(join(dir, 'exits.pids'), 'utf8').split(' ').map(Number);
      expect(pids.every((p) => p > 0)).toBe(true);
      expect(await gone(pids)).toBe(true);
      expect(alive(bystander.pid!)).toBe(true);
    } finally {
      bystander.kill('SIGKILL');
    }
  }, 30_000);

  it('item 3: at the time budget, the program and what it detached or daemonised are killed', async () => {
    const cmd = leaver('hangs', 'await new Promise(() => setInterval(() => {}, 1000));');
    const out = await runAgentEpisode(
      gateway,
      { command: cmd, timeoutS: 2 },
      { episodeId: 'tree-timeout', seed: 0, group: 0 },
    );
    expect(out.status).toBe('timeout');
    expect(existsSync(join(dir, 'hangs.pids'))).toBe(true);
    expect(await gone(readFileSync(join(dir, 'hangs.pids'), 'utf8').split(' ').map(Number))).toBe(true);
  }, 30_000);

  it('item 3: when the trainer exits mid-episode, what its programs detached or daemonised goes with them', async () => {
    const script = join(dir, 'trainer.ts');
    const cmd = leaver('orphans', 'await new Promise(() => setInterval(() => {}, 1000));');
    // A stand-in trainer: a gateway that only hands out URLs, one program that hangs, then exit once it has its
    // children.
    writeFileSync(
      script,
      `import { existsSync } from 'node:fs';
import { runAgentEpisode } from ${JSON.stringify(join(import.meta.dirname, 'runner.ts'))};
const gateway = { open: () => ({ baseUrl: 'http://127.0.0.1:9/v1', rewardUrl: 'http://127.0.0.1:9/r' }), finish: () => ({ id: 'e', calls: [], reward: undefined, refusedCalls: 0, duplicateRewards: 0 }) };
void runAgentEpisode(gateway as never, { command: ${JSON.stringify(cmd)}, timeoutS: 600 }, { episodeId: 'e', seed: 0, group: 0 });
const wait = setInterval(() => existsSync(${JSON.stringify(join(dir, 'orphans.pids'))}) && (clearInterval(wait), process.exit(0)), 20);
`,
    );
    const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
    const code = await new Promise<number | null>((resolve) =>
      spawn(tsx, [script], { stdio: 'inherit' }).once('exit', resolve),
    );
    expect(code).toBe(0);
    expect(await gone(readFileSync(join(dir, 'orphans.pids'), 'utf8').split(' ').map(Number))).toBe(true);
  }, 60_000);
});
