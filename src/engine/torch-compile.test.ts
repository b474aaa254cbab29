// model.torch.compile (python/ragen_torch/compiled.py): with torch >= 2 the compiled layers give the eager layers'
// log-probs and gradients; on a torch without torch.compile (Debian's 1.13) the worker says so once and runs eager.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, test, vi } from 'vitest';
import { TorchEngine } from './torch.js';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';

const python = torchPythonForTests();

const SCRIPT = `
import json, tempfile, torch
from ragen_torch.random_checkpoint import write_random_checkpoint
from ragen_torch.dist import Dist
from ragen_torch.worker import Worker
d = tempfile.mkdtemp()
write_random_checkpoint(d, "tiny", 3, torch.float32)
ids = torch.randint(0, 256, (3, 16), generator=torch.Generator().manual_seed(2))
lengths = [16, 11, 7]
def run(compile):
    w = Worker(torch.device("cpu"), None, 4096, Dist())
    w.op_load({"path": d, "seed": 0, "tokenBudget": 4096, "graphTokenBudget": 4096, "packing": False, "compile": compile}, {})
    lp = w.roles.backward_begin("policy", ids, lengths, True, False)
    w.roles.backward_end({"logprobs": torch.ones(3, 16), "entropy": torch.ones(3, 16)})
    grads = torch.cat([p.grad.flatten() for _, p in w.roles.parameters("policy")])
    return w.roles.policy.compiled is not None, lp["logprobs"], grads
_, lp0, g0 = run(False)
compiled, lp1, g1 = run(True)
print(json.dumps({"torch": torch.__version__, "hasCompile": hasattr(torch, "compile"), "compiled": compiled,
                  "logprobDiff": float((lp0 - lp1).abs().max()), "gradRelDiff": float((g0 - g1).abs().max() / g0.abs().max())}))
`;

describe.runIf(python)('torch worker: model.torch.compile', () => {
  test('compiles the layers where torch has torch.compile (same log-probs and gradients as eager); elsewhere says which torch lacks it and how to fix it, and runs eager', () => {
    const r = spawnSync(python!, ['-c', SCRIPT], {
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: workerPackageDir() },
      timeout: 300_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const o = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      torch: string;
      hasCompile: boolean;
      compiled: boolean;
      logprobDiff: number;
      gradRelDiff: number;
    };
    expect(o.compiled).toBe(o.hasCompile);
    if (o.hasCompile) {
      expect(o.logprobDiff).toBeLessThan(1e-5);
      expect(o.gradRelDiff).toBeLessThan(1e-4);
    } else {
      const warning = r.stderr.split('\n').filter((l) => l.includes('model.torch.compile'));
      expect(warning).toEqual([
        `[ragen_torch] model.torch.compile: torch ${o.torch} has no torch.compile (added in torch 2.0), so the model runs eager; install torch >= 2.0 or set model.torch.compile=false`,
      ]);
      expect(o.logprobDiff).toBe(0);
      expect(o.gradRelDiff).toBe(0);
    }
  }, 300_000);

  test("TorchEngine passes compile (and rolloutCopy) to the worker: on a torch without torch.compile its one line reaches ragen's stderr", async () => {
    const lines: string[] = [];
    const spy = vi
      .spyOn(process.stderr, 'write')
      .mockImplementation((chunk: string | Uint8Array) => (lines.push(String(chunk)), true));
    const engine = await TorchEngine.fromPretrained(join(import.meta.dirname, '../../models/ragen-tiny'), {
      python: python!,
      device: 'cpu',
      compile: true,
      rolloutCopy: 'none',
    });
    try {
      const has =
        spawnSync(python!, ['-c', 'import torch; print(hasattr(torch, "compile"))'], {
          encoding: 'utf8',
        }).stdout.trim() === 'True';
      for (let i = 0; i < 40 && !lines.some((l) => l.includes('model.torch.compile')); i++)
        await new Promise((r) => setTimeout(r, 50));
      const warned = lines.filter((l) => l.includes('model.torch.compile'));
      expect(warned.length).toBe(has ? 0 : 1);
      if (!has)
        expect(warned[0]).toMatch(
          /^\[torch worker\] \[ragen_torch\] model\.torch\.compile: torch \S+ has no torch\.compile/,
        );
      const [g] = await engine.generate([[1, 2, 3]], { maxNewTokens: 3, temperature: 0, seed: 0 });
      expect(g!.tokens).toHaveLength(3);
    } finally {
      spy.mockRestore();
      engine.dispose();
    }
    // rolloutCopy reaches the worker too: a value outside the schema (only a caller bypassing it can send one) is
    // named.
    await expect(
      TorchEngine.fromPretrained(join(import.meta.dirname, '../../models/ragen-tiny'), {
        python: python!,
        device: 'cpu',
        rolloutCopy: 'half' as never,
        echoStderr: false,
      }),
    ).rejects.toThrow(/rolloutCopy `half` is not one of auto, bf16, none/);
  }, 60_000);
});
