"""The worker's models by role, as src/engine/local.ts holds them: the policy (optionally LoRA), a frozen reference
('base' = the policy with adapters off when LoRA is on) and a critic (a value head on the policy's trunk, or a
separate model with its head); token-aligned teacher-forced outputs and the backward of sum(grad * output).
"""

import contextlib
import os

import torch
import torch.nn as nn

from . import fsdp, packing
from .compiled import compile_layers
from .frozen import RolloutCopy, freeze_bf16, freeze_bf16_base, rollout_copy_wanted
from .model import LINEAR_MODULES, load_decoder, make_decoder
from .safetensors_io import CheckpointError, read_safetensors
from .token_stats import plain_token_stats_from_logits, suppressed_ids, token_stats

VALUE_HEAD_FILE = "value_head.safetensors"


def load_value_head(directory, hidden, device, generator):
    """`value_head.safetensors` of a checkpoint, else a fresh head: normal(0, 0.02) weight, zero bias."""
    head = nn.Linear(hidden, 1)
    path = os.path.join(directory, VALUE_HEAD_FILE)
    with torch.no_grad():
        if os.path.exists(path):
            w, _ = read_safetensors(path)
            for name, p in (("value_head.weight", head.weight), ("value_head.bias", head.bias)):
                if name not in w or tuple(w[name].shape) != tuple(p.shape):
                    raise CheckpointError(f"{path}: `{name}` missing or not of shape {list(p.shape)}")
                p.copy_(w[name].float())
        else:
            head.weight.copy_(torch.randn(1, hidden, generator=generator) * 0.02)
            head.bias.zero_()
    return head.to(device)


