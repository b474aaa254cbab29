import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { configToHF } from '../../model/index.js';
import { BENCH_MODEL } from '../engine.js';
import { runTorch, torchPeers } from './bench-engine.js';

describe('ragen bench engine', () => {
  it('is listed under bench and rejects an unknown backend with the valid names', async () => {
    const err = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      expect(await main(['bench', 'engine', '--backend', 'cuda', '--no-torch'])).toBe(2);
      expect(err.mock.calls.flat().join('\n')).toMatch(/unknown backend `cuda`; valid: native, wasm, js/);
      expect(await main(['bench', 'engine', '--steps', '0'])).not.toBe(0);
    } finally {
      err.mockRestore();
      out.mockRestore();
    }
  });
});

/** A stand-in interpreter: prints `version` for `-c ...import torch...`; run on a script, records argv and the thread
 *  environment in `log` and prints a result line as torch_bench.py does. */
function fakePython(dir: string, name: string, version: string): string {
  const file = join(dir, name);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(
    file,
    `#!/bin/sh
if [ "$1" = "-c" ]; then echo "${version}"; exit 0; fi
echo "$@ OMP=$OMP_NUM_THREADS MKL=$MKL_NUM_THREADS OPENBLAS=$OPENBLAS_NUM_THREADS" > "${dir}/log"
t=$(echo "$@" | sed -n 's/.*--threads \\([0-9]*\\).*/\\1/p')
echo '{"trainStepMs": 5, "decodeTokPerS": 7, "peakRssMb": 1, "torchVersion": "${version}", "torchThreads": '"$t"', "blas": "mkl", "loss": 7}'
`,
  );
  chmodSync(file, 0o755);
  return file;
}

describe('the bench engine torch peers', () => {
  const saved = process.env.RAGEN_PYTHON;
  afterEach(() => {
    if (saved === undefined) delete process.env.RAGEN_PYTHON;
    else process.env.RAGEN_PYTHON = saved;
  });

  it("takes RAGEN_PYTHON's torch first, else the wheel environment's (.venv), and Debian's other version second", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-peers-'));
    const venv = fakePython(dir, '.venv/bin/python', '2.13.0+cpu');
    const own = fakePython(dir, 'own/python', '2.99.0');
    delete process.env.RAGEN_PYTHON;
    const debian = spawnSync('/usr/bin/python3', ['-c', 'import torch; print(torch.__version__)'], {
      encoding: 'utf8',
    });
    const second = debian.status === 0 ? [{ python: '/usr/bin/python3', torchVersion: debian.stdout.trim() }] : [];
    expect(torchPeers(dir)).toEqual([{ python: venv, torchVersion: '2.13.0+cpu' }, ...second]);
    process.env.RAGEN_PYTHON = own;
    expect(torchPeers(dir)).toEqual([{ python: own, torchVersion: '2.99.0' }, ...second]);
  });

  it('gives torch as many threads as ours (torch.set_num_threads and the BLAS/OpenMP pools) and keeps its version', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragen-peers-'));
    const python = fakePython(dir, 'py', '2.13.0+cpu');
    const r = runTorch({ python, torchVersion: '2.13.0+cpu' }, 1, 3);
    expect(readFileSync(join(dir, 'log'), 'utf8')).toMatch(/--steps 1 --threads 3 OMP=3 MKL=3 OPENBLAS=3/);
    expect([r.torchVersion, r.torchThreads, r.trainStepMs]).toEqual(['2.13.0+cpu', 3, 5]);
  });

  const real = torchPeers()[0];
  it.runIf(real)(
    'torch_bench.py reports the version and the threads it ran on (a real torch, tiny workload)',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'ragen-peers-'));
      writeFileSync(join(dir, 'config.json'), JSON.stringify(configToHF(BENCH_MODEL)));
      const script = join(import.meta.dirname, '..', 'tools', 'torch_bench.py');
      const args = [script, join(dir, 'config.json'), '--threads', '1', '--steps', '1', '--batch', '1', '--seq', '8'];
      const small = ['--decode-batch', '2', '--prompt', '2', '--new', '2'];
      const out = spawnSync(real!.python, [...args, ...small], { encoding: 'utf8', timeout: 120_000 });
      expect(out.stderr).toBe('');
      const r = JSON.parse(out.stdout.trim().split('\n').pop()!) as { torchVersion: string; torchThreads: number };
      expect([r.torchVersion, r.torchThreads]).toEqual([real!.torchVersion, 1]);
    },
    120_000,
  );
});
