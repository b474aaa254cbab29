// The parts of the torch worker's FSDP path (python/ragen_torch/fsdp.py) that run without FSDP, on the CPU: ranks
// padded to the same number of passes with dummy chunks give the same outputs and gradients as unpadded, and the
// rollout copy with LoRA merged gives the adapted model's logits. fully_shard itself needs torch >= 2.4 on CUDA.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';

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
    const r = spawnSync(python!, ['-c', SCRIPT, TINY], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: workerPackageDir() }, timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const res = JSON.parse(r.stdout) as { chunks: number[]; forward: number; outputs: number; grads: number; gradNorm: number; merged: number; loraEffect: number };
    expect(res.chunks[1]).toBe(res.chunks[0]! + 3); // the padding really happened (and with several chunks: the recompute path)
    expect(res.chunks[0]).toBeGreaterThan(1);
    expect(res.forward).toBe(0);
    expect(res.outputs).toBe(0);
    expect(res.gradNorm).toBeGreaterThan(0);
    expect(res.grads).toBeLessThan(1e-6);
    expect(res.loraEffect).toBeGreaterThan(1e-3); // the adapters matter, so merging them is checked
    expect(res.merged).toBeLessThan(1e-4);
  }, 60_000);
});
