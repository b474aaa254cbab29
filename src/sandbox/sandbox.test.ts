import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Sandbox, SandboxUnavailableError } from './index.js';
import { testSandbox } from './testing.js';

// Needs bubblewrap (`apt-get install -y bubblewrap`): without it the sandbox fails closed, and these tests skip (fail
// in CI).
const HAS_BWRAP = testSandbox();
const sandbox = new Sandbox({
  limits: { wallSeconds: 5, cpuSeconds: 4, perTestSeconds: 0.5, memoryMB: 256, outputBytes: 4096 },
});
const hostDir = mkdtempSync(join(tmpdir(), 'ragen-sandbox-test-'));
const thisFile = fileURLToPath(import.meta.url);

const run = (code: string, inputs = ['']) => sandbox.run({ code, style: 'stdin', inputs });

beforeAll(async () => {
  if (HAS_BWRAP) await sandbox.check();
});
afterAll(() => rmSync(hostDir, { recursive: true, force: true }));

describe.runIf(HAS_BWRAP)('Sandbox runs ordinary programs', () => {
  test('a stdin program gets each input and its stdout back', async () => {
    const r = await run('a, b = map(int, input().split())\nprint(a + b)', ['1 2\n', '40 2\n']);
    expect(r.tests).toEqual([
      { status: 'ok', output: '3\n' },
      { status: 'ok', output: '42\n' },
    ]);
  });
  test('a call-style program answers str(result) per argument list, a method of class Solution included', async () => {
    const code = 'class Solution:\n    def pair(self, a, b):\n        return [a, b]';
    const r = await sandbox.run({ code, style: 'call', functionName: 'pair', inputs: ['[1, "x"]', '[true, null]'] });
    expect(r.tests.map((t) => t.output)).toEqual(["[1, 'x']", '[True, None]']);
    const bare = await sandbox.run({
      code: 'def twice(x):\n    return 2 * x',
      style: 'call',
      functionName: 'twice',
      inputs: ['[21]'],
    });
    expect(bare.tests[0]).toEqual({ status: 'ok', output: '42' });
  });
  test('may write and read its own scratch directory', async () => {
    const r = await run("open('note.txt', 'w').write('kept')\nprint(open('note.txt').read())");
    expect(r.tests[0]).toEqual({ status: 'ok', output: 'kept\n' });
  });
  test('hashes strings the same way on every run (PYTHONHASHSEED is fixed)', async () => {
    const code = "print(hash('ragen'), list({'a', 'b', 'c', 'd'}))";
    expect((await run(code)).tests[0]!.output).toBe((await run(code)).tests[0]!.output);
  });
  test('a syntax error fails every test with the reason', async () => {
    const r = await run('print(', ['1', '2']);
    expect(r.tests.every((t) => t.status === 'error' && /SyntaxError/.test(t.error!))).toBe(true);
  });
});

