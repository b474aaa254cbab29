"""worker.py's request handlers, called in-process through Worker.handle (the frame loop's dispatch): load, forward,
backward_begin / backward_end, grad_norm, optimizer_step, zero_grad, tensors, stats, save, load_optimizer, vocab,
generate; log-probs and gradients held against the reference model of tiny.py, not against the worker's own code."""

import json
import math
import os

import pytest
import tiny
import torch
from ragen_torch.generate import NonFiniteLogitsError
from ragen_torch.worker import error_reply, pick_device

ROWS = [[3, 17, 5, 9, 30, 1, 22], [4, 8, 15, 16], [23, 12, 7], [2]]  # a 1-token row has nothing to score
T = 9  # the request's width: every row padded past its end
STEP = {"lr": 0.02, "weightDecay": 0.0, "maxGradNorm": 0}


def request(rows, T=T, **h):
    ids = torch.zeros(len(rows), T, dtype=torch.int32)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.tensor(r)
    bufs = {"ids": ids.reshape(-1), "lengths": torch.tensor([len(r) for r in rows], dtype=torch.int32)}
    return dict({"B": len(rows), "T": T, "role": "policy"}, **h), bufs


def forward(worker, rows=ROWS, **h):
    return worker.handle("forward", *request(rows, **h))[1]


def reference_aligned(w, raw, rows, what="logprobs"):
    """(B, T): entry (b, t) scores token t of row b given tokens 0..t-1, zero at t = 0 and past the row's end."""
    out = torch.zeros(len(rows), T, dtype=torch.float64)
    for b, r in enumerate(rows):
        if len(r) < 2:
            continue
        if what == "logprobs":
            out[b, 1 : len(r)] = tiny.reference_logprobs(w, raw, r).double()
        else:
            lp = torch.log_softmax(tiny.reference_logits(w, raw, r)[:-1], -1)
            out[b, 1 : len(r)] = -(lp.exp() * lp).sum(-1).double()
    return out


def real_tokens(rows):
    m = torch.zeros(len(rows), T)
    for b, r in enumerate(rows):
        m[b, 1 : len(r)] = 1
    return m


def test_load_replies_with_the_models_sizes(checkpoint, make_worker):
    path, raw, _ = checkpoint
    _, reply = make_worker(path)
    n = sum(math.prod(s) for s in tiny.tensor_names(raw).values())
    assert reply == {"vocabSize": 40, "hiddenSize": 16, "lora": False, "trainableParameters": n}  # tiny.BASE


def test_an_unknown_op_is_refused_by_name(checkpoint, make_worker):
    worker, _ = make_worker(checkpoint[0])
    with pytest.raises(ValueError, match="unknown op `nope`"):
        worker.handle("nope", {}, {})


def test_forward_returns_token_aligned_log_probs_and_entropy(checkpoint, make_worker):
    path, raw, w = checkpoint
    worker, _ = make_worker(path)
    out = forward(worker, entropy=True)
    assert sorted(out) == ["entropy", "logprobs"]
    assert out["logprobs"].shape == (len(ROWS), T) and out["logprobs"].dtype == torch.float32
    torch.testing.assert_close(out["logprobs"].double(), reference_aligned(w, raw, ROWS), atol=1e-4, rtol=0)
    torch.testing.assert_close(out["entropy"].double(), reference_aligned(w, raw, ROWS, "entropy"), atol=1e-4, rtol=0)


@pytest.mark.parametrize("packing", [False, True])
def test_a_small_token_budget_splits_the_pass_without_changing_its_outputs(checkpoint, make_worker, packing):
    path, _, _ = checkpoint
    whole = forward(make_worker(path)[0], entropy=True)
    worker, _ = make_worker(path, budget=8, packing=packing)
    split = forward(worker, entropy=True)
    for k in whole:
        torch.testing.assert_close(split[k], whole[k], atol=1e-5, rtol=0)
    # lengths 7, 4, 3, 1 under 8 tokens: [7] alone; 4 and 3 (2 rows x 4 padded, or 2 bins x 4 packed); the 1-token row
    # (a chunk of its own padded, in the 3's bin packed) has nothing to score: two passes
    assert worker.handle("stats", {}, {})[0] == {"forwardPasses": 2, "recomputedPasses": 0}


def reference_gradients(w, raw, rows, g):
    """d sum(g * log-probs) / d weight of the reference model, by name."""
    leaf = {k: v.clone().requires_grad_(True) for k, v in w.items()}
    scored = [(b, r) for b, r in enumerate(rows) if len(r) > 1]
    total = sum((g[b, 1 : len(r)] * tiny.reference_logprobs(leaf, raw, r)).sum() for b, r in scored)
    total.backward()
    return {k: v.grad for k, v in leaf.items()}


