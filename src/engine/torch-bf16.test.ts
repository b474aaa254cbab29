// The torch worker's frozen bf16 weights (python/ragen_torch/frozen.py) on the CPU, under CPU bf16 autocast: the
// separate reference and a LoRA model's base are stored in bf16 and score like the autocast float32 model; the bf16
// rollout copy samples what
// the float32 policy cast to bf16 (LoRA merged) samples, and is refreshed after an optimizer step.
import { spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';

const python = torchPythonForTests();

const SETUP = `
import copy, json, tempfile, torch
from ragen_torch.random_checkpoint import write_random_checkpoint
from ragen_torch.generate import generate
from ragen_torch.dist import Dist
from ragen_torch.worker import Worker
d = tempfile.mkdtemp()
write_random_checkpoint(d, "tiny", 3, torch.float32)
dev = torch.device("cpu")
bf16 = lambda: torch.autocast("cpu", dtype=torch.bfloat16)
def worker(autocast, **load):
    w = Worker(dev, autocast, 4096, Dist())
    w.op_load(dict({"path": d, "seed": 0, "tokenBudget": 4096, "graphTokenBudget": 4096, "packing": False}, **load), {})
    return w
`;

const REFERENCE = `${SETUP}
g = torch.Generator().manual_seed(2)
ids = torch.randint(0, 256, (3, 20), generator=g)
lengths = [20, 14, 9]
w = worker(bf16, reference=True)
r = w.roles
ref = r.forward("reference", ids, lengths, False)["logprobs"]
pol = r.forward("policy", ids, lengths, False)["logprobs"]  # the float32 weights under autocast, before any step
f32 = worker(None, reference=True).roles
# LoRA: the frozen base in bf16, the adapters float32; log-probs beside the float32 base under the same autocast.
lora = {"r": 4, "alpha": 8}
lb, lf = worker(bf16, lora=lora).roles, worker(None, lora=lora).roles
with bf16():
    lora_f32 = lf.forward("policy", ids, lengths, False)["logprobs"]
lora_bf16 = lb.forward("policy", ids, lengths, False)["logprobs"]
print(json.dumps({
    "loraBaseDtypes": sorted({str(p.dtype) for n, p in lb.policy.named_parameters() if ".lora_" not in n}),
    "loraAdapterDtypes": sorted({str(p.dtype) for _, p in lb.parameters("policy")}),
    "loraFloat32BaseDtypes": sorted({str(p.dtype) for p in lf.policy.parameters()}),
    "loraMaxDiff": float((lora_bf16 - lora_f32).abs().max()),
    "referenceDtypes": sorted({str(p.dtype) for p in r.reference.parameters()}),
    "policyDtypes": sorted({str(p.dtype) for p in r.policy.parameters()}),
    "float32ReferenceDtypes": sorted({str(p.dtype) for p in f32.reference.parameters()}),
    "maxDiff": float((ref - pol).abs().max()), "maxLogprob": float(pol.abs().max()),
    "cpuAutoIsPolicy": r.rollout_model() is r.policy, "float32AutoIsPolicy": f32.rollout_model() is f32.policy,
}))
`;

const ROLLOUT = `${SETUP}
prompts = [[5, 9, 2, 7], [3, 1], [8, 8, 8, 4, 6, 2]]
params = {"maxNewTokens": 12, "temperature": 1.0, "seed": 4}
def sample(w):
    flat = torch.tensor([t for p in prompts for t in p], dtype=torch.int32)
    _, b = w.op_generate({"params": params}, {"prompts": flat, "lengths": torch.tensor([len(p) for p in prompts], dtype=torch.int32)})
    return b["tokens"].tolist()
def cast_policy(policy):
    # The float32 policy cast to bf16 with W + scaling * B A merged in, written here independently of frozen.py.
    m = copy.deepcopy(policy)
    with torch.no_grad():
        for _, _, lin in m.linears():
            if lin.lora_A is not None:
                lin.weight += lin.scaling * (lin.lora_B @ lin.lora_A)
                lin.lora_A = lin.lora_B = None
    m.lora = None
    return m.to(torch.bfloat16).eval()
def expected(w):
    return [t for r in generate(cast_policy(w.roles.policy), prompts, params, None, 4096, w.autocast) for t in r[0]]
out = {}
for case, lora in (("full", None), ("lora", {"r": 4, "alpha": 8})):
    w = worker(bf16, rolloutCopy="bf16", lora=lora)
    before, expected_before = sample(w), expected(w)
    dtypes = sorted({str(p.dtype) for p in w.roles.rollout_model().parameters()})
    ids = torch.tensor([p + [1] * (6 - len(p)) for p in prompts])
    w.roles.backward_begin("policy", ids, [len(p) for p in prompts], False, False)
    w.roles.backward_end({"logprobs": torch.ones(3, 6)})
    w.op_optimizer_step({"role": "policy", "settings": {"lr": 0.05, "maxGradNorm": 0}}, {})  # large: the samples change
    after, expected_after = sample(w), expected(w)
    out[case] = {"before": before == expected_before, "after": after == expected_after, "changed": before != after, "dtypes": dtypes}
try:
    worker(None, rolloutCopy="half")
except ValueError as e:
    out["error"] = str(e)
print(json.dumps(out))
`;

function run(code: string) {
  const r = spawnSync(python!, ['-c', code], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: workerPackageDir() },
    timeout: 300_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

describe.runIf(python)('torch worker: frozen weights in bf16', () => {
  test("under bf16 autocast the separate reference and a LoRA model's base are stored in bf16 and score like the autocast float32 model within bf16 tolerance", () => {
    const r = run(REFERENCE);
    expect(r.referenceDtypes).toEqual(['torch.bfloat16']);
    expect(r.policyDtypes).toEqual(['torch.float32']); // the trained weights stay float32
    expect(r.float32ReferenceDtypes).toEqual(['torch.float32']); // float32 runs are unchanged
    expect(r.maxLogprob).toBeGreaterThan(1); // log-probs of a 256-token vocabulary: ~5.5, so the tolerance is relative to that
    expect(r.maxDiff).toBeLessThan(2e-2);
    // LoRA: the frozen base in bf16, the trained adapters float32; float32 runs keep a float32 base.
    expect(r.loraBaseDtypes).toEqual(['torch.bfloat16']);
    expect(r.loraAdapterDtypes).toEqual(['torch.float32']);
    expect(r.loraFloat32BaseDtypes).toEqual(['torch.float32']);
    expect(r.loraMaxDiff).toBeLessThan(2e-2);
    // rolloutCopy auto: no copy on a CPU (bf16 or not); the float32 policy samples as before.
    expect(r.cpuAutoIsPolicy).toBe(true);
    expect(r.float32AutoIsPolicy).toBe(true);
  }, 300_000);

  test('the bf16 rollout copy samples the float32 policy cast to bf16 (LoRA merged), and after an optimizer step the stepped policy', () => {
    const r = run(ROLLOUT);
    for (const c of ['full', 'lora']) {
      expect(r[c].dtypes, c).toEqual(['torch.bfloat16']);
      expect(r[c].changed, `${c}: the step must change the samples, or the refresh would go unseen`).toBe(true);
      expect(r[c].before, c).toBe(true);
      expect(r[c].after, `${c}: generate after the step samples the new weights`).toBe(true);
    }
    expect(r.error).toMatch(/rolloutCopy `half` is not one of auto, bf16, none; set model\.torch\.rolloutCopy/);
  }, 300_000);
});
