// The env server's shared token (checked at the WebSocket upgrade and on /metadata, /schema), its refusal to listen
// beyond loopback without one, and log lines that never carry a client's control characters.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import '../../envs/index.js';
import { EnvServer, RemoteEnv, RemoteEnvError, registerRemoteEnv } from './index.js';
import { RawClient } from './testing.js';

const TOKEN = 's3cret-token';
const lines: string[] = [];
let server: EnvServer;
let port: number;
beforeAll(async () => {
  server = new EnvServer({ envIds: ['Bandit'], port: 0, token: TOKEN, log: (l) => lines.push(l) });
  port = await server.listen();
});
afterAll(() => server.close());

/** The HTTP status of a WebSocket upgrade sent with `headers` (101 when it is accepted). */
function upgradeStatus(headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/Bandit`, { headers });
    ws.once('open', () => (ws.close(), resolve(101)));
    ws.once('unexpected-response', (_req, res) => (resolve(res.statusCode ?? 0), ws.terminate()));
    ws.once('error', () => {});
  });
}

describe('the env server token', () => {
  it('refuses a session without the token or with a wrong one (401), and takes the right one', async () => {
    expect(await upgradeStatus({})).toBe(401);
    expect(await upgradeStatus({ authorization: 'Bearer wrong' })).toBe(401);
    expect(await upgradeStatus({ authorization: `Bearer ${TOKEN}x` })).toBe(401);
    expect(await upgradeStatus({ authorization: `Bearer ${TOKEN}` })).toBe(101);
    expect(lines.some((l) => /refused a session from .*missing or wrong token/.test(l))).toBe(true);
    expect(lines.join('\n')).not.toContain(TOKEN);
  });

  it('guards /metadata and /schema, and leaves /health open for probes', async () => {
    const get = async (path: string, token?: string) =>
      (await fetch(`http://127.0.0.1:${port}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} }))
        .status;
    expect(await get('/metadata')).toBe(401);
    expect(await get('/schema', 'nope')).toBe(401);
    expect(await get('/metadata', TOKEN)).toBe(200);
    expect(await get('/health')).toBe(200);
  });

  it('a RemoteEnv and a remote: id send the token (option or RAGEN_ENV_TOKEN); without it the error says so', async () => {
    const bare = new RemoteEnv(`ws://127.0.0.1:${port}/Bandit`, { connectAttempts: 1, log: () => {} });
    await expect(bare.reset({ seed: 1 })).rejects.toThrow(/HTTP 401 \(it wants its token: set RAGEN_ENV_TOKEN/);
    const env = new RemoteEnv(`ws://127.0.0.1:${port}/Bandit`, { token: TOKEN });
    expect((await env.reset({ seed: 1 })).observation).toMatch(/\S/);
    env.close();
    const err = await registerRemoteEnv(`remote:ws://127.0.0.1:${port}/Bandit`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteEnvError);
    expect((err as RemoteEnvError).code).toBe('UNAUTHORIZED');
    expect((err as Error).message).toMatch(/wants its token .*set RAGEN_ENV_TOKEN/);
    process.env['RAGEN_ENV_TOKEN'] = TOKEN;
    try {
      expect(await registerRemoteEnv(`remote:ws://127.0.0.1:${port}/Bandit`)).toBe(`Bandit@127.0.0.1:${port}`);
      const viaEnv = new RemoteEnv(`ws://127.0.0.1:${port}/Bandit`);
      expect((await viaEnv.reset({ seed: 2 })).observation).toMatch(/\S/);
      viaEnv.close();
    } finally {
      delete process.env['RAGEN_ENV_TOKEN'];
    }
  });

  it('refuses to listen beyond loopback without a token, unless --insecure', () => {
    expect(() => new EnvServer({ envIds: ['Bandit'], host: '0.0.0.0' })).toThrow(
      /would listen on 0\.0\.0\.0, beyond loopback, with no token.*RAGEN_ENV_TOKEN \(or --token\).*--insecure/,
    );
    expect(() => new EnvServer({ envIds: ['Bandit'], host: '0.0.0.0', token: TOKEN })).not.toThrow();
    expect(() => new EnvServer({ envIds: ['Bandit'], host: '0.0.0.0', insecure: true })).not.toThrow();
    expect(() => new EnvServer({ envIds: ['Bandit'], host: '127.0.0.1' })).not.toThrow();
  });
});

describe('log lines', () => {
  it('escape the control characters of client bytes (no terminal escape sequence reaches the log)', async () => {
    const open = new EnvServer({ envIds: ['Bandit'], port: 0, log: (l) => lines.push(l) });
    const p = await open.listen();
    try {
      lines.length = 0;
      const c = await RawClient.open(`ws://127.0.0.1:${p}/Bandit`);
      await c.ask('\u001b]0;pwned\u0007\r\u009b2J not json');
      c.ws.close();
      const named = await RawClient.open(`ws://127.0.0.1:${p}/ws?env=${encodeURIComponent('\u001b]0;x\u0007')}`);
      await named.next();
      await new Promise((r) => setTimeout(r, 50));
      expect(lines.length).toBeGreaterThanOrEqual(2);
      for (const l of lines) expect(l).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
      expect(lines.join('\n')).toContain('\\x1b]0;pwned\\x07');
    } finally {
      await open.close();
    }
  });
});
