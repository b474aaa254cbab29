"""generate.py: greedy decoding against recomputation from scratch (no KV cache), seeds, top-k / top-p, stop ids and
stop strings, the decode modes, and the error on non-finite logits."""

import math

import pytest
import tiny
import torch
from ragen_torch.generate import NonFiniteLogitsError, generate, pick
from ragen_torch.model import load_decoder
from ragen_torch.token_stats import token_stats

PROMPTS = [[3, 17, 5], [9, 30, 1, 22, 4], [3, 17, 5]]  # different lengths (left padding), one repeated (shared prefill)
GREEDY = {"maxNewTokens": 6, "temperature": 0, "seed": 0}


@pytest.fixture
def model(checkpoint):
    return load_decoder(checkpoint[0], torch.device("cpu"))


def greedy_from_scratch(w, raw, prompt, n):
    """Each next token the argmax of the reference logits over the whole sequence so far; with its log-prob."""
    ids, lps = list(prompt), []
    for _ in range(n):
        lp = torch.log_softmax(tiny.reference_logits(w, raw, ids)[-1], -1)
        ids.append(int(lp.argmax()))
        lps.append(float(lp.max()))
    return ids[len(prompt) :], lps


def test_greedy_decoding_equals_argmax_over_the_whole_sequence_each_step(checkpoint, model):
    _, raw, w = checkpoint
    out = generate(model, PROMPTS, GREEDY, mode="eager")
    for prompt, (tokens, lps, finish) in zip(PROMPTS, out):
        want_tokens, want_lps = greedy_from_scratch(w, raw, prompt, GREEDY["maxNewTokens"])
        assert tokens == want_tokens and finish == "length"
        assert lps == pytest.approx(want_lps, abs=1e-4)
    assert out[0][0] == out[2][0] and out[0][1] == pytest.approx(out[2][1], abs=1e-5)


def test_decode_modes_and_unshared_prefill_give_the_same_greedy_tokens(model):
    eager = generate(model, PROMPTS, GREEDY, mode="eager")
    for kw in ({"mode": "static"}, {"mode": "eager", "share_prompts": False}):
        got = generate(model, PROMPTS, GREEDY, **kw)
        assert [t for t, _, _ in got] == [t for t, _, _ in eager], kw
        for (_, a, _), (_, b, _) in zip(got, eager):
            assert a == pytest.approx(b, abs=1e-4)


def test_sampling_repeats_for_a_seed_and_differs_across_seeds(model):
    params = {"maxNewTokens": 8, "temperature": 1.5, "seed": 7}
    a = generate(model, PROMPTS, params, mode="eager")
    assert generate(model, PROMPTS, params, mode="eager") == a
    b = generate(model, PROMPTS, dict(params, seed=8), mode="eager")
    assert [t for t, _, _ in b] != [t for t, _, _ in a]


def test_top_k_of_one_samples_the_greedy_tokens(model):
    greedy = generate(model, PROMPTS, GREEDY, mode="eager")
    topk1 = generate(model, PROMPTS, {"maxNewTokens": 6, "temperature": 2.0, "topK": 1, "seed": 3}, mode="eager")
    assert [t for t, _, _ in topk1] == [t for t, _, _ in greedy]


def test_top_k_and_top_p_never_draw_outside_the_kept_tokens():
    # probabilities 0.5, 0.3, 0.15, 0.05: top_p 0.7 keeps {0, 1} (0.5 < 0.7, 0.8 >= 0.7); top_k 3 drops token 3
    logits = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log().repeat(4000, 1)
    g = torch.Generator().manual_seed(0)
    by_p = pick(logits, 1.0, 0, 0.7, g).bincount(minlength=4).tolist()
    assert by_p[2] == by_p[3] == 0 and by_p[0] > 0 and by_p[1] > 0
    assert abs(by_p[0] / 4000 - 0.5 / 0.8) < 0.03  # renormalised over the kept mass
    by_k = pick(logits, 1.0, 3, 1.0, g).bincount(minlength=4).tolist()
    assert by_k[3] == 0 and min(by_k[:3]) > 0
    assert pick(torch.tensor([[0.0, 3.0, 1.0]]), 0, 0, 1.0, g).tolist() == [1]