@pytest.mark.parametrize("budget, graph_budget", [(4096, 4096), (8, 1)])
def test_backward_gives_the_gradient_of_the_sum_of_grad_times_output(checkpoint, make_worker, budget, graph_budget):
    """(8, 1): three chunks, the graph of the first kept and the other two recomputed in backward_end."""
    path, raw, w = checkpoint
    worker, _ = make_worker(path, budget=budget, graphTokenBudget=graph_budget)
    g = torch.randn(len(ROWS), T, generator=torch.Generator().manual_seed(0)) * real_tokens(ROWS)
    h, bufs = request(ROWS)
    out = worker.handle("backward_begin", h, bufs)[1]
    torch.testing.assert_close(out["logprobs"].double(), reference_aligned(w, raw, ROWS), atol=1e-4, rtol=0)
    worker.handle("backward_end", {"B": len(ROWS), "T": T}, {"logprobs": g.reshape(-1)})
    grads = worker.handle("tensors", {"role": "policy", "what": "grad"}, {})[1]
    want = reference_gradients(w, raw, ROWS, g)
    assert grads.keys() == want.keys()
    for k in want:
        torch.testing.assert_close(grads[k], want[k].float(), atol=1e-4, rtol=1e-3, msg=k)
    norm = math.sqrt(sum(float(v.double().pow(2).sum()) for v in want.values()))
    assert worker.handle("grad_norm", {"role": "policy"}, {})[0]["gradNorm"] == pytest.approx(norm, rel=1e-4)
    recomputed = worker.handle("stats", {}, {})[0]["recomputedPasses"]
    assert recomputed == (0 if graph_budget == budget else 1)  # chunks [7], [4, 3]: the second one recomputed
    worker.handle("zero_grad", {"role": "policy"}, {})
    zeroed = worker.handle("tensors", {"role": "policy", "what": "grad"}, {})[1]
    assert all(float(t.abs().sum()) == 0 for t in zeroed.values())


def train_step(worker, rows=ROWS, settings=STEP):
    """One step that raises the log-probs of `rows`' tokens: loss -sum(log p), so d loss / d log p = -1."""
    h, bufs = request(rows)
    worker.handle("backward_begin", h, bufs)
    worker.handle("backward_end", {"B": len(rows), "T": T}, {"logprobs": -real_tokens(rows).reshape(-1)})
    return worker.handle("optimizer_step", {"role": "policy", "settings": settings}, {})[0]


def test_an_optimizer_step_raises_the_log_probs_it_was_asked_to(checkpoint, make_worker):
    path, _, _ = checkpoint
    worker, _ = make_worker(path)
    before = forward(worker)["logprobs"]
    reply = train_step(worker)
    assert reply["skipped"] is False and reply["gradNorm"] > 0
    after = forward(worker)["logprobs"]
    gain = (after - before).sum()
    assert gain > 0.1, f"the summed log-prob of the trained tokens moved by {float(gain)}"
    assert worker.handle("tensors", {"role": "policy", "what": "grad"}, {})[1]["lm_head.weight"].abs().sum() == 0


def test_a_saved_checkpoint_reloads_and_resumes_as_if_never_stopped(checkpoint, make_worker, tmp_path):
    path, _, _ = checkpoint
    a, _ = make_worker(path)
    train_step(a)
    out = str(tmp_path / "saved")
    a.handle("save", {"dir": out, "optimizer": True}, {})
    assert sorted(os.listdir(out)) == ["config.json", "generation_config.json", "model.safetensors", "optimizer"]
    params = a.handle("tensors", {"role": "policy"}, {})[1]
    on_disk, header = tiny.read_st(os.path.join(out, "model.safetensors"))
    assert {e["dtype"] for k, e in header.items() if k != "__metadata__"} == {"F32"}
    assert on_disk.keys() == params.keys()
    for k in params:
        assert torch.equal(on_disk[k].float(), params[k]), k
    _, meta = tiny.read_st(os.path.join(out, "optimizer", "policy.safetensors"))
    assert meta["__metadata__"] == {"step": "1"}

    b, reply = make_worker(out)
    b.handle("load_optimizer", {"dir": out}, {})
    for k, t in b.handle("tensors", {"role": "policy"}, {})[1].items():
        assert torch.equal(t, params[k]), k
    train_step(a)
    train_step(b)
    pa, pb = a.handle("tensors", {"role": "policy"}, {})[1], b.handle("tensors", {"role": "policy"}, {})[1]
    for k in pa:
        torch.testing.assert_close(pb[k], pa[k], atol=1e-6, rtol=0, msg=k)


