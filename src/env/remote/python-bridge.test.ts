// The Python bridge (python/ragen_env_bridge.py, stdlib only) serving our two example Python envs, one in
// RAGEN's BaseEnv style and one in Gymnasium's: checkEnv, determinism, typed errors, and StarPO steps driving it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../envs/index.js';
import { EnvGroups } from '../../agent/index.js';
import { KLController } from '../../algo/index.js';
import { envGroupsOptions, loadConfig } from '../../config/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../../tokenizer/index.js';
import { RecordingEngine } from '../../train/testing.js';
import { starpoStep } from '../../train/index.js';
import { checkEnv } from '../check-env.js';
import { pixelAt } from '../image.js';
import { makeEnv } from '../registry.js';
import { benchRemote } from '../../bench/remote.js';
import { registerRemoteEnv, RemoteEnv } from './index.js';
import { codeOf, RawClient } from './testing.js';

/** The interpreter: RAGEN_PYTHON, else python3 on PATH (the bridge needs only the standard library). */
const PYTHON = process.env.RAGEN_PYTHON ?? 'python3';
const root = fileURLToPath(new URL('../../../', import.meta.url));
let child: ChildProcess;
let base: string;
const logs: string[] = [];

/** Starts the bridge on the example envs with `flags`; resolves with its process and ws:// base. */
async function startBridge(flags: string[]): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(
    PYTHON,
    ['python/ragen_env_bridge.py', '--env', 'python/example_envs.py:ENVS', '--port', '0', ...flags],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  createInterface({ input: proc.stderr! }).on('line', (l) => logs.push(l));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the bridge did not start within 15 s: ${logs.join('\n')}`)),
      15_000,
    );
    proc.once('exit', (code) => reject(new Error(`the bridge exited with ${code}: ${logs.join('\n')}`)));
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      const m = /ws:\/\/127\.0\.0\.1:(\d+)\//.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return { proc, url: `ws://127.0.0.1:${port}` };
}

beforeAll(async () => {
  const bridge = await startBridge(['--max-sessions', '12', '--max-message-bytes', '200000']);
  child = bridge.proc;
  base = bridge.url;
}, 20_000);
afterAll(() => void child?.kill());

