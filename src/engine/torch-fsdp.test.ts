// The parts of the torch worker's FSDP path (python/ragen_torch/fsdp.py) that run without FSDP, on the CPU: ranks
// padded to the same number of passes with dummy chunks give the same outputs and gradients as unpadded, and the
// rollout copy with LoRA merged gives the adapted model's logits. Also RAGEN_TORCH_FSDP's choices, the GPU check's
// fsdp stage (two sharded CPU ranks where torch can, torch >= 2.7: the main lane, on .venv) and the reference-BLAS warning.
// The worker's own sharded path is src/engine/torch-dp.test.ts.
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runWorkerPython, torchPythonForTests } from './torch-testing.js';

const python = torchPythonForTests();
const TINY = join(import.meta.dirname, '../../models/ragen-tiny');

const SCRIPT = `
import json, sys, torch
from ragen_torch import fsdp
from ragen_torch.model import Decoder
from ragen_torch.roles import Roles

class FakeDist:  # rank 0 of 2, told that the other rank runs 3 more passes than it
    world, rank, sharded = 2, 0, False
    def rows(self, n): return list(range(0, n, 2))
    def max_int(self, n): return n + 3
    def sum_(self, t): return t

def run(padded):
    d = FakeDist()
    r = Roles(torch.device("cpu"), None, 12, d)
    r.load({"path": sys.argv[1], "seed": 1, "lora": {"r": 4, "alpha": 8, "dropout": 0.0}, "critic": "shared"})
    d.sharded = padded  # after load: nothing is sharded, only the pass count is padded
    lengths = [7, 5, 6, 3, 7, 2, 4, 6]
    ids = torch.randint(1, 50, (8, 7), generator=torch.Generator().manual_seed(0))
    fwd = r.forward("policy", ids, lengths, True)
    out = r.backward_begin("policy", ids, lengths, True, True)
    g = torch.Generator().manual_seed(2)
    r.backward_end({k: torch.randn(8, 7, generator=g) for k in ("logprobs", "entropy", "values")})
    grads = {n: p.grad.clone() for n, p in r.parameters("policy")}
    chunks = len(r.my_chunks(lengths))
    return fwd, out, grads, chunks, r

f0, o0, g0, c0, r = run(False)
f1, o1, g1, c1, _ = run(True)
res = {"chunks": [c0, c1]}
res["forward"] = max(float((f0[k] - f1[k]).abs().max()) for k in f0)
res["outputs"] = max(float((o0[k] - o1[k]).abs().max()) for k in o0)
res["grads"] = max(float((g0[n] - g1[n]).abs().max()) for n in g0)
res["gradNorm"] = sum(float(v.abs().sum()) for v in g0.values())

# Train the adapters a little so that B != 0, then compare the merged copy with the adapted model.
with torch.no_grad():
    for _, _, lin in r.policy.linears():
        if lin.lora_B is not None:
            lin.lora_B.normal_(0, 0.05, generator=torch.Generator().manual_seed(3))
copy = fsdp.merged_copy(r.policy, Decoder(r.policy.config), torch.float32)
x = torch.randint(1, 50, (2, 9), generator=torch.Generator().manual_seed(4))
with torch.no_grad():
    adapted = r.policy.logits(r.policy.hidden(x))
    merged = copy.logits(copy.hidden(x))
    r.policy.set_adapters(False)
    base = r.policy.logits(r.policy.hidden(x))
    r.policy.set_adapters(True)
res["merged"] = float((adapted - merged).abs().max())
res["loraEffect"] = float((adapted - base).abs().max())
print(json.dumps(res))
`;

