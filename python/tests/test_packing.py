"""packing.py: first-fit bins, the token size of a chunk, chunks under the token budget (worked by hand, then as
properties over random lengths), and the Layout's pack/unpack."""

import random

import torch
from ragen_torch.packing import Layout, chunk_tokens, chunks, first_fit


def test_first_fit_puts_each_row_in_the_first_bin_with_room():
    # capacity 5: [5] full; 4 opens a bin (room 1); 3 opens one (room 2); 2 fits the third; 1 fits the second
    assert first_fit([5, 4, 3, 2, 1]) == [[0], [1, 4], [2, 3]]
    assert first_fit([3, 3, 3]) == [[0], [1], [2]]
    assert first_fit([4, 1, 1, 1, 1]) == [[0], [1, 2, 3, 4]]


def test_a_chunk_costs_rows_times_longest_padded_and_bins_times_longest_packed():
    assert chunk_tokens([5, 4, 3, 2, 1], packing=False) == 25
    assert chunk_tokens([5, 4, 3, 2, 1], packing=True) == 15
    assert chunk_tokens([], packing=True) == 0 and chunk_tokens([], packing=False) == 0


def test_chunks_worked_by_hand():
    lengths = [2, 6, 3, 5]  # longest first: rows 1 (6), 3 (5), 2 (3), 0 (2)
    # padded, budget 10: [1] (two rows would be 2 x 6); [3, 2] (2 x 5); [0] (adding it to [3, 2] would be 3 x 5)
    assert list(chunks(lengths, range(4), 10, False)) == [[1], [3, 2], [0]]
    # packed, budget 10: [1]; then 5 and 3 in two bins of 5 (10), and 2 fits the second bin's room of 2
    assert list(chunks(lengths, range(4), 10, True)) == [[1], [3, 2, 0]]
    # a row longer than the budget is a chunk of its own
    assert list(chunks([9, 9], [0, 1], 4, False)) == [[0], [1]]
    # only the rows asked for, ties by index
    assert list(chunks([4, 4, 4, 4], [3, 1], 100, False)) == [[1, 3]]


def test_chunks_cover_each_row_once_longest_first_within_the_budget():
    rnd = random.Random(0)
    for _ in range(200):
        n = rnd.randint(1, 12)
        lengths = [rnd.randint(1, 20) for _ in range(n)]
        budget, packing = rnd.randint(1, 80), rnd.random() < 0.5
        got = list(chunks(lengths, range(n), budget, packing))
        flat = [r for c in got for r in c]
        assert sorted(flat) == list(range(n))
        assert flat == sorted(range(n), key=lambda i: (-lengths[i], i))
        for c in got:
            lens = [lengths[r] for r in c]
            assert len(c) == 1 or chunk_tokens(lens, packing) <= budget
            bins = first_fit(lens)
            assert all(sum(lens[i] for i in b) <= lens[0] for b in bins)  # no bin wider than the longest row
        for a, b in zip(got, got[1:]):  # greedy: the next chunk's first row did not fit this one
            lens = [lengths[r] for r in a + b[:1]]
            assert chunk_tokens(lens, packing) > budget


def test_a_layout_packs_real_tokens_with_restarted_positions_and_unpacks_them():
    lens = [4, 2, 3, 1]  # inputs: 3, 1, 2, 0 tokens (a row's last token is only a target)
    lay = Layout(lens, torch.device("cpu"))
    W = max(lens) - 1
    x = torch.arange(1, 1 + len(lens) * W).view(len(lens), W)  # distinct values; padding positions included
    packed = lay.pack(x)
    # first fit over the rows' full lengths 4, 3, 2, 1 (rows 0, 2, 1, 3) into bins of 4: [0], [2, 3], [1]; a bin holds
    # its rows' inputs (3, 2 + 0, 1 tokens) in a width of 3, the rest padding (segment -1)
    assert lay.bins == 3
    assert packed.tolist() == [[1, 2, 3], [7, 8, 0], [4, 0, 0]]
    assert lay.positions.tolist() == [[0, 1, 2], [0, 1, 0], [0, 0, 0]]
    assert lay.segments.tolist() == [[0, 0, 0], [2, 2, -1], [1, -1, -1]]
    real = torch.arange(W)[None] < (torch.tensor(lens) - 1)[:, None]
    back = lay.unpack(x.reshape(-1).index_select(0, lay.flat))
    assert torch.equal(back, x * real)