def test_a_fresh_optimizer_after_reload_takes_a_different_step(checkpoint, make_worker, tmp_path):
    """The resume test above can fail: without load_optimizer, AdamW's moments and step count start over."""
    path, _, _ = checkpoint
    a, _ = make_worker(path)
    train_step(a)
    out = str(tmp_path / "saved")
    a.handle("save", {"dir": out, "optimizer": True}, {})
    b, _ = make_worker(out)
    train_step(a)
    train_step(b)
    pa, pb = a.handle("tensors", {"role": "policy"}, {})[1], b.handle("tensors", {"role": "policy"}, {})[1]
    assert max(float((pa[k] - pb[k]).abs().max()) for k in pa) > 1e-4


def test_load_optimizer_without_saved_state_says_how_to_save_it(checkpoint, make_worker, tmp_path):
    worker, _ = make_worker(checkpoint[0])
    with pytest.raises(Exception, match="save with optimizer: true"):
        worker.handle("load_optimizer", {"dir": str(tmp_path)}, {})


LORA = {"r": 2, "alpha": 4, "targetModules": ["q_proj", "v_proj"]}


def test_lora_trains_only_the_adapters_and_saves_them_in_pefts_layout(checkpoint, make_worker, tmp_path):
    path, raw, w = checkpoint
    base = forward(make_worker(path)[0])["logprobs"]
    worker, reply = make_worker(path, lora=LORA, reference=True)
    C, H, K, L, r = 16, 4, 2, 2, 2  # tiny.BASE's width, heads, key/value heads, layers; LORA's rank
    D = C // H
    assert reply["lora"] is True
    assert reply["trainableParameters"] == L * ((r * C + H * D * r) + (r * C + K * D * r))  # A (r, in) and B (out, r)
    torch.testing.assert_close(forward(worker)["logprobs"], base, atol=0, rtol=0)  # B starts at zero
    train_step(worker)
    tuned = forward(worker)["logprobs"]
    assert (tuned - base).sum() > 0.01
    torch.testing.assert_close(forward(worker, role="reference")["logprobs"], base, atol=0, rtol=0)  # adapters off

    out = str(tmp_path / "saved")
    worker.handle("save", {"dir": out}, {})
    cfg = json.load(open(os.path.join(out, "adapter", "adapter_config.json")))
    assert cfg["peft_type"] == "LORA" and (cfg["r"], cfg["lora_alpha"]) == (2, 4.0)
    assert cfg["target_modules"] == ["q_proj", "v_proj"]
    adapters, _ = tiny.read_st(os.path.join(out, "adapter", "adapter_model.safetensors"))
    modules = [f"model.layers.{i}.self_attn.{m}" for i in range(L) for m in ("q_proj", "v_proj")]
    assert sorted(adapters) == sorted(f"base_model.model.{m}.lora_{ab}.weight" for m in modules for ab in "AB")
    # adapter-only, as PEFT's save_pretrained: the frozen base is named, not rewritten (test_checkpoint.py)
    assert sorted(os.listdir(out)) == ["adapter", "config.json", "generation_config.json"]
    assert cfg["base_model_name_or_path"] == os.path.abspath(path)
    again, reply = make_worker(out)
    assert reply["lora"] is True
    torch.testing.assert_close(forward(again)["logprobs"], tuned, atol=0, rtol=0)


def test_a_shared_critic_values_each_token_from_the_hidden_state_before_it(checkpoint, make_worker, tmp_path):
    path, _, _ = checkpoint
    worker, _ = make_worker(path, critic="shared")
    values = forward(worker, role="critic")["values"]
    policy, head = worker.roles.policy, worker.roles.value_head
    want = torch.zeros(len(ROWS), T)
    with torch.no_grad():
        for b, row in enumerate(ROWS):
            hs = policy.hidden(torch.tensor([row]))[0]  # (len, C)
            for t in range(1, len(row)):
                want[b, t] = hs[t - 1] @ head.weight[0] + head.bias[0]
    torch.testing.assert_close(values, want, atol=1e-5, rtol=0)
    assert [n for n, _ in worker.roles.parameters("critic")] == ["value_head.weight", "value_head.bias"]
    out = str(tmp_path / "saved")
    worker.handle("save", {"dir": out}, {})
    again, _ = make_worker(out, critic="shared")
    torch.testing.assert_close(forward(again, role="critic")["values"], values, atol=0, rtol=0)


