"""How the worker groups a request's rows into chunks that fit `model.torch.tokenBudget`, and, with
`model.torch.packing`, how a chunk's rows are packed padding-free into a few sequences (bins) with positions reset per
row and attention kept inside each row. src/engine/token-budget.ts mirrors `chunk_tokens` and `chunks` exactly, so the
trainer can cut micro-batches that are one chunk each.
"""

import torch


def chunk_tokens(lens, packing):
    """Tokens one chunk of rows of lengths `lens` (longest first) puts through the model: rows x longest padded, or
    bins x longest packed (first-fit decreasing into bins of the longest row's length). The empty chunk is 0."""
    if not lens:
        return 0
    return (len(first_fit(lens)) if packing else len(lens)) * lens[0]


def first_fit(lens):
    """Row positions (of `lens`, longest first) by bin: each row goes into the first bin with room for it, bins holding
    the longest row's length. Bins are never wider than that row, so packed attention costs no more than padded."""
    cap, bins, room = lens[0], [], []
    for i, n in enumerate(lens):
        for b, left in enumerate(room):
            if left >= n:
                bins[b].append(i)
                room[b] -= n
                break
        else:
            bins.append([i])
            room.append(cap - n)
    return bins


def chunks(lengths, rows, budget, packing):
    """`rows` longest first (ties by index), cut into chunks: a row joins the current chunk while the chunk's
    `chunk_tokens` stays within `budget`; a row alone is always a chunk. Incremental first-fit, so O(rows x bins)."""
    order = sorted(rows, key=lambda i: (-lengths[i], i))
    cur, room = [], []  # the current chunk, and with packing the room left in each of its bins
    for i in order:
        n = lengths[i]
        b = next((k for k, left in enumerate(room) if left >= n), None) if packing else None
        if cur:
            size = ((len(room) + (b is None)) if packing else (len(cur) + 1)) * lengths[cur[0]]
            if size > budget:
                yield cur
                cur, room, b = [], [], None
        cur.append(i)
        if packing and b is None:
            room.append(lengths[cur[0]] - n)
        elif packing:
            room[b] -= n
    if cur:
        yield cur


class Layout:
    """Where each scored token of a chunk sits. A chunk is `rows` rows of inputs x[:, :-1], shape
    (rows, L-1); `flat` (N,) indexes its N real tokens in that (rows, L-1) grid (row-major), and `slot` (N,) the same
    tokens in the packed (bins, L-1) grid. `positions` and `segments` (bins, L-1) are each token's position within its
    row and the row it belongs to (-1 at the bins' padding tail)."""

    def __init__(self, lens, device):
        W = max(lens) - 1
        order = sorted(range(len(lens)), key=lambda i: (-lens[i], i))
        bins = [[order[j] for j in members] for members in first_fit([lens[i] for i in order])]
        flat, slot, pos, seg = [], [], [], []
        for b, members in enumerate(bins):
            off = b * W
            for i in members:
                n = lens[i] - 1  # a row's inputs: every token but its last (a 1-token row has none)
                t = torch.arange(n)
                flat.append(i * W + t)
                slot.append(off + t)
                pos.append(t)
                seg.append(torch.full((n,), i, dtype=torch.long))
                off += n
        self.bins, self.shape = len(bins), (len(lens), W)
        self.flat = torch.cat(flat).to(device)
        self.slot = torch.cat(slot).to(device)
        size = self.bins * W
        self.positions = (
            torch.zeros(size, dtype=torch.long, device=device)
            .index_copy(0, self.slot, torch.cat(pos).to(device))
            .view(self.bins, W)
        )
        self.segments = (
            torch.full((size,), -1, dtype=torch.long, device=device)
            .index_copy(0, self.slot, torch.cat(seg).to(device))
            .view(self.bins, W)
        )

    def pack(self, x):
        """(rows, L-1) -> (bins, L-1): the real tokens moved to their slots, zeros elsewhere."""
        flat = x.reshape(-1).index_select(0, self.flat)
        return flat.new_zeros(self.bins * self.shape[1]).index_copy(0, self.slot, flat).view(self.bins, self.shape[1])

    def unpack(self, packed):
        """(N, ...) per real token (in `flat` order) -> (rows, L-1, ...), zeros at padding; differentiable."""
        out = packed.new_zeros((self.shape[0] * self.shape[1],) + tuple(packed.shape[1:]))
        return out.index_copy(0, self.flat, packed).view(self.shape + tuple(packed.shape[1:]))