describe.runIf(HAS_BWRAP)('Sandbox contains hostile programs, each scored as a failure with its reason', () => {
  test('an infinite loop hits the per-test time limit', async () => {
    const r = await run('while True:\n    pass');
    expect(r.tests[0]).toMatchObject({ status: 'timeout', error: 'time limit per test exceeded' });
  });
  test('a loop that ignores the alarm hits the CPU limit', async () => {
    const sb = new Sandbox({ limits: { cpuSeconds: 1, wallSeconds: 30, perTestSeconds: 0.2 } }); // a loaded machine accrues CPU time slowly
    const r = await sb.run({
      code: 'import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass',
      style: 'stdin',
      inputs: [''],
    });
    expect(r.tests[0]).toMatchObject({ status: 'killed', error: 'CPU time limit (1 s) exceeded' });
  });
  test('a sleeper that ignores the alarm is killed at the wall time limit', async () => {
    const sb = new Sandbox({ limits: { cpuSeconds: 10, wallSeconds: 1, perTestSeconds: 0.2 } });
    const r = await sb.run({
      code: 'import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    time.sleep(1)',
      style: 'stdin',
      inputs: [''],
    });
    expect(r).toMatchObject({ killed: 'wall', tests: [{ status: 'killed', error: 'wall time limit (1 s) exceeded' }] });
    expect(r.wallSeconds).toBeLessThan(5);
  });
  test('a fork bomb is killed at its first fork', async () => {
    const r = await run('import os\nwhile True:\n    os.fork()');
    expect(r.signal).toBe('SIGSYS');
    expect(r.tests[0]).toMatchObject({ status: 'killed', error: expect.stringContaining('forbidden system call') });
  });
  test('a 10 GB allocation raises MemoryError', async () => {
    const r = await run('x = bytearray(10 * 1024 ** 3)\nprint(len(x))');
    expect(r.tests[0]).toMatchObject({ status: 'error', error: 'MemoryError' });
  });
  test('reading /etc/passwd and the repository finds nothing', async () => {
    const r = await run(
      `import os\nprint(sorted(os.listdir('/')))\nfor p in ['/etc/passwd', ${JSON.stringify(thisFile)}, '/proc/1/root/etc/passwd']:\n    try:\n        print(open(p).read()[:40])\n    except OSError as e:\n        print(type(e).__name__)`,
    );
    const out = r.tests[0]!.output;
    expect(out).not.toMatch(/root:|vitest/);
    expect(out.split('\n').slice(1, 4)).toEqual(['FileNotFoundError', 'FileNotFoundError', 'FileNotFoundError']);
    expect(out).not.toMatch(/'(etc|home|root|tmp|work|var)'/);
  });
  test('writing outside the scratch directory fails and the host file never appears', async () => {
    const target = join(hostDir, 'escaped.txt');
    const r = await run(`open(${JSON.stringify(target)}, 'w').write('x')`);
    expect(r.tests[0]).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/FileNotFoundError|OSError|Read-only/),
    });
    const root = await run("open('/escaped.txt', 'w').write('x')");
    expect(root.tests[0]!.status).toBe('error');
    expect(existsSync(target)).toBe(false);
  });
  describe('a socket to a listener on 127.0.0.1', () => {
    let server: Server;
    let port = 0;
    let connections = 0;
    beforeAll(async () => {
      server = createServer((s) => {
        connections++;
        s.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
    test('is never made: the program is killed at socket()', async () => {
      const r = await run(
        `import socket\ns = socket.create_connection(('127.0.0.1', ${port}), timeout=1)\nprint('connected')`,
      );
      expect(r.signal).toBe('SIGSYS');
      expect(r.tests[0]!.output).toBe('');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(connections).toBe(0);
    });
  });
  test.each([
    ['os.system', 'import os\nos.system("touch MARK; echo 1")'],
    ['subprocess', 'import subprocess\nsubprocess.run(["touch", "MARK"])'],
    ['ctypes', 'import ctypes\nctypes.CDLL(None).system(b"touch MARK")'],
    [
      'ctypes raw fork syscall',
      'import ctypes, platform\nctypes.CDLL(None).syscall(57 if platform.machine() == "x86_64" else 220, 17, 0, 0, 0, 0)\nprint("forked")',
    ],
  ])('%s cannot start a process', async (_name, code) => {
    const mark = join(hostDir, 'MARK');
    const r = await run(code.replaceAll('MARK', mark));
    expect(r.signal).toBe('SIGSYS');
    expect(r.tests[0]).toMatchObject({ status: 'killed', output: '' });
    expect(existsSync(mark)).toBe(false);
  });
  test('printing without end stops at the output limit', async () => {
    const r = await run("while True:\n    print('x' * 1000)");
    expect(r.tests[0]).toMatchObject({ status: 'output_limit', error: 'output limit (4096 bytes) exceeded' });
    expect(r.tests[0]!.output.length).toBeLessThanOrEqual(4096);
  });
  test('after all of that an ordinary program still runs', async () => {
    expect((await run('print(6 * 7)')).tests[0]).toEqual({ status: 'ok', output: '42\n' });
  });
});

describe('Sandbox fails closed', () => {
  test('without bubblewrap check() is an error naming the fix, and nothing runs', async () => {
    const sb = new Sandbox({ bwrap: '/nonexistent/bwrap' });
    const err = await sb.check().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxUnavailableError);
    expect((err as Error).message).toMatch(/apt-get install -y bubblewrap/);
    expect((err as Error).message).toMatch(/sandbox: none/);
  });
  test('a bubblewrap that cannot create namespaces fails the self-test, with its message', async () => {
    const fakeBwrap = join(hostDir, 'bwrap');
    writeFileSync(fakeBwrap, '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n', {
      mode: 0o755,
    });
    const err = await new Sandbox({ bwrap: fakeBwrap }).check().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxUnavailableError);
    expect((err as Error).message).toMatch(
      /failed its self-test: the sandbox exited with status 1: bwrap: setting up uid map: Permission denied/,
    );
  });
  test.runIf(HAS_BWRAP)('a Python outside /usr is refused under bubblewrap', async () => {
    const err = await new Sandbox({ python: '/opt/python3' }).check().catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/must live under \/usr/);
  });
  test('isolation none (opt-in) still blocks process creation', async () => {
    const sb = new Sandbox({ isolation: 'none' });
    const r = await sb.run({ code: 'import os\nos.system("true")', style: 'stdin', inputs: [''] });
    expect(r.signal).toBe('SIGSYS');
  });
});
