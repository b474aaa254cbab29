// Issue 34, item 2: one exposure policy for every server we ship (serve, env serve, dashboard, retrieval serve, the
// training gateway): loopback by default; beyond loopback a key/token, or --insecure said on stderr in one line.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Gateway } from '../gateway/index.js';
import { localServeTarget } from '../serve/index.js';
import { TINY_MODEL_DIR } from '../serve/testing.js';
import { checkExposure } from '../util/index.js';
import { runCli } from './testing.js';

const root = mkdtempSync(join(tmpdir(), 'ragen-exposure-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** `ragen <argv>` in a child process (tsx) until its stderr matches `until` (then SIGTERM) or `ms` pass. */
function startCli(
  argv: string[],
  until: RegExp,
  ms = 120_000,
): Promise<{ err: string; matched: boolean; code: number | null }> {
  const script = `const { main } = await import(${JSON.stringify(resolve('src/cli/main.ts'))}); process.exitCode = await main(${JSON.stringify(argv)});`;
  const env = { ...process.env };
  delete env['RAGEN_API_KEY'];
  delete env['RAGEN_ENV_TOKEN'];
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env,
    });
    let err = '';
    let matched = false;
    child.stderr.on('data', (d: Buffer) => {
      err += String(d);
      if (!matched && until.test(err)) {
        matched = true;
        child.kill('SIGTERM');
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('close', (code) => (clearTimeout(timer), done({ err, matched, code })));
  });
}

/** Runs `fn` with RAGEN_API_KEY and RAGEN_ENV_TOKEN unset (a developer's shell may set them). */
async function withoutSecrets<T>(fn: () => Promise<T>): Promise<T> {
  const saved = { key: process.env['RAGEN_API_KEY'], token: process.env['RAGEN_ENV_TOKEN'] };
  delete process.env['RAGEN_API_KEY'];
  delete process.env['RAGEN_ENV_TOKEN'];
  try {
    return await fn();
  } finally {
    if (saved.key !== undefined) process.env['RAGEN_API_KEY'] = saved.key;
    if (saved.token !== undefined) process.env['RAGEN_ENV_TOKEN'] = saved.token;
  }
}

describe('item 2: the exposure policy (checkExposure)', () => {
  it('item 2: loopback or a given key passes; --insecure beyond loopback returns one warning line; otherwise a sentence naming the flags', () => {
    const key = { noun: 'API key', how: '--api-key (or RAGEN_API_KEY)' };
    for (const host of ['127.0.0.1', 'localhost', '::1', '127.3.2.1'])
      expect(
        checkExposure({ server: 'ragen serve', host, secret: { ...key, given: false }, insecure: false }),
      ).toBeUndefined();
    expect(
      checkExposure({ server: 'ragen serve', host: '0.0.0.0', secret: { ...key, given: true }, insecure: false }),
    ).toBeUndefined();
    expect(
      checkExposure({
        server: 'ragen serve',
        host: '0.0.0.0',
        port: 8000,
        secret: { ...key, given: false },
        insecure: true,
      }),
    ).toBe(
      'ragen serve: listening on 0.0.0.0:8000 with --insecure and no API key: anyone who can reach this address can use it.',
    );
    expect(() =>
      checkExposure({ server: 'ragen serve', host: '0.0.0.0', secret: { ...key, given: false }, insecure: false }),
    ).toThrow(
      /^ragen serve would listen on 0\.0\.0\.0, beyond loopback, with no API key: .*; set --api-key \(or RAGEN_API_KEY\), or pass --insecure on a trusted network\.$/,
    );
    expect(() => checkExposure({ server: 'ragen dashboard', host: '192.168.1.5', insecure: false })).toThrow(
      /with no access control: .*; pass --insecure on a trusted network/,
    );
  });

  it('item 2: the training gateway binds loopback only', async () => {
    const target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
    const gateway = new Gateway({ ...target });
    try {
      expect(() => gateway.listen(0, '0.0.0.0')).toThrow(
        /the training gateway listens on loopback only \(127\.0\.0\.1\), not on `0\.0\.0\.0`/,
      );
      expect(await gateway.listen(0)).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await gateway.close();
      target.dispose();
    }
  });
});

describe('item 2: every server command refuses --host 0.0.0.0 without a key or token, naming the flags', () => {
  const cases: [string, string[], RegExp][] = [
    [
      'serve',
      ['serve', 'ragen-tiny', '--host', '0.0.0.0', '--port', '0'],
      /ragen serve would listen on 0\.0\.0\.0, beyond loopback, with no API key.*set --api-key \(or RAGEN_API_KEY\), or pass --insecure/,
    ],
    [
      'env serve',
      ['env', 'serve', 'Bandit', '--host', '0.0.0.0', '--port', '0'],
      /ragen env serve would listen on 0\.0\.0\.0, beyond loopback, with no token.*set RAGEN_ENV_TOKEN \(or --token\) on the server and its clients, or pass --insecure/,
    ],
    [
      'dashboard',
      ['dashboard', root, '--host', '0.0.0.0'],
      /ragen dashboard would listen on 0\.0\.0\.0, beyond loopback, with no access control.*pass --insecure/,
    ],
    [
      'retrieval serve',
      ['retrieval', 'serve', '--host', '0.0.0.0', '--port', '0'],
      /ragen retrieval serve would listen on 0\.0\.0\.0, beyond loopback, with no access control.*pass --insecure/,
    ],
  ];
  it.each(cases)('item 2: ragen %s --host 0.0.0.0 exits 2 with one sentence', async (_name, argv, message) => {
    const { code, err } = await withoutSecrets(() => runCli(...argv));
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err).not.toMatch(/\n\s+at /);
  });
});

describe('item 2: with --insecure each server command starts beyond loopback and says so on stderr', () => {
  it('item 2: serve, env serve, dashboard and retrieval serve each print the one warning line, then serve', async () => {
    const warning = (server: string) =>
      new RegExp(
        `${server}: listening on 0\\.0\\.0\\.0:\\d+ with --insecure and no (API key|token|access control): anyone who can reach this address can use it\\.`,
      );
    const runs = await Promise.all([
      startCli(['serve', 'ragen-tiny', '--host', '0.0.0.0', '--port', '0', '--insecure'], warning('ragen serve')),
      startCli(
        ['env', 'serve', 'Bandit', '--host', '0.0.0.0', '--port', '0', '--insecure'],
        warning('ragen env serve'),
      ),
      startCli(['dashboard', root, '--host', '0.0.0.0', '--insecure'], warning('ragen dashboard')),
      startCli(
        ['retrieval', 'serve', '--host', '0.0.0.0', '--port', '0', '--insecure'],
        warning('ragen retrieval serve'),
      ),
    ]);
    for (const r of runs) expect(r.matched, r.err).toBe(true);
  }, 240_000);
});
