// RemoteEnv's failure policy: a server killed mid-episode gives CONNECTION_LOST at once (never a hang), reset
// reconnects to a restarted server, a silent server gives TIMEOUT, a refused connection CONNECTION_FAILED.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { ConfigError, EnvGroups, ResetNeededError } from '../../index.js';
import { EnvServer, registerRemoteEnv, RemoteEnv, RemoteEnvError } from './index.js';

const quiet = { log: () => {} };
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
});

/** `ragen env serve <ids> --port 0` in a child process (a real process to kill); resolves with it and its port. */
async function serveInChild(ids: string[]): Promise<{ child: ChildProcess; port: number }> {
  const script = `const { main } = await import(${JSON.stringify(new URL('../../cli/main.ts', import.meta.url).pathname)}); await main(['env', 'serve', ${ids.map((i) => JSON.stringify(i)).join(', ')}, '--port', '0']);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanup.push(() => child.kill('SIGKILL'));
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the child server did not start within 20 s')), 20_000);
    lines.on('line', (line) => {
      const m = /ws:\/\/127\.0\.0\.1:(\d+)\//.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return { child, port };
}

describe('RemoteEnv failure policy', () => {
  it('a server process killed mid-episode gives the trainer CONNECTION_LOST at once, and reset reconnects to a restarted server', async () => {
    const { child, port } = await serveInChild(['FrozenLake']);
    const tag = `remote:ws://127.0.0.1:${port}/FrozenLake`;
    await registerRemoteEnv(tag, quiet);
    const groups = new EnvGroups({ tags: [{ env: tag, nGroups: 1 }], groupSize: 2, mode: 'train', seed: 2 });
    await groups.reset();
    await groups.step(groups.slots[0]!, ['Down']);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const t0 = Date.now();
    const err = await groups.step(groups.slots[1]!, ['Down']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteEnvError);
    expect((err as RemoteEnvError).code).toBe('CONNECTION_LOST');
    expect((err as Error).message).toMatch(/episode is lost/);
    expect(Date.now() - t0).toBeLessThan(1000);
    // Same port, new server: reset opens new sessions; episodes start over from their seeds.
    const server = new EnvServer({ envIds: ['FrozenLake'], port, ...quiet });
    await server.listen();
    cleanup.push(() => server.close());
    const observations = await groups.reset(2);
    expect(observations[0]).toContain('P');
    expect((await groups.step(groups.slots[1]!, ['Down'])).validCount).toBe(1);
    await groups.close();
  }, 30_000);

  it('a server that dies while a step is waiting rejects that step at once (no hang)', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => wss.once('listening', r));
    cleanup.push(() => new Promise((r) => wss.close(r)));
    wss.on('connection', (ws) => {
      ws.on('message', (raw) => {
        const msg = JSON.parse(raw.toString());
        if (msg.type === 'reset') {
          ws.send(
            JSON.stringify({
              type: 'observation',
              data: {
                observation: { text: 'start' },
                reward: null,
                done: false,
                terminated: false,
                truncated: false,
                info: { success: false, actionIsValid: true, actionIsEffective: true },
                render: 'start',
                actionNames: ['a'],
                episode_id: '1',
                step_count: 0,
              },
            }),
          );
        } else {
          setTimeout(() => (ws as unknown as { _socket: { destroy(): void } })._socket.destroy(), 50); // dies mid-step
        }
      });
    });
    const port = (wss.address() as { port: number }).port;
    const env = new RemoteEnv(`ws://127.0.0.1:${port}/Whatever`, quiet);
    await env.reset({ seed: 0 });
    const err = await env.step('a').catch((e: unknown) => e);
    expect((err as RemoteEnvError).code).toBe('CONNECTION_LOST');
  });

  it("talks to a server that speaks only OpenEnv's part, with its own action and observation fields", async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => wss.once('listening', r));
    cleanup.push(() => new Promise((r) => wss.close(r)));
    wss.on('connection', (ws) => {
      let t = 0;
      ws.on('message', (raw) => {
        const msg = JSON.parse(raw.toString());
        if (msg.type === 'reset') t = 0;
        else t++;
        // OpenEnv's echo env: action {message}, observation {echoed_message, message_length}, then reward and done.
        const echoed = `t=${t} ${msg.data.message ?? ''}`;
        ws.send(
          JSON.stringify({
            type: 'observation',
            data: {
              observation: { echoed_message: echoed, message_length: echoed.length },
              reward: msg.type === 'reset' ? null : 0.5,
              done: t >= 2,
            },
          }),
        );
      });
    });
    const env = new RemoteEnv(`ws://127.0.0.1:${(wss.address() as { port: number }).port}/ws`, {
      ...quiet,
      actionKey: 'message',
      observationKey: 'echoed_message',
    });
    expect(await env.reset({ seed: 0 })).toEqual({
      observation: 't=0 ',
      info: { success: false, actionIsValid: true, actionIsEffective: true },
    });
    expect(await env.step('a')).toMatchObject({
      observation: 't=1 a',
      reward: 0.5,
      terminated: false,
      truncated: false,
    });
    expect(await env.step('b')).toMatchObject({ observation: 't=2 b', terminated: true, truncated: false });
    expect(env.render()).toBe('t=2 b');
    env.close();
  });

  it('a server that never answers gives TIMEOUT after timeoutS, and an unreachable one CONNECTION_FAILED after its attempts', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => wss.once('listening', r));
    cleanup.push(() => new Promise((r) => wss.close(r)));
    const port = (wss.address() as { port: number }).port;
    const env = new RemoteEnv(`ws://127.0.0.1:${port}/Silent`, { ...quiet, timeoutS: 0.3 });
    const t0 = Date.now();
    const err = await env.reset({ seed: 0 }).catch((e: unknown) => e);
    expect((err as RemoteEnvError).code).toBe('TIMEOUT');
    expect(Date.now() - t0).toBeLessThan(2000);

    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
    const logs: string[] = [];
    const gone = new RemoteEnv(`ws://127.0.0.1:${port}/Silent`, { log: (l) => logs.push(l), connectAttempts: 2 });
    const refused = await gone.reset({ seed: 0 }).catch((e: unknown) => e);
    expect((refused as RemoteEnvError).code).toBe('CONNECTION_FAILED');
    expect((refused as Error).message).toMatch(/ragen env serve/);
    expect(logs.some((l) => /retrying/.test(l))).toBe(true);
  });

  it('reset opens a new session after the server reaped an idle one, without an error', async () => {
    const server = new EnvServer({ envIds: ['FrozenLake'], port: 0, idleTimeoutS: 0.15, ...quiet });
    const port = await server.listen();
    cleanup.push(() => server.close());
    const logs: string[] = [];
    const env = new RemoteEnv(`ws://127.0.0.1:${port}/FrozenLake`, { log: (l) => logs.push(l) });
    const first = await env.reset({ seed: 1 });
    await new Promise((r) => setTimeout(r, 600)); // reaped meanwhile
    expect(server.stats.reaped).toBe(1);
    expect(await env.reset({ seed: 1 })).toEqual(first);
    expect(server.stats.sessionsOpened).toBe(2);
    expect(logs.some((l) => /reconnecting .*IDLE_TIMEOUT/.test(l))).toBe(true);
    env.close();
  });

  it('maps the server errors a caller can fix: step before reset is ResetNeededError, a bad config ConfigError', async () => {
    const server = new EnvServer({ envIds: ['FrozenLake'], port: 0, ...quiet });
    const port = await server.listen();
    cleanup.push(() => server.close());
    await expect(new RemoteEnv(`ws://127.0.0.1:${port}/FrozenLake`, quiet).step('Down')).rejects.toBeInstanceOf(
      ResetNeededError,
    );
    const bad = new RemoteEnv(`ws://127.0.0.1:${port}/FrozenLake`, { ...quiet, config: { size: 'huge' } });
    await expect(bad.reset({ seed: 0 })).rejects.toBeInstanceOf(ConfigError);
    // remote: ids: unknown env names and unknown config keys are ConfigErrors naming the fix.
    await expect(registerRemoteEnv(`remote:ws://127.0.0.1:${port}/Sokobam`)).rejects.toThrow(/serves FrozenLake/);
    const id = await registerRemoteEnv(`remote:ws://127.0.0.1:${port}/FrozenLake`);
    expect(id).toBe(`FrozenLake@127.0.0.1:${port}`);
    expect(
      () =>
        new EnvGroups({
          tags: [{ env: `remote:ws://127.0.0.1:${port}/FrozenLake`, nGroups: 1, config: { sizee: 4 } }],
          groupSize: 1,
          mode: 'train',
          seed: 0,
        }),
    ).toThrow(/Did you mean `size`/);
    // Config values travel to the server: a 3x3 lake comes back.
    const small = new EnvGroups({
      tags: [{ env: `remote:ws://127.0.0.1:${port}/FrozenLake`, nGroups: 1, config: { size: 3 } }],
      groupSize: 1,
      mode: 'train',
      seed: 0,
    });
    const [obs] = await small.reset();
    expect(small.slots[0]!.env.render().trim().split('\n')).toHaveLength(3);
    expect(obs).toContain('P');
    await small.close();
  });
});
