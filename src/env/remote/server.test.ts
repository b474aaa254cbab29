// Hostile clients against the env server: each case gets its typed error (or a clean reap), is logged, and a
// bystander session stepping beside them keeps getting the same trajectory as an in-process env.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { invalidInfo, makeEnv, registerEnv, type Env } from '../../index.js';
import { EnvServer } from './index.js';
import { codeOf, RawClient } from './testing.js';

/**
 * A test env whose step takes `delayMs` (async), throws on the action "crash" and answers "bigint" with unserialisable
 * info.
 */
function testEnv(delayMs: number): Env {
  let t = 0;
  return {
    instruction: 'test',
    legend: '',
    actionNames: ['go', 'crash'],
    reset: () => ((t = 0), { observation: 'start', info: invalidInfo('', { actionIsValid: true }) }),
    step: async (action: string) => {
      if (action === 'crash') throw new Error('boom');
      if (action === 'bigint')
        return {
          observation: 'x',
          reward: 0,
          terminated: false,
          truncated: false,
          info: { success: false, actionIsValid: true, actionIsEffective: true, big: 1n as never },
        };
      await new Promise((r) => setTimeout(r, delayMs));
      t++;
      return {
        observation: `t=${t}`,
        reward: 1,
        terminated: t >= 2,
        truncated: false,
        info: { success: t >= 2, actionIsValid: true, actionIsEffective: true },
      };
    },
    render: () => `t=${t}`,
    close: () => {},
  };
}
const schema = z.object({ delayMs: z.number().default(0) });
registerEnv('RemoteTestEnv', {
  description: 'test',
  schema,
  maxActionsPerEpisode: 5,
  create: (c) => testEnv(c.delayMs),
});

const lines: string[] = [];
let server: EnvServer;
let base: string;

beforeAll(async () => {
  server = new EnvServer({
    envIds: ['FrozenLake', 'RemoteTestEnv'],
    port: 0,
    maxSessions: 6,
    maxMessageBytes: 64 * 1024,
    stepTimeoutS: 0.3,
    idleTimeoutS: 60,
    log: (l) => lines.push(l),
  });
  base = `ws://127.0.0.1:${await server.listen()}`;
});
afterAll(() => server.close());

/** A session playing FrozenLake seed 5 beside the hostile ones; its replies must equal an in-process env's. */
async function bystanderStep(client: RawClient, local: Env, action: string): Promise<void> {
  const r = await client.ask({ type: 'step', data: { text: action } });
  if (r.type !== 'observation') throw new Error(`bystander got ${JSON.stringify(r)}`);
  const l = await local.step(action);
  expect(r.data.observation.text).toBe(l.observation);
  expect(r.data.reward).toBe(l.reward);
}

