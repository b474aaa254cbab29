// scripts/device-bundle.sh, run as a GPU lease needs it (docs/gpu.md): the bundle fits the device's 64 MiB working
// tree, and a bare copy of the tracked files plus the bundle alone (no node_modules, no Node on PATH) runs a stage of
// `ragen bench gpu --check` with the Node it carries.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { torchPythonForTests } from '../src/engine/torch-testing.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const python = torchPythonForTests();
const tmp = mkdtempSync(join(tmpdir(), 'ragen-device-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }), 60_000);

describe.runIf(python)('scripts/device-bundle.sh', () => {
  it("fits the device's 64 MiB and, unpacked into a bare copy of the tracked files, runs the GPU check's decode stage", async () => {
    expect(existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js')), 'dist/ is missing: run `npm run build` first').toBe(
      true,
    );
    const carry = join(tmp, 'carry');
    const env = { ...process.env, npm_config_loglevel: 'error' };
    const bundled = await run('sh', ['scripts/device-bundle.sh', '--no-build', '--out', carry], {
      cwd: ROOT,
      env,
      maxBuffer: 64 << 20,
    });
    const [, used] = /: ([\d.]+) MiB of the 64 MiB/.exec(bundled.stderr) ?? [];
    expect(Number(used), bundled.stderr).toBeLessThan(64);
    expect(bundled.stdout).toContain(`tar -xJf ${carry}/bundle.tar.xz`);

    // The device's checkout: tracked files only, then what the carried folder holds.
    const device = join(tmp, 'device');
    mkdirSync(device);
    await run('sh', ['-c', `git ls-files -z | tar --null -T - -cf - | tar -xf - -C ${device}`], {
      cwd: ROOT,
      maxBuffer: 64 << 20,
    });
    expect(existsSync(join(device, 'node_modules'))).toBe(false);
    const node = join(tmp, 'node');
    await run(
      'sh',
      ['-c', `tar -xJf ${carry}/bundle.tar.xz && xz -dc ${carry}/node.xz > ${node} && chmod +x ${node}`],
      { cwd: device },
    );
    const out = join(tmp, 'check');
    const path = join(tmp, 'bin'); // a shell and nothing else: no Node on PATH (CI's is in /usr/bin)
    mkdirSync(path);
    symlinkSync('/bin/sh', join(path, 'sh'));
    const bare = { PATH: path, HOME: tmp, RAGEN_PYTHON: python!, RAGEN_TORCH_THREADS: '1' }; // nothing pointing back here
    await run(node, ['bin/ragen.js', 'bench', 'gpu', '--check', '--stages', 'decode', '--out', out], {
      cwd: device,
      env: bare,
      maxBuffer: 64 << 20,
    });
    const report = JSON.parse(readFileSync(join(out, 'check.json'), 'utf8')) as {
      stages: { name: string; status: string }[];
    };
    expect(report.stages.map((s) => [s.name, s.status])).toEqual([
      ['versions', 'passed'],
      ['decode', 'passed'],
    ]);
  }, 600_000);
});
