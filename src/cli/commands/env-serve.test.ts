// `ragen env serve` and `ragen bench envs --remote` on the command line: help, and user errors exit 2 naming the fix;
// `ragen play` and `ragen eval` on `remote:` ids give what they give on local ids.
// (The serving path itself runs in a child process in src/env/remote/remote-env.test.ts.)
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { EnvServer } from '../../env/remote/index.js';
import { runCli } from '../testing.js';

describe('ragen env serve', () => {
  it('--help explains the command with examples', async () => {
    const { code, out } = await runCli('env', 'serve', '--help');
    expect(code).toBe(0);
    expect(out).toMatch(/--max-sessions/);
    expect(out).toMatch(/remote:ws:\/\/127\.0\.0\.1:8765\/SimpleSokoban/);
  });

  it.each([
    [['env', 'serve', 'FrozenLak'], /Did you mean `FrozenLake`/],
    [['env', 'serve', 'FrozenLake', '--port', '70000'], /Bad --port `70000`/],
    [['env', 'serve', 'FrozenLake', '--max-sessions', '0'], /Bad --max-sessions/],
    [['env', 'serve', 'FrozenLake', '--step-delay-ms', '-5'], /Bad --step-delay-ms `-5`/],
    [['bench', 'envs', '--remote', '--url', 'http://x/'], /Bad --url/],
  ])('ragen %j exits 2 with a message naming the fix', async (argv, message) => {
    const { code, err } = await runCli(...argv);
    expect(code).toBe(2);
    expect(err).toMatch(message);
  });

  it('a port in use exits 2 and says to pick another', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const { code, err } = await runCli('env', 'serve', 'FrozenLake', '--port', String(port));
      expect(code).toBe(2);
      expect(err).toMatch(new RegExp(`Port ${port} on 127.0.0.1 is in use`));
    } finally {
      blocker.close();
    }
  });
});

describe('remote: ids on the command line', () => {
  it('ragen play and ragen eval on a served env give the same output as on the local env', async () => {
    const server = new EnvServer({ envIds: ['SimpleSokoban'], port: 0, log: () => {} });
    const port = await server.listen();
    const tag = `remote:ws://127.0.0.1:${port}/SimpleSokoban`;
    try {
      const local = await runCli('play', 'SimpleSokoban', '--seed', '3', '--actions', 'Up || Left || Down', '--json');
      const remote = await runCli('play', tag, '--seed', '3', '--actions', 'Up || Left || Down', '--json');
      expect(remote.code).toBe(0);
      expect({ ...JSON.parse(remote.out), envId: 'SimpleSokoban' }).toEqual(JSON.parse(local.out));
      const evalLocal = await runCli('eval', '--env', 'SimpleSokoban', '--policy', 'random', '--groups', '3', '--json');
      const evalRemote = await runCli('eval', '--env', tag, '--policy', 'random', '--groups', '3', '--json');
      expect(evalRemote.code).toBe(0);
      const metrics = (run: { out: string }) => Object.values(JSON.parse(run.out).metrics);
      expect(metrics(evalRemote)).toEqual(metrics(evalLocal));
      expect(server.stats.steps).toBeGreaterThan(3);
    } finally {
      await server.close();
    }
  });
});
