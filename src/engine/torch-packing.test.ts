// The torch worker's padding-free packing and kept graphs (python/ragen_torch/packing.py, roles.py) against the plain
// computation: a chunk's rows packed into bins (positions reset per row, block-diagonal causal mask) give the padded
// rows' log-probs, entropy and values and the same gradients; a backward that keeps several chunks' graphs gives the
// gradients of one that recomputes them (LoRA dropout included), and runs each chunk once.
import { spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { torchPythonForTests } from './torch-testing.js';
import { workerPackageDir } from './torch-worker.js';

const python = torchPythonForTests();

// A random Qwen3-style decoder (GQA, q/k norm, attention biases, untied head) with weights large enough that attention
// is far from uniform, and a value head. Rows of 23, 1, 2, 9, 17, 4, 23, 3, 12 tokens: a 1-token row (nothing to
// score), a 2-token one (one scored token), and rows sharing bins. Output gradients are random for every key.
const SCRIPT = `
import json, torch
from ragen_torch.dist import Dist
from ragen_torch.model import Decoder, ModelConfig
from ragen_torch.packing import Layout
from ragen_torch.roles import Roles

raw = dict(model_type="qwen3", vocab_size=61, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=2, head_dim=8, attention_bias=True, tie_word_embeddings=False)
lengths = [23, 1, 2, 9, 17, 4, 23, 3, 12]
B, T = len(lengths), 25
torch.manual_seed(0)
ids = torch.randint(0, 61, (B, T))
gen = torch.Generator().manual_seed(5)
grads = {k: torch.randn(B, T, generator=gen) for k in ("logprobs", "entropy", "values")}

def make(lora_dropout):
    torch.manual_seed(1)
    model = Decoder(ModelConfig(raw))
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(1 + 0.2 * torch.randn(p.shape) if n.endswith("norm.weight") else torch.randn(p.shape) * 0.3)
    if lora_dropout:
        model.attach_lora(4, 8.0, lora_dropout, ("q_proj", "v_proj", "down_proj"), torch.Generator().manual_seed(2))
        with torch.no_grad():
            for _, _, lin in model.linears():
                if lin.lora_B is not None:
                    lin.lora_B.copy_(torch.randn(lin.lora_B.shape) * 0.2)
    return model, torch.nn.Linear(32, 1)

def roles(model, head, packing, budget, graph_budget, logits_in_call=False):
    r = Roles(torch.device("cpu"), None, budget, Dist())
    r.policy, r.value_head, r.critic_mode, r.reference, r.critic_model = model, head, "shared", None, None
    r.packing, r.graph_budget = packing, graph_budget
    r.fsdp = logits_in_call  # FSDP's path (the logits made inside the module call), run here without sharding
    return r

def run(model, head, seed=7, **kw):
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad] + [("value_head." + n, p) for n, p in head.named_parameters()]
    for _, p in params:
        p.grad = None
    r = roles(model, head, **kw)
    torch.manual_seed(seed)  # LoRA dropout's masks start from the same state in every run
    out = r.backward_begin("policy", ids, lengths, True, True)
    r.backward_end(grads)
    return out, {n: p.grad.clone() for n, p in params}, dict(r.passes)

def compare(a, b):
    (oa, ga, _), (ob, gb, _) = a, b
    rel = lambda x, y: float((x - y).abs().max() / y.abs().max().clamp_min(1e-30))
    return {"out": {k: float((oa[k] - ob[k]).abs().max()) for k in ob}, "grad": max(rel(ga[n], gb[n]) for n in gb),
            "gradZero": [n for n in gb if float(gb[n].abs().max()) == 0]}

res = {}
model, head = make(0)
padded = run(model, head, packing=False, budget=10000, graph_budget=10000)
res["outputs"] = {k: float(v.abs().max()) for k, v in padded[0].items()}
for name, budget in (("packed, one chunk", 10000), ("packed, several chunks", 40)):
    res[name] = dict(compare(run(model, head, packing=True, budget=budget, graph_budget=budget), padded))
res["packed, FSDP's path"] = compare(run(model, head, packing=True, budget=40, graph_budget=40, logits_in_call=True), padded)
# The layout itself: every row's tokens in one bin, in order, positions 0.. and its own segment id.
lay = Layout(lengths, "cpu")
W = max(lengths) - 1
slot_of = {}
for k, (f, s) in enumerate(zip(lay.flat.tolist(), lay.slot.tolist())):
    slot_of[(f // W, f % W)] = s
ok = True
for i, n in enumerate(lengths):
    slots = [slot_of[(i, t)] for t in range(n - 1)]
    ok &= all(b == a + 1 for a, b in zip(slots, slots[1:])) and (not slots or len({s // W for s in slots}) == 1)
    ok &= [lay.positions.view(-1)[s].item() for s in slots] == list(range(n - 1))
    ok &= all(lay.segments.view(-1)[s].item() == i for s in slots)
res["layout"] = {"ok": bool(ok), "bins": lay.bins, "rowsWithTokens": sum(n > 1 for n in lengths), "tokens": int(lay.flat.numel())}
# Kept graphs against recomputation, with LoRA dropout drawing masks: all kept, the first only, and chunks 1-2 of 4.
model, head = make(0.3)
recompute = run(model, head, packing=False, budget=40, graph_budget=1)
res["graphs"] = {"recomputePasses": recompute[2]}
for name, gb in (("all kept", 10000), ("two kept", 46)):
    kept = run(model, head, packing=False, budget=40, graph_budget=gb)
    res["graphs"][name] = dict(compare(kept, recompute), passes=kept[2])
res["graphs"]["other masks"] = compare(run(model, head, seed=8, packing=False, budget=40, graph_budget=10000), recompute)["grad"]
print(json.dumps(res))
`;

interface Diff {
  out: Record<string, number>;
  grad: number;
  gradZero: string[];
}

describe.runIf(python)('torch worker: packed rows and kept graphs', () => {
  const r = python
    ? spawnSync(python, ['-c', SCRIPT], {
        encoding: 'utf8',
        env: { ...process.env, PYTHONPATH: workerPackageDir() },
        timeout: 120_000,
      })
    : null;
  const res = () => {
    expect(r!.status, r!.stderr).toBe(0);
    return JSON.parse(r!.stdout) as Record<string, unknown>;
  };

  test("packed rows give the padded rows' log-probs, entropy and values (1e-5) and gradients (1e-5 relative, per parameter)", () => {
    const out = res().outputs as Record<string, number>;
    for (const k of ['logprobs', 'entropy', 'values']) expect(out[k], `${k} are real numbers`).toBeGreaterThan(0.5);
    for (const name of ['packed, one chunk', 'packed, several chunks', "packed, FSDP's path"]) {
      const d = res()[name] as Diff;
      for (const k of ['logprobs', 'entropy', 'values']) expect(d.out[k], `${name}: ${k}`).toBeLessThan(1e-5);
      expect(d.grad, `${name}: gradients`).toBeLessThan(1e-5);
      expect(d.gradZero, 'every parameter has a gradient').toEqual([]);
    }
  });

  test('the packed layout: each row contiguous in one bin, positions restarting at 0, its own segment; fewer bins than rows', () => {
    const lay = res().layout as { ok: boolean; bins: number; rowsWithTokens: number; tokens: number };
    expect(lay.ok).toBe(true);
    expect(lay.tokens).toBe([23, 1, 2, 9, 17, 4, 23, 3, 12].reduce((s, n) => s + n - 1, 0));
    expect(lay.bins).toBeLessThan(lay.rowsWithTokens);
  });

  test('kept graphs give the gradients of recomputed ones, LoRA dropout included, and run each chunk once', () => {
    const g = res().graphs as Record<string, unknown>;
    // Budget 40 cuts the rows into [23], [23], [17, 12], [9, 4, 3, 2] and [1] (nothing to score: no pass); a graph
    // budget of 1 keeps the first chunk's graph only, 46 the first two.
    expect(g.recomputePasses).toEqual({ forwardPasses: 7, recomputedPasses: 3 });
    const all = g['all kept'] as Diff & { passes: Record<string, number> };
    const two = g['two kept'] as Diff & { passes: Record<string, number> };
    expect(all.passes).toEqual({ forwardPasses: 4, recomputedPasses: 0 });
    expect(two.passes).toEqual({ forwardPasses: 6, recomputedPasses: 2 });
    for (const d of [all, two]) {
      for (const k of ['logprobs', 'entropy', 'values']) expect(d.out[k]).toBeLessThan(1e-5);
      expect(d.grad).toBeLessThan(1e-5);
    }
    expect(g['other masks'], 'dropout masks matter: other masks give other gradients').toBeGreaterThan(1e-3);
  });
});