def test_a_role_the_engine_was_not_loaded_with_is_refused(checkpoint, make_worker):
    worker, _ = make_worker(checkpoint[0])
    with pytest.raises(ValueError, match="no reference model; load it with reference: true"):
        forward(worker, role="reference")
    with pytest.raises(ValueError, match="no critic; load it with critic"):
        forward(worker, role="critic")
    with pytest.raises(ValueError, match="backward_end without a pending backward_begin"):
        worker.handle("backward_end", {"B": 1, "T": T}, {"logprobs": torch.zeros(T)})


def generate_request(prompts, **params):
    flat = [t for p in prompts for t in p]
    p = dict({"maxNewTokens": 5, "temperature": 0, "seed": 0}, **params)
    lengths = torch.tensor([len(p) for p in prompts], dtype=torch.int32)
    return {"params": p}, {"prompts": torch.tensor(flat, dtype=torch.int32), "lengths": lengths}


def test_generate_returns_flat_tokens_with_lengths_and_stop_flags(checkpoint, make_worker):
    path, raw, w = checkpoint
    worker, _ = make_worker(path)
    prompts = [[3, 17, 5], [9, 30, 1, 22, 4]]
    first = []  # each prompt's greedy first token, from the reference
    for p in prompts:
        first.append(int(tiny.reference_logits(w, raw, p)[-1].argmax()))
    _, out = worker.handle("generate", *generate_request(prompts, stopTokenIds=[first[1]]))
    lengths = out["lengths"].tolist()
    assert lengths[1] == 1 and out["stopped"].tolist() == [int(first[1] in out["tokens"][: lengths[0]].tolist()), 1]
    assert out["tokens"].dtype == torch.int32 and out["tokens"].shape == (sum(lengths),)
    assert out["logprobs"].shape == (sum(lengths),)
    assert out["tokens"][0] == first[0] and out["tokens"][lengths[0]] == first[1]
    worker.handle("vocab", {"pieces": [f"<{i}>" for i in range(raw["vocab_size"])]}, {})
    _, out = worker.handle("generate", *generate_request(prompts[:1], stopStrings=[f"<{first[0]}>"]))
    assert out["tokens"].tolist() == [first[0]] and out["stopped"].tolist() == [1]


def test_non_finite_logits_in_generate_reply_with_the_prompts_place(checkpoint, make_worker):
    worker, _ = make_worker(checkpoint[0])
    with torch.no_grad():
        worker.roles.policy.model.embed_tokens.weight[22] = float("nan")
    h, bufs = generate_request([[3, 17, 5], [9, 30, 1, 22, 4]])
    try:
        worker.handle("generate", h, bufs)
    except NonFiniteLogitsError as e:
        reply = error_reply(7, e, "generate", h, bufs, 4096)
    else:
        pytest.fail("generate sampled from NaN logits")
    assert reply["id"] == 7 and reply["ok"] is False and reply["error"]["type"] == "NonFiniteLogitsError"
    assert reply["error"]["detail"]["index"] == 1 and reply["error"]["detail"]["logprob"] == "NaN"
    assert checkpoint[0] in reply["error"]["message"]
    json.dumps(reply, allow_nan=False)  # the reply frame's header is strict JSON


def test_out_of_memory_replies_name_what_to_lower(checkpoint):
    h, bufs = request(ROWS)
    reply = error_reply(1, MemoryError("can't allocate memory"), "forward", h, bufs, 8)
    oom = reply["error"]["outOfMemory"]
    assert oom["op"] == "forward" and oom["tokenBudget"] == 8
    assert "4 rows x 9 tokens" in oom["hint"] and "model.torch.tokenBudget (e.g. to 4)" in oom["hint"]
    assert reply["error"]["message"].startswith("can't allocate memory (out of memory: ")


def test_under_bf16_autocast_a_lora_models_checkpoint_names_its_float32_base(checkpoint, make_worker, tmp_path):
    path, _, _ = checkpoint
    device, autocast, precision = pick_device("cpu", "bfloat16")
    assert (device.type, precision) == ("cpu", "bfloat16")
    worker, _ = make_worker(path, autocast=autocast, lora=LORA)
    assert worker.roles.policy.model.embed_tokens.weight.dtype == torch.bfloat16  # the frozen base kept in bf16
    base = forward(make_worker(path)[0])["logprobs"]
    torch.testing.assert_close(forward(worker)["logprobs"], base, atol=0.1, rtol=0)  # bf16 compute, close to float32
    train_step(worker)
    out = str(tmp_path / "saved")
    worker.handle("save", {"dir": out}, {})
    assert not os.path.exists(os.path.join(out, "model.safetensors"))  # not the bf16 copy: the float32 files named
    again, _ = make_worker(out, autocast=autocast)
    assert again.roles.policy.model.embed_tokens.weight.dtype == torch.bfloat16
    torch.testing.assert_close(forward(again)["logprobs"], forward(worker)["logprobs"], atol=0, rtol=0)


