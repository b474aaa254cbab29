"""optim.py: AdamW steps worked out by hand in plain floats, gradient clipping, the skip on a non-finite gradient,
and the optimizer state's save and load (sharded too)."""

import math
import os

import pytest
import torch
from ragen_torch.optim import RoleOptimizer, load_optimizers, save_optimizers

B1, B2, EPS = 0.9, 0.999, 1e-8


def adamw_by_hand(p, grads, lr, wd):
    """Loshchilov & Hutter's AdamW (decoupled decay), one float parameter at a time."""
    m = v = 0.0
    for t, g in enumerate(grads, start=1):
        p *= 1 - lr * wd
        m = B1 * m + (1 - B1) * g
        v = B2 * v + (1 - B2) * g * g
        p -= lr * (m / (1 - B1**t)) / (math.sqrt(v / (1 - B2**t)) + EPS)
    return p


def param(values):
    return torch.nn.Parameter(torch.tensor(values, dtype=torch.float32))


def test_two_adamw_steps_match_the_hand_computation():
    p0, g1, g2 = [1.0, -2.0, 0.5, 0.0], [0.5, -0.25, 0.0, 3.0], [0.1, 0.4, -0.2, 3.0]
    p = param(p0)
    opt = RoleOptimizer([("w", p)])
    s = {"lr": 0.1, "weightDecay": 0.05, "maxGradNorm": 0}
    for g in (g1, g2):
        p.grad = torch.tensor(g)
        r = opt.step(s)
        assert r == {"gradNorm": pytest.approx(math.sqrt(sum(x * x for x in g)), rel=1e-6), "skipped": False}
        assert p.grad is None
    want = [adamw_by_hand(p0[i], [g1[i], g2[i]], 0.1, 0.05) for i in range(4)]
    assert p.tolist() == pytest.approx(want, abs=1e-6)
    assert p[0] < p0[0] * (1 - 0.1 * 0.05) and p[1] > p0[1] * (1 - 0.1 * 0.05)  # against the gradient's sign


def test_clipping_scales_the_gradient_to_the_max_norm_before_the_moments():
    p = param([0.0, 0.0])
    opt = RoleOptimizer([("w", p)])
    p.grad = torch.tensor([3.0, 4.0])  # norm 5
    r = opt.step({"lr": 0.01, "maxGradNorm": 1.0})
    assert r["gradNorm"] == pytest.approx(5.0)  # the norm before clipping
    m = opt.export()["m.w"]
    assert m.tolist() == pytest.approx([(1 - B1) * 0.6, (1 - B1) * 0.8], rel=1e-5)


def test_a_non_finite_gradient_skips_the_step_and_drops_the_gradients():
    p, q = param([1.0, 2.0]), param([3.0])
    opt = RoleOptimizer([("p", p), ("q", q)])
    p.grad, q.grad = torch.tensor([0.1, float("inf")]), torch.tensor([0.5])
    r = opt.step({"lr": 0.1})
    assert r["skipped"] is True and math.isinf(r["gradNorm"])
    assert p.tolist() == [1.0, 2.0] and q.tolist() == [3.0]
    assert p.grad is None and q.grad is None and opt.step_count == 0


def test_optimizer_state_saved_in_shards_loads_back(tmp_path):
    named = [("a", param([1.0, 2.0, 3.0])), ("b", param([-1.0] * 5))]
    opt = RoleOptimizer(named)
    for _, p in named:
        p.grad = torch.arange(float(p.numel())) - 1
    opt.step({"lr": 0.1})
    save_optimizers(str(tmp_path), {"policy": opt}, max_shard_bytes=24)  # m.a and v.a (12 bytes each) fill a shard
    files = sorted(os.listdir(tmp_path / "optimizer"))
    assert files == [f"policy-0000{i}-of-00003.safetensors" for i in (1, 2, 3)] + ["policy.safetensors.index.json"]
    fresh = RoleOptimizer([(n, param([0.0] * p.numel())) for n, p in named])
    load_optimizers(str(tmp_path), lambda role: fresh)
    assert fresh.step_count == 1
    for mine, theirs in ((fresh.m, opt.m), (fresh.v, opt.v)):
        for x, y in zip(mine, theirs):
            assert torch.equal(x, y)


def test_optimizer_state_of_another_shape_is_refused_naming_the_key(tmp_path):
    opt = RoleOptimizer([("a", param([1.0, 2.0]))])
    opt.named[0][1].grad = torch.ones(2)
    opt.step({"lr": 0.1})
    save_optimizers(str(tmp_path), {"policy": opt})
    other = RoleOptimizer([("a", param([1.0, 2.0, 3.0]))])
    with pytest.raises(Exception, match=r"`m.a` missing or not of shape \[3\]"):
        load_optimizers(str(tmp_path), lambda role: other)
