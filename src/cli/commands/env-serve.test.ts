// `ragen env serve` and `ragen bench envs --remote` on the command line: help, and user errors exit 2 naming the fix.
// (The serving path itself runs in a child process in src/env/remote/remote-env.test.ts.)
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
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