class Roles:
    def __init__(self, device, autocast, budget, dist):
        self.device, self.autocast, self.budget, self.dist = device, autocast, budget, dist
        self.packing = False  # pack a chunk's rows padding-free (packing.py) instead of padding them to the longest
        self.graph_budget = (
            budget  # most tokens of graphs one backward keeps for its output gradients (see backward_begin)
        )
        self.pending = (
            None  # the graphs (or the recipe to recompute them) of a backward waiting for its output gradients
        )
        self.fsdp = False
        self.passes = {"forwardPasses": 0, "recomputedPasses": 0}  # chunks run through a model (the `stats` op)

    def load(self, a):
        path, seed = a["path"], int(a["seed"])
        torch.manual_seed(seed)  # LoRA dropout
        gen = torch.Generator().manual_seed(seed + 1)
        self.source = path
        self.policy = load_decoder(path, self.device, adapters=True, generator=gen)
        lora = a.get("lora")
        if lora and self.policy.lora is None:
            t = lora.get("targetModules") or "all-linear"
            targets = (
                LINEAR_MODULES if t == "all-linear" or "all-linear" in t else [m for m in LINEAR_MODULES if m in t]
            )
            self.policy.attach_lora(int(lora["r"]), float(lora["alpha"]), float(lora.get("dropout") or 0), targets, gen)
        vision = a.get("vision") or {}
        if getattr(self.policy.config, "vision", None) is not None:
            self.policy.set_vision_train(bool(vision.get("train")))  # frozen unless asked (after LoRA froze the base)
        elif vision.get("train"):
            raise ValueError(
                f"model.vision.train is true, but {path} is a text-only model (model_type "
                f"{self.policy.config.model_type}): set it false or load a vision-language checkpoint (qwen2_5_vl)"
            )
        if self.autocast and self.policy.lora is not None and not self.sharded():  # (FSDP groups keep one dtype)
            freeze_bf16_base(self.policy)
        self.reference = None
        if a.get("reference"):
            self.reference = (
                "base"
                if self.policy.lora
                else load_decoder(a.get("referencePath") or path, self.device, adapters=False)
            )
            if self.reference != "base":
                self.reference.requires_grad_(False)
                if self.autocast:  # frozen: stored in the compute dtype (frozen.py)
                    freeze_bf16(self.reference)
        self.critic_mode = a.get("critic")
        self.critic_model, self.value_head, self.critic_source = None, None, None
        head_gen = torch.Generator().manual_seed(seed + 2)
        if self.critic_mode == "shared":
            self.value_head = load_value_head(path, self.policy.config.C, self.device, head_gen)
        elif self.critic_mode == "separate":
            own = os.path.join(path, "critic")
            src = a.get("criticPath") or (own if os.path.exists(os.path.join(own, "config.json")) else path)
            self.critic_model = load_decoder(src, self.device, adapters=False)
            if getattr(self.critic_model.config, "vision", None) is not None:  # its own tower, trained as the policy's
                self.critic_model.set_vision_train(bool(vision.get("train")))
            self.value_head = load_value_head(src, self.critic_model.config.C, self.device, head_gen)
            self.critic_source = src
        elif self.critic_mode is not None:
            raise ValueError(f"critic must be 'shared', 'separate' or null, got {self.critic_mode!r}")
        for m in (self.policy, self.critic_model):
            if m is not None:
                m.checkpointing = bool(a.get("gradientCheckpointing"))
        if a.get("compile"):
            compile_layers(
                [m for m in (self.policy, self.reference, self.critic_model) if m is not None and m != "base"]
            )
        self.rollout_copy = None
        self.bf16_copy = (
            RolloutCopy() if rollout_copy_wanted(a.get("rolloutCopy", "auto"), self.device, self.autocast) else None
        )
        self.fsdp = self.sharded()  # the models are FSDP modules (their weights gathered only inside the module call)
        if self.fsdp:
            for m in (self.policy, self.reference, self.critic_model):
                if m is not None and m != "base":
                    fsdp.shard(m)

    def sharded(self):
        return bool(self.dist and self.dist.sharded)

    def rollout_model(self):
        """The model `generate` samples from: the policy, or with FSDP an unsharded copy of it (bf16 under autocast,
        LoRA merged) refreshed from the shards at each call, so decoding needs no collectives; else the bf16 copy when
        model.torch.rolloutCopy asks for one (frozen.py), refreshed after optimizer steps."""
        if not self.sharded():
            return self.policy if self.bf16_copy is None else self.bf16_copy.get(self.policy)
        fsdp.reshard(self.policy)
        if self.rollout_copy is None:
            with torch.device("meta"):  # torch >= 2 (FSDP2 needs 2.4): no host copy of the weights
                copy = make_decoder(self.policy.config).to(torch.bfloat16 if self.autocast else torch.float32)
            self.rollout_copy = copy.to_empty(device=self.device).eval()
        return fsdp.merged_copy(self.policy, self.rollout_copy, self.rollout_copy.head_weight().dtype)

    def weights_changed(self):
        """An optimizer step ran: the rollout copy is refreshed at the next generate."""
        if self.bf16_copy is not None:
            self.bf16_copy.mark_stale()

    def parameters(self, role):
        """Trainable (name, parameter) of a role, named as the local engine names them (the shards, with FSDP)."""
        if self.sharded():
            for m in (self.policy, self.critic_model):
                if m is not None:
                    fsdp.reshard(m)
        if role == "policy":
            return self.policy.trainable()
        if role != "critic":
            raise ValueError(f"role must be 'policy' or 'critic', got {role!r}")
        if self.value_head is None:
            raise ValueError("this engine has no critic; load it with critic: 'shared' or 'separate'")
        head = [("value_head.weight", self.value_head.weight), ("value_head.bias", self.value_head.bias)]
        return (self.critic_model.trainable() if self.critic_model is not None else []) + head

    def chunks(self, lengths, rows):
        """`rows` in groups of similar length (longest first) whose padded (or packed) size fits the token budget."""
        return packing.chunks(lengths, rows, self.budget, self.packing)

    def chunk_tokens(self, lengths, rows):
        return packing.chunk_tokens([lengths[r] for r in rows], self.packing)

    def _model(self, role, values):
        """(model, value head or None, whether log-probs are computed, adapters on) of a role."""
        if role == "policy":
            if values and self.critic_mode != "shared":
                raise ValueError("values in a policy pass need critic mode 'shared'")
            return self.policy, self.value_head if values else None, True, True
        if role == "reference":
            if self.reference is None:
                raise ValueError("this engine has no reference model; load it with reference: true")
            return (self.policy, None, True, False) if self.reference == "base" else (self.reference, None, True, True)
        if role == "critic":
            if self.value_head is None:
                raise ValueError("this engine has no critic; load it with critic: 'shared' or 'separate'")
            return self.critic_model or self.policy, self.value_head, False, True
        raise ValueError(f"role must be 'policy', 'reference' or 'critic', got {role!r}")

    def my_chunks(self, lengths):
        mine = list(self.chunks(lengths, self.dist.rows(len(lengths)) if self.dist else range(len(lengths))))
        if self.sharded():  # FSDP's collectives need the same passes on every rank: empty chunks pad the count
            mine += [[] for _ in range(self.dist.max_int(len(mine)) - len(mine))]
        return mine

    def outputs(self, role, ids, lengths, entropy, values, train, chunks=None, images=None):
        """[(rows, L, {key: (rows, L-1) tensor})]: per-token outputs of each chunk (default: this rank's), zero at padding;
        `images`: each row's (pixel values, grids) or None (vision.images_from_buffers)."""
        model, head, want_lp, adapters = self._model(role, values or role == "critic")
        entropy = entropy and role != "critic"
        model.train(train)
        model.set_adapters(adapters)
        parts = []
        try:
            for rows in self.my_chunks(lengths) if chunks is None else chunks:
                L = max((lengths[r] for r in rows), default=0)
                if L < 2:
                    if self.sharded():  # this rank still joins the pass (a 1-token dummy whose outputs count 0)
                        parts.append(self.dummy_pass(model, head))
                    continue
                idx = torch.tensor(rows, device=self.device)
                x = ids.index_select(0, idx)[:, :L]
                lens = torch.tensor([lengths[r] for r in rows], device=self.device)
                mask = torch.arange(L - 1, device=self.device)[None, :] < (lens - 1)[:, None]
                imgs = None if images is None else [images[r] for r in rows]
                if imgs is not None and all(im is None for im in imgs):
                    imgs = None
                self.passes["forwardPasses"] += 1
                with self.autocast() if self.autocast else contextlib.nullcontext():  # grad mode: the caller's
                    if self.packing and imgs is not None:
                        raise ValueError(
                            "packed rows (model.torch.packing) do not carry images yet: set model.torch.packing false "
                            "for a vision-language model"
                        )
                    if self.packing:
                        out = self.packed_outputs(model, head, want_lp, entropy, x, [lengths[r] for r in rows])
                    else:
                        out = self.padded_outputs(model, head, want_lp, entropy, x, imgs)
                parts.append((rows, L, {k: t * mask for k, t in out.items()}))
        finally:
            model.set_adapters(True)
        return parts

    def padded_outputs(self, model, head, want_lp, entropy, x, images=None):
        """{key: (rows, L-1)} of the rows x (rows, L) padded to the longest (with their images, if any)."""
        rows, L = x.shape
        kw = {} if images is None else {"images": images}
        if (want_lp or entropy) and self.fsdp:
            # FSDP gathers the head's weight only inside the module call: the logits are made there.
            h, logits = model(x[:, :-1], with_logits=True, **kw)
            logp, ent = plain_token_stats_from_logits(logits, x[:, 1:], entropy, suppressed_ids(model))
        else:
            h = model(x[:, :-1], **kw)
            if want_lp or entropy:  # one chunk of logits at a time, never the (rows, L, V) tensor
                logp, ent = token_stats(
                    h.reshape(-1, h.shape[-1]),
                    model.head_weight(),
                    x[:, 1:].reshape(-1),
                    entropy,
                    suppressed=suppressed_ids(model),
                )
                logp, ent = logp.view(rows, L - 1), None if ent is None else ent.view(rows, L - 1)
        out = {"logprobs": logp} if want_lp else {}
        if entropy:
            out["entropy"] = ent
        if head is not None:
            out["values"] = head(h.float()).squeeze(-1)
        return out

    def packed_outputs(self, model, head, want_lp, entropy, x, lens):
        """The same outputs from the rows packed into bins (packing.py): the layers run the bins (real tokens and each
        bin's tail), the head, log-prob and values the real tokens only; positions restart at each row, attention
        stays inside it."""
        lay = packing.Layout(lens, self.device)
        targets = x[:, 1:].reshape(-1).index_select(0, lay.flat)  # (N,) the real tokens' next tokens
        if (want_lp or entropy) and self.fsdp:
            h, logits = model(lay.pack(x[:, :-1]), with_logits=True, positions=lay.positions, segments=lay.segments)
            logits = logits.reshape(-1, logits.shape[-1]).index_select(0, lay.slot)
            logp, ent = plain_token_stats_from_logits(logits, targets, entropy, suppressed_ids(model))
        else:
            h = model(lay.pack(x[:, :-1]), positions=lay.positions, segments=lay.segments)
        h = h.reshape(-1, h.shape[-1]).index_select(0, lay.slot)  # (N, C)
        if (want_lp or entropy) and not self.fsdp:
            logp, ent = token_stats(h, model.head_weight(), targets, entropy, suppressed=suppressed_ids(model))
        out = {"logprobs": lay.unpack(logp)} if want_lp else {}
        if entropy:
            out["entropy"] = lay.unpack(ent)
        if head is not None:
            out["values"] = lay.unpack(head(h.float()).squeeze(-1))
        return out

    def dummy_pass(self, model, head):
        with self.autocast() if self.autocast else contextlib.nullcontext():
            h, logits = model(torch.zeros(1, 1, dtype=torch.long, device=self.device), with_logits=True)
        zero = logits.float().sum() * 0
        if head is not None:
            zero = zero + head(h.float()).sum() * 0
        return ([], 0, {"dummy": zero})

    def aligned(self, parts, B, T, keys):
        """Token-aligned (B, T) float32 CPU arrays of the chunk outputs (every rank's rows): entry (b, t) scores token t."""
        res = {k: torch.zeros(B, T) for k in keys}
        for rows, L, out in parts:
            if not rows:
                continue
            idx = torch.tensor(rows)
            for k, t in out.items():
                res[k][idx, 1:L] = t.detach().float().cpu()
        return {k: self.dist.sum_(v) for k, v in res.items()} if self.dist else res

    def keys(self, role, entropy, values):
        keys = ["logprobs"]
        if entropy and role != "critic":
            keys.append("entropy")
        if values or role == "critic":
            keys.append("values")
        return keys

    def forward(self, role, ids, lengths, entropy, images=None):
        with torch.no_grad():
            parts = self.outputs(role, ids, lengths, entropy, False, False, images=images)
        return self.aligned(parts, ids.shape[0], ids.shape[1], self.keys(role, entropy, False))

    def backward_begin(self, role, ids, lengths, entropy, values, diagnostic=False, images=None):
        """Outputs of a training pass whose gradients come later. Chunks keep their graphs while their tokens together
        fit `graph_budget` (the first chunk always does); the rest run without one and are recomputed one by one in
        backward_end (memory of one chunk, at the cost of a second forward), with the RNG state restored so that LoRA
        dropout draws the same masks. A `diagnostic` pass (gradient analysis) runs without dropout, so it draws nothing
        from the RNG and leaves the training passes' masks as they were."""
        if role not in ("policy", "critic"):
            raise ValueError(f"backward needs role 'policy' or 'critic', got {role!r}")
        self.pending = None
        chunks = self.my_chunks(lengths)
        args = (role, ids, lengths, entropy, values, not diagnostic)
        kw = {"images": images}
        keep, total = 0, 0
        for rows in chunks:
            total += self.chunk_tokens(lengths, rows)
            if keep > 0 and total > self.graph_budget:
                break
            keep += 1
        if self.sharded():  # FSDP's collectives need the same passes on every rank: the fewest kept graphs of any rank
            keep = -self.dist.max_int(-keep)
        graphs, later, parts = [], [], []
        for k, rows in enumerate(chunks):
            if k < keep:
                with torch.enable_grad():
                    done = self.outputs(*args, chunks=[rows], **kw)
                graphs += done
                parts += done
            else:
                later.append((rows, self.rng_state()))
                with torch.no_grad():
                    parts += self.outputs(*args, chunks=[rows], **kw)
        self.pending = (args, kw, graphs, later)
        return self.aligned(parts, ids.shape[0], ids.shape[1], self.keys(role, entropy, values))

    def backward_end(self, grads):
        """Back-propagate sum(grad * output) over the pending pass; `grads` by key, (B, T) on the device."""
        pending, self.pending = self.pending, None
        if pending is None:
            raise ValueError("backward_end without a pending backward_begin")
        args, kw, graphs, later = pending
        self.surrogate_backward(graphs, grads)
        if not later:
            return
        saved, ran = self.rng_state(), self.passes["forwardPasses"]
        try:
            for rows, state in later:
                self.set_rng_state(state)
                with torch.enable_grad():
                    self.surrogate_backward(self.outputs(*args, chunks=[rows], **kw), grads)
        finally:
            self.set_rng_state(saved)
            self.passes["recomputedPasses"] += self.passes["forwardPasses"] - ran

    def surrogate_backward(self, parts, grads):
        loss = None
        for rows, L, out in parts:
            if not rows:  # FSDP's dummy pass: a zero term, so that this rank's backward joins the collectives too
                loss = out["dummy"] if loss is None else loss + out["dummy"]
                continue
            idx = torch.tensor(rows, device=self.device)
            for k, t in out.items():
                if k in grads:
                    term = (t * grads[k].index_select(0, idx)[:, 1:L]).sum()
                    loss = term if loss is None else loss + term
        if loss is not None and loss.requires_grad:
            loss.backward()

    def rng_state(self):
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        return torch.get_rng_state(), cuda

    def set_rng_state(self, state):
        torch.set_rng_state(state[0])
        if state[1] is not None:
            torch.cuda.set_rng_state(state[1], self.device)