def test_a_device_or_precision_the_machine_lacks_is_refused_with_the_fix():
    with pytest.raises(RuntimeError, match="precision must be auto, float32 or bfloat16, got `fp16`"):
        pick_device("cpu", "fp16")
    assert pick_device("cpu", "auto")[1:] == (None, "float32")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="sees no CUDA GPU.*use device cpu"):
            pick_device("cuda", "float32")


def test_the_bf16_rollout_copy_merges_lora_and_follows_each_optimizer_step(checkpoint, make_worker):
    worker, _ = make_worker(checkpoint[0], lora=LORA, rolloutCopy="bf16")
    worker.handle("generate", *generate_request([[3, 17, 5]]))  # makes the copy
    for _ in range(2):
        train_step(worker)
        worker.handle("generate", *generate_request([[3, 17, 5]]))
        copy = worker.roles.rollout_model()
        q, scaling = worker.roles.policy.model.layers[1].self_attn.q_proj, LORA["alpha"] / LORA["r"]
        want = (q.weight + scaling * q.lora_B @ q.lora_A).detach().bfloat16()
        got = copy.model.layers[1].self_attn.q_proj.weight
        assert got.dtype == torch.bfloat16 and torch.equal(got, want)
        assert float(q.lora_B.abs().sum()) > 0


@pytest.mark.skipif(hasattr(torch, "compile"), reason="torch.compile runs in src/engine/torch-compile.test.ts")
def test_model_torch_compile_on_a_torch_without_it_says_so_and_stays_eager(checkpoint, make_worker, capsys):
    worker, _ = make_worker(checkpoint[0], compile=True)
    assert worker.roles.policy.compiled is None
    assert f"torch {torch.__version__} has no torch.compile (added in torch 2.0)" in capsys.readouterr().err


def test_a_separate_critic_steps_toward_its_targets_and_reloads_from_critic(checkpoint, make_worker, tmp_path):
    path, _, _ = checkpoint
    worker, _ = make_worker(path, critic="separate")
    mask = real_tokens(ROWS)
    target = torch.linspace(-1, 1, T).expand(len(ROWS), T) * mask

    def loss(values):
        return float(((values - target) ** 2 * mask).sum())

    before = forward(worker, role="critic")["values"]
    live = worker.handle("tensors", {"role": "critic"}, {})[1]  # on a CPU in float32: the parameters themselves
    trunk = {k: t.clone() for k, t in live.items()}
    h, bufs = request(ROWS, role="critic")
    values = worker.handle("backward_begin", h, bufs)[1]["values"]
    torch.testing.assert_close(values, before, atol=1e-6, rtol=0)
    # d loss / d value = 2 (value - target) on the scored tokens
    worker.handle("backward_end", {"B": len(ROWS), "T": T}, {"values": (2 * (values - target) * mask).reshape(-1)})
    policy_grads = worker.handle("tensors", {"role": "policy", "what": "grad"}, {})[1]
    assert all(float(g.abs().sum()) == 0 for g in policy_grads.values())  # the critic's backward: its own model only
    worker.handle("optimizer_step", {"role": "critic", "settings": STEP}, {})
    after = forward(worker, role="critic")["values"]
    assert loss(after) < 0.9 * loss(before)
    moved = worker.handle("tensors", {"role": "critic"}, {})[1]
    assert sorted(trunk) == sorted([*tiny.tensor_names(tiny.config("qwen2")), "value_head.weight", "value_head.bias"])
    for k in ("model.embed_tokens.weight", "model.layers.1.mlp.down_proj.weight", "value_head.weight"):
        assert not torch.equal(moved[k], trunk[k]), k
    policy = forward(make_worker(path)[0])["logprobs"]
    torch.testing.assert_close(forward(worker)["logprobs"], policy, atol=0, rtol=0)  # the policy is a model apart

    out = str(tmp_path / "saved")
    worker.handle("save", {"dir": out}, {})
    files = ["config.json", "generation_config.json", "model.safetensors", "value_head.safetensors"]
    assert sorted(os.listdir(os.path.join(out, "critic"))) == files
    again, _ = make_worker(out, critic="separate")
    torch.testing.assert_close(forward(again, role="critic")["values"], after, atol=1e-6, rtol=0)