describe('Python bridge', () => {
  it('serves a RAGEN BaseEnv-style env that passes checkEnv through RemoteEnv', async () => {
    const url = `${base}/PyCorridor`;
    await checkEnv(new RemoteEnv(url), { seeds: [0, 1], make: () => new RemoteEnv(url) });
  });

  it('serves a Gymnasium-style env that passes checkEnv through RemoteEnv', async () => {
    const url = `${base}/PySum`;
    await checkEnv(new RemoteEnv(url), { seeds: [0, 1], solve: () => ['0', '1', '2'], make: () => new RemoteEnv(url) });
  });

  it('maps both APIs onto the Env contract: names to ids, snake_case info, terminated vs truncated, config', async () => {
    const corridor = new RemoteEnv(`${base}/PyCorridor`, { config: { length: 3 } });
    const r = await corridor.reset({ seed: 0 });
    expect(r.observation).toMatch(/^[P_]{2}G$/);
    expect(corridor.actionNames).toEqual(['Left', 'Right']);
    expect(corridor.instruction).toMatch(/Walk Right/);
    const invalid = await corridor.step('up');
    expect(invalid.info).toMatchObject({ actionIsValid: false, reason: expect.stringContaining('not an action') });
    let last = await corridor.step('right');
    if (!last.terminated) last = await corridor.step('RIGHT');
    expect(last).toMatchObject({
      terminated: true,
      truncated: false,
      info: { success: true, actionIsValid: true, actionIsEffective: true },
    });
    corridor.close();

    const sum = new RemoteEnv(`${base}/PySum`);
    await sum.reset({ seed: 4 });
    const [a, b] = sum.render().match(/\d+/g)!.map(Number);
    expect(await sum.step('1000')).toMatchObject({
      reward: 0,
      terminated: false,
      truncated: false,
      info: { tries: 1, success: false },
    });
    expect(await sum.step(String(a! + b!))).toMatchObject({
      reward: 1,
      terminated: true,
      truncated: false,
      info: { success: true },
    });
    await sum.reset({ seed: 4 });
    await sum.step('1000');
    await sum.step('1000');
    expect(await sum.step('1000')).toMatchObject({ terminated: false, truncated: true });
    sum.close();
  });

  it("sends a Python env's images as PNGs RemoteEnv decodes to its pixels, and passes checkEnv with them", async () => {
    const url = `${base}/PyCorridorImage`;
    await checkEnv(new RemoteEnv(url), { seeds: [0, 1], make: () => new RemoteEnv(url) });
    const id = await registerRemoteEnv(`remote:${url}`);
    const env = makeEnv(id, { length: 5 });
    const r = await env.reset({ seed: 0 });
    expect(env.observationSpace).toEqual({ text: true, image: { width: 20, height: 4 } }); // 5 cells of 4 pixels
    // The text is the corridor; the image draws cell i in pixels 4i..4i+3: red player, yellow goal, grey floor.
    const colours: Record<string, number[]> = { P: [200, 30, 30], G: [240, 200, 0], _: [120, 120, 120] };
    const image = r.images![0]!;
    for (const [i, cell] of [...r.observation].entries())
      for (const y of [0, 3])
        expect([...pixelAt(image, 4 * i + 2, y)], `${r.observation} cell ${i}`).toEqual(colours[cell]);
    const invalid = await env.step('Up');
    expect(invalid.images).toEqual(r.images); // an invalid action repeats the image, as it repeats the text
    const moved = await env.step('Right');
    expect(moved.images![0]!.data).not.toEqual(image.data);
    await env.close();
  });

  it('answers hostile clients with the same typed errors as ragen env serve', async () => {
    const c = await RawClient.open(`${base}/PySum`);
    for (const [msg, code] of [
      ['{"type": "reset", "da', 'INVALID_JSON'],
      ['[]', 'VALIDATION_ERROR'],
      [{ type: 'jump' }, 'UNKNOWN_TYPE'],
      [{ type: 'step', data: { text: '1' } }, 'RESET_NEEDED'],
      [{ type: 'reset', data: { seed: 'x' } }, 'VALIDATION_ERROR'],
      [{ type: 'step', data: { text: 'x'.repeat(300_000) } }, 'MESSAGE_TOO_LARGE'],
      [{ type: 'reset', data: { seed: 1 } }, 'observation'],
      [{ type: 'step', data: { text: 'raise' } }, 'EXECUTION_ERROR'],
      [{ type: 'step', data: { text: '1' } }, 'RESET_NEEDED'],
    ] as const) {
      expect(codeOf(await c.ask(msg)), JSON.stringify(msg).slice(0, 40)).toBe(code);
    }
    c.ws.terminate(); // vanishes: the bridge frees the session
    for (const [path, code] of [
      ['/Nope', 'UNKNOWN_ENV'],
      [`/PySum?config=${encodeURIComponent('{"hgh": 3}')}`, 'CONFIG_ERROR'],
    ] as const) {
      const d = await RawClient.open(`${base}${path}`);
      expect(codeOf(await d.next())).toBe(code);
    }
    const many = await Promise.all(Array.from({ length: 13 }, () => RawClient.open(`${base}/PySum`)));
    const refusals = (await Promise.all(many.map((m) => m.next(300).then(codeOf, () => 'open')))).filter(
      (x) => x === 'CAPACITY_REACHED',
    );
    expect(refusals.length).toBeGreaterThanOrEqual(1);
    for (const m of many) m.ws.close();
    expect(logs.some((l) => /EXECUTION_ERROR|raised/.test(l))).toBe(true);
  });

  it('cuts a slow step off with STEP_TIMEOUT and reaps idle sessions with IDLE_TIMEOUT', async () => {
    const bridge = await startBridge(['--step-timeout', '0.3', '--idle-timeout', '0.4']);
    try {
      const slow = await RawClient.open(`${bridge.url}/PySum`);
      await slow.ask({ type: 'reset', data: { seed: 0 } });
      const t0 = Date.now();
      expect(codeOf(await slow.ask({ type: 'step', data: { text: 'sleep' } }))).toBe('STEP_TIMEOUT');
      expect(Date.now() - t0).toBeLessThan(1500); // the env sleeps 1 s; the code above is the proof, this bounds the wait
      expect(await slow.closed).toBe(1011);
      const idle = await RawClient.open(`${bridge.url}/PySum`);
      await idle.ask({ type: 'reset', data: { seed: 0 } });
      expect(codeOf(await idle.next(3000))).toBe('IDLE_TIMEOUT');
      expect(await idle.closed).toBe(1011);
    } finally {
      bridge.proc.kill();
    }
  }, 20_000);

  it('is load-tested by benchRemote as a remote-only env (no in-process run)', async () => {
    const r = await benchRemote({ id: 'PyCorridor', url: base, sessions: 6, seconds: 0.3, remoteOnly: true });
    expect(r.errors).toBe(0);
    expect(r.steps).toBeGreaterThan(0);
    expect(r.inProcessStepsPerSecond).toBeNull();
  });

  it('is stepped by StarPO steps of the TypeScript trainer (agent loop, rewards, update)', async () => {
    const tag = `remote:${base}/PyCorridor`;
    await registerRemoteEnv(tag);
    const config = loadConfig({
      overrides: [
        'logging.console=none',
        `env.train=[{tag: "${tag}", groups: 2, groupSize: 4}]`,
        `env.val=[{tag: "${tag}", groups: 2}]`,
        'agent.maxTurns=1',
        'agent.maxActionsPerTurn=5',
        'agent.maxNewTokens=60',
        'trainer.miniBatchSize=8',
        'trainer.microBatchSize=8',
        'trainer.collapse.every=0',
      ],
    });
    const tokenizer = loadTokenizer(tinyTokenizerDir());
    const script = (_prompt: string, i: number) =>
      `go</think><answer>${i % 4 === 3 ? 'Left' : 'Right || Right || Right || Right || Right'}</answer><|im_end|>`;
    const groups = new EnvGroups(envGroupsOptions(config, 'train'));
    const engine = new RecordingEngine(tokenizer, script);
    const ctx = {
      config,
      engine,
      tokenizer,
      agent: config.agent,
      groups,
      kl: new KLController({ type: 'fixed', klCoef: config.algo.kl.coef }),
      collapseEma: {},
    };
    try {
      for (let step = 1; step <= 2; step++) {
        const out = await starpoStep(ctx, step);
        expect(out.metrics['train/success']).toBeGreaterThan(0); // Right walks reach the goal in the Python env
        expect(out.metrics['train/success']).toBeLessThan(1); // the Left walkers do not
        expect(Number.isFinite(out.metrics['actor/pg_loss'])).toBe(true);
        expect(out.rollout.samples.map((s) => s.score).some((x) => x > 0.5)).toBe(true);
      }
      expect(engine.backwards.length).toBeGreaterThan(0);
    } finally {
      await groups.close();
    }
  }, 30_000);
});