def test_a_stop_token_ends_its_row_only_and_is_kept(model):
    greedy = generate(model, PROMPTS, GREEDY, mode="eager")
    stop = greedy[1][0][2]  # the third token of the second prompt
    out = generate(model, PROMPTS, dict(GREEDY, stopTokenIds=[stop]), mode="eager")
    cut = greedy[1][0].index(stop) + 1
    assert out[1][0] == greedy[1][0][:cut] and out[1][2] == "stop"
    for i in (0, 2):  # the other rows run on unchanged, unless the stop id shows up in them too
        want = greedy[i][0][: greedy[i][0].index(stop) + 1] if stop in greedy[i][0] else greedy[i][0]
        assert out[i][0] == want and out[i][2] == ("stop" if stop in greedy[i][0] else "length")


def test_a_stop_string_spanning_two_tokens_ends_the_row(model):
    greedy = generate(model, PROMPTS[:1], GREEDY, mode="eager")[0][0]
    pieces = [f"<{i}>" for i in range(40)]
    stop = pieces[greedy[1]][1:] + pieces[greedy[2]][:-1]  # "a><b": in neither piece alone, in their concatenation
    cut = next(k for k in range(1, len(greedy) + 1) if stop in "".join(pieces[t] for t in greedy[:k]))
    out = generate(model, PROMPTS[:1], dict(GREEDY, stopStrings=[stop]), pieces, mode="eager")[0]
    assert cut <= 3 and out[0] == greedy[:cut] and out[2] == "stop"
    with pytest.raises(ValueError, match="stopStrings need the tokenizer's token texts"):
        generate(model, PROMPTS, dict(GREEDY, stopStrings=["x"]), mode="eager")


def test_no_new_tokens_returns_empty_completions(model):
    assert generate(model, PROMPTS, dict(GREEDY, maxNewTokens=0)) == [([], [], "length")] * 3


def test_non_finite_logits_raise_naming_the_prompt_and_step(model):
    with torch.no_grad():
        model.model.embed_tokens.weight[22] = float("inf")  # only the second prompt holds token 22
    with pytest.raises(NonFiniteLogitsError) as e:
        generate(model, PROMPTS, GREEDY, mode="eager", source="tiny-model")
    d = e.value.detail
    assert (d["model"], d["step"], d["index"], d["position"]) == ("tiny-model", 0, 1, 5)
    assert d["logprob"] in ("NaN", "Infinity", "-Infinity")
    assert "prompt 1" in str(e.value) and "tiny-model" in str(e.value)
    again = e.value.renumbered(4)
    assert again.detail["index"] == 4 and again.detail["step"] == 0


def test_non_finite_log_probs_are_spelled_as_javascript_does():
    assert NonFiniteLogitsError("m", 0, 0, 0, math.nan).detail["logprob"] == "NaN"
    assert NonFiniteLogitsError("m", 0, 0, 0, -math.inf).detail["logprob"] == "-Infinity"


def test_suppressed_ids_are_never_sampled_and_the_log_probs_leave_them_out(model):
    """A VLM's vision tokens (config.suppressed_ids): the greedy and sampled tokens avoid the ids the model likes best,
    and each log-prob is that of the softmax without them, as token_stats scores it."""
    free = generate(model, PROMPTS, GREEDY, mode="eager")
    off = sorted({t for tokens, _, _ in free for t in tokens})  # every id greedy decoding picked
    model.config.suppressed_ids = off
    try:
        for params in (GREEDY, {"maxNewTokens": 6, "temperature": 1.0, "seed": 4}):
            for mode in ("eager", "static"):
                out = generate(model, PROMPTS, params, mode=mode)
                for prompt, (tokens, lps, _) in zip(PROMPTS, out):
                    assert not set(tokens) & set(off)
                    ids = torch.tensor([prompt + tokens])
                    with torch.no_grad():
                        h = model(ids[:, :-1])[0]
                        lp, _ = token_stats(h, model.head_weight(), ids[0, 1:], suppressed=off)
                    assert lps == pytest.approx(lp[len(prompt) - 1 :].tolist(), abs=1e-4)
    finally:
        del model.config.suppressed_ids