describe('env server under hostile clients', () => {
  it('answers each bad message with its typed error, keeps the session, and never disturbs another session', async () => {
    const bystander = await RawClient.open(`${base}/FrozenLake`);
    const local = makeEnv('FrozenLake');
    await bystander.ask({ type: 'reset', data: { seed: 5 } });
    await local.reset({ seed: 5 });

    const c = await RawClient.open(`${base}/ws/FrozenLake`);
    const cases: [string | Buffer | object, string][] = [
      ['{"type": "reset", "da', 'INVALID_JSON'], // truncated
      [Buffer.from([0xff, 0xfe, 0x00, 0x9c]), 'INVALID_JSON'], // garbage bytes
      ['42', 'VALIDATION_ERROR'],
      ['null', 'VALIDATION_ERROR'],
      [{ type: 'jump', data: {} }, 'UNKNOWN_TYPE'],
      [{ data: {} }, 'UNKNOWN_TYPE'],
      [{ type: 'step', data: { text: 'Up' } }, 'RESET_NEEDED'], // before reset
      [{ type: 'step', data: 'Up' }, 'VALIDATION_ERROR'],
      [{ type: 'step', data: { text: 7 } }, 'VALIDATION_ERROR'],
      [{ type: 'reset', data: { seed: 'abc' } }, 'VALIDATION_ERROR'],
      [{ type: 'reset', data: { seed: 1.5 } }, 'VALIDATION_ERROR'],
      [{ type: 'reset', data: { mode: 'test' } }, 'VALIDATION_ERROR'],
      [{ type: 'reset', data: { options: { nope: 1 } } }, 'VALIDATION_ERROR'], // the env's own reset-option check
      [{ type: 'step', data: { text: 'x'.repeat(70 * 1024) } }, 'MESSAGE_TOO_LARGE'],
    ];
    for (const [i, [msg, code]] of cases.entries()) {
      expect(codeOf(await c.ask(msg)), `case ${i}: ${String(JSON.stringify(msg)).slice(0, 40)}`).toBe(code);
      await bystanderStep(bystander, local, ['Left', 'Down', 'Right', 'Up'][i % 4]!);
    }
    // The session survived all of it: a reset and a step work.
    expect(codeOf(await c.ask({ type: 'reset', data: { seed: 1 } }))).toBe('observation');
    expect(codeOf(await c.ask({ type: 'step', data: { text: 'Down' } }))).toBe('observation');
    const state = await c.ask({ type: 'state', data: {} });
    expect(state.type === 'state' && state.data.env).toBe('FrozenLake');
    expect(lines.some((l) => l.includes('INVALID_JSON'))).toBe(true);
    expect(lines.some((l) => l.includes('MESSAGE_TOO_LARGE'))).toBe(true);
    c.send({ type: 'close' });
    expect(await c.closed).toBe(1000);
    bystander.ws.close();
  });

  it('closes a connection whose message is over the hard frame cap (ws code 1009) and keeps serving others', async () => {
    const small = new EnvServer({ envIds: ['FrozenLake'], port: 0, maxMessageBytes: 1024, log: () => {} });
    const url = `ws://127.0.0.1:${await small.listen()}/FrozenLake`;
    const c = await RawClient.open(url);
    c.send({ type: 'step', data: { text: 'x'.repeat(17 << 20) } });
    expect(await c.closed).toBe(1009);
    const d = await RawClient.open(url);
    expect(codeOf(await d.ask({ type: 'reset', data: { seed: 0 } }))).toBe('observation');
    d.ws.close();
    await small.close();
  });

  it('reports a throwing env as EXECUTION_ERROR and ends the episode, and a slow async step as STEP_TIMEOUT closing the session', async () => {
    const c = await RawClient.open(`${base}/RemoteTestEnv`);
    await c.ask({ type: 'reset', data: { seed: 0 } });
    expect(codeOf(await c.ask({ type: 'step', data: { text: 'bigint' } }))).toBe('EXECUTION_ERROR'); // JSON cannot carry it
    expect(codeOf(await c.ask({ type: 'state', data: {} }))).toBe('state'); // the session still answers
    expect(codeOf(await c.ask({ type: 'step', data: { text: 'crash' } }))).toBe('EXECUTION_ERROR');
    expect(codeOf(await c.ask({ type: 'step', data: { text: 'go' } }))).toBe('RESET_NEEDED');
    expect(codeOf(await c.ask({ type: 'reset', data: { seed: 0 } }))).toBe('observation');
    expect(codeOf(await c.ask({ type: 'step', data: { text: 'go' } }))).toBe('observation');
    const last = await c.ask({ type: 'step', data: { text: 'go' } });
    expect(last.type === 'observation' && last.data.terminated && last.data.done).toBe(true);
    expect(codeOf(await c.ask({ type: 'step', data: { text: 'go' } }))).toBe('RESET_NEEDED'); // after the end
    c.ws.close();

    const slow = await RawClient.open(
      `${base}/RemoteTestEnv?config=${encodeURIComponent(JSON.stringify({ delayMs: 2000 }))}`,
    );
    await slow.ask({ type: 'reset', data: { seed: 0 } });
    const t0 = Date.now();
    expect(codeOf(await slow.ask({ type: 'step', data: { text: 'go' } }))).toBe('STEP_TIMEOUT');
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(await slow.closed).toBe(1011);
  });

  it('refuses unknown envs and bad configs with typed errors', async () => {
    for (const [path, code] of [
      ['/Nope', 'UNKNOWN_ENV'],
      ['/ws', 'UNKNOWN_ENV'], // two envs served: /ws must name one
      ['/%zz', 'UNKNOWN_ENV'],
      ['/FrozenLake?config=%7Bbad', 'CONFIG_ERROR'],
      [`/FrozenLake?config=${encodeURIComponent('{"sizee": 4}')}`, 'CONFIG_ERROR'],
      [`/FrozenLake?config=${encodeURIComponent('[1]')}`, 'CONFIG_ERROR'],
    ] as const) {
      const c = await RawClient.open(`${base}${path}`);
      expect(codeOf(await c.next()), path).toBe(code);
      expect(await c.closed).toBe(1008);
    }
  });

  it('replies CAPACITY_REACHED past maxSessions and reaps a client that vanished mid-episode', async () => {
    for (let t = 0; server.sessionCount > 0 && t < 100; t++) await new Promise((r) => setTimeout(r, 20)); // earlier tests' closes land
    expect(server.sessionCount).toBe(0);
    const open: RawClient[] = [];
    while (server.sessionCount < 6) {
      const c = await RawClient.open(`${base}/FrozenLake`);
      await c.ask({ type: 'reset', data: { seed: 0 } });
      open.push(c);
    }
    const extra = await RawClient.open(`${base}/FrozenLake`);
    const refusal = await extra.next();
    expect(codeOf(refusal)).toBe('CAPACITY_REACHED');
    expect(refusal.type === 'error' && refusal.data.max_sessions).toBe(6);
    expect(await extra.closed).toBe(1013);
    // A client vanishes mid-episode (TCP torn down without a close frame): its session is freed and logged.
    await open[0]!.ask({ type: 'step', data: { text: 'Down' } });
    open[0]!.ws.terminate();
    for (let t = 0; server.sessionCount > 5 && t < 100; t++) await new Promise((r) => setTimeout(r, 20));
    expect(server.sessionCount).toBe(5);
    expect(lines.some((l) => /closed by the client mid-episode/.test(l))).toBe(true);
    for (const c of open.slice(1)) c.ws.close();
  });

  it('survives non-HTTP garbage on its port, a bad WebSocket handshake, and a client flooding messages without waiting', async () => {
    const port = Number(new URL(base).port);
    await new Promise<void>((resolve) => {
      const sock = connect(port, '127.0.0.1', () => sock.end('\x00\x01garbage that is not HTTP\r\n\r\n'));
      sock.on('close', () => resolve());
      sock.on('error', () => resolve());
    });
    const answer = await new Promise<string>((resolve) => {
      let got = '';
      const sock = connect(port, '127.0.0.1', () =>
        sock.write(
          'GET /ws/FrozenLake HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: nope\r\n\r\n',
        ),
      );
      sock.on('data', (d) => (got += d.toString()));
      sock.on('close', () => resolve(got));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400/); // ws refuses the handshake; no session is made
    const flood = await RawClient.open(`${base}/FrozenLake`);
    for (let i = 0; i < 100; i++) flood.send({ type: 'state' });
    const replies = await Promise.all(Array.from({ length: 100 }, () => flood.next()));
    expect(replies.filter((r) => r.type === 'state').length).toBeGreaterThanOrEqual(32);
    expect(
      replies.some((r) => codeOf(r) === 'VALIDATION_ERROR' && r.type === 'error' && /waiting/.test(r.data.message)),
    ).toBe(true);
    flood.ws.close();
    const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { status: string };
    expect(health.status).toBe('healthy');
  });

  it('reaps idle sessions with IDLE_TIMEOUT', async () => {
    const idle = new EnvServer({ envIds: ['FrozenLake'], port: 0, idleTimeoutS: 0.2, log: (l) => lines.push(l) });
    const c = await RawClient.open(`ws://127.0.0.1:${await idle.listen()}/ws`);
    await c.ask({ type: 'reset', data: { seed: 0 } });
    const bye = await c.next(3000);
    expect(codeOf(bye)).toBe('IDLE_TIMEOUT');
    expect(await c.closed).toBe(1011);
    expect(idle.sessionCount).toBe(0);
    expect(lines.some((l) => /reaped after 0.2 s idle mid-episode/.test(l))).toBe(true);
    await idle.close();
  });
});