describe('Python bridge token and logs', () => {
  it('checks RAGEN_ENV_TOKEN at the upgrade and on /metadata, and refuses 0.0.0.0 without one', async () => {
    const guarded = await startBridge(['--token', 'py-token']);
    try {
      const port = new URL(guarded.url).port;
      await expect(
        new RemoteEnv(`${guarded.url}/PySum`, { connectAttempts: 1, log: () => {} }).reset({ seed: 0 }),
      ).rejects.toThrow(/HTTP 401/);
      const env = new RemoteEnv(`${guarded.url}/PySum`, { token: 'py-token' });
      expect((await env.reset({ seed: 0 })).observation).toMatch(/\S/);
      env.close();
      expect((await fetch(`http://127.0.0.1:${port}/metadata`)).status).toBe(401);
      expect(
        (await fetch(`http://127.0.0.1:${port}/metadata`, { headers: { authorization: 'Bearer py-token' } })).status,
      ).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    } finally {
      guarded.proc.kill();
    }
    await expect(startBridge(['--host', '0.0.0.0'])).rejects.toThrow(
      /beyond loopback, needs a token: set RAGEN_ENV_TOKEN/,
    );
  });

  it('escapes control characters of client bytes in its log', async () => {
    const { connect } = await import('node:net');
    const from = logs.length;
    const port = Number(new URL(base).port);
    // A raw upgrade whose request target holds an OSC sequence (a well-behaved client would percent-encode it).
    await new Promise<void>((resolve) => {
      const sock = connect(port, '127.0.0.1', () => {
        sock.write(
          'GET /\u001b]0;pwned\u0007 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        );
      });
      sock.on('data', () => {});
      sock.on('close', () => resolve());
      sock.on('error', () => resolve());
      setTimeout(() => (sock.destroy(), resolve()), 2000);
    });
    await new Promise((r) => setTimeout(r, 100));
    const fresh = logs.slice(from);
    expect(fresh.some((l) => l.includes('\\x1b]0;pwned\\x07'))).toBe(true);
    for (const l of fresh) expect(l).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });
});