describe.runIf(python)('torch worker: FSDP logic on the CPU', () => {
  test('dummy passes pad a rank without changing its outputs or gradients; the rollout copy merges LoRA exactly', () => {
    const r = runWorkerPython(python!, ['-c', SCRIPT, TINY]);
    expect(r.status, r.stderr).toBe(0);
    const res = JSON.parse(r.stdout) as {
      chunks: number[];
      forward: number;
      outputs: number;
      grads: number;
      gradNorm: number;
      merged: number;
      loraEffect: number;
    };
    expect(res.chunks[1]).toBe(res.chunks[0]! + 3); // the padding really happened (and with several chunks: the recompute path)
    expect(res.chunks[0]).toBeGreaterThan(1);
    expect(res.forward).toBe(0);
    expect(res.outputs).toBe(0);
    expect(res.gradNorm).toBeGreaterThan(0);
    expect(res.grads).toBeLessThan(1e-6);
    expect(res.loraEffect).toBeGreaterThan(1e-3); // the adapters matter, so merging them is checked
    expect(res.merged).toBeLessThan(1e-4);
  }, 60_000);

  test('RAGEN_TORCH_FSDP: 1 shards CUDA ranks only, all CPU ranks too (or is refused where torch cannot), 0 never; a bad value names the choices', () => {
    const script = [
      'import json, os, torch',
      'from ragen_torch.fsdp import cpu_supported, fully_shard_api, wanted',
      'cpu, cuda, out = torch.device("cpu"), torch.device("cuda"), {}',
      'for flag in ("1", "0", "all", "yes"):',
      '    os.environ["RAGEN_TORCH_FSDP"] = flag',
      '    for name, dev, world in (("cpu2", cpu, 2), ("cuda2", cuda, 2), ("cuda1", cuda, 1)):',
      '        try:',
      '            out[f"{flag} {name}"] = wanted(dev, world)',
      '        except RuntimeError as e:',
      '            out[f"{flag} {name}"] = str(e)',
      'print(json.dumps({"out": out, "fsdp": fully_shard_api() is not None, "cpu": cpu_supported()}))',
    ].join('\n');
    const r = runWorkerPython(python!, ['-c', script]);
    expect(r.status, r.stderr).toBe(0);
    const { out, fsdp, cpu } = JSON.parse(r.stdout) as {
      out: Record<string, boolean | string>;
      fsdp: boolean;
      cpu: boolean;
    };
    expect([out['1 cpu2'], out['1 cuda2'], out['1 cuda1']]).toEqual([false, fsdp, false]);
    expect([out['0 cpu2'], out['0 cuda2'], out['0 cuda1']]).toEqual([false, false, false]);
    if (cpu) expect([out['all cpu2'], out['all cuda2'], out['all cuda1']]).toEqual([true, true, false]);
    else {
      expect(out['all cpu2']).toMatch(
        /^RAGEN_TORCH_FSDP=all: torch \S+ cannot run FSDP2 on CPU ranks \(torch >= 2\.7 can\); use RAGEN_TORCH_FSDP=1/,
      );
      expect(out['all cuda1'], 'one rank shards nothing: not refused').toBe(false);
    }
    for (const k of ['yes cpu2', 'yes cuda2', 'yes cuda1'])
      expect(out[k]).toMatch(/^RAGEN_TORCH_FSDP=`yes`: use 1 .*, all \(on CPU ranks too\) or 0/);
  }, 60_000);

  test("the GPU check's fsdp stage: two sharded CPU ranks = one rank, gradients scaled as the worker scales them; skipped by name where torch cannot shard CPU ranks", () => {
    const r = runWorkerPython(python!, ['-m', 'ragen_torch.check', 'fsdp'], 120_000);
    expect(r.status, r.stderr).toBe(0);
    const res = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      skipped?: boolean;
      note?: string;
      passed?: boolean;
      sumScale?: number;
      gradientsMaxRelDiff?: number;
    };
    if (res.skipped)
      expect(res.note).toMatch(/^torch \d+\.\d+ (has no FSDP2|cannot run FSDP2 on CPU ranks \(torch >= 2\.7 can\))$/);
    else {
      expect(res.passed).toBe(true);
      expect([1, 2]).toContain(res.sumScale);
      expect(res.gradientsMaxRelDiff).toBeLessThan(1e-3);
    }
  }, 120_000);

  test("the worker's warning about the reference BLAS: its path and the fix, on stderr", () => {
    const script = [
      'import io, ragen_torch.worker as w',
      'w.open = lambda path, *a, **k: io.StringIO("7f00-7f10 r-xp 0 fe:01 9 /usr/lib/x86_64-linux-gnu/blas/libblas.so.3\\n") if path == "/proc/self/maps" else open(path, *a, **k)',
      'w.warn_reference_blas()',
    ].join('\n');
    const r = runWorkerPython(python!, ['-c', script]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /^\[ragen_torch\] torch's CPU matrix products run on the reference BLAS \(\/usr\/lib\/x86_64-linux-gnu\/blas\/libblas\.so\.3\), ~50x slower than OpenBLAS: install OpenBLAS \(Debian\/Ubuntu: apt-get install libopenblas0\)/,
    );
  }, 60_000);
});
