"""Windowed + dense heads through the dispatch (GQA batching, in-place writes) vs reference."""

import pytest

torch = pytest.importorskip("torch")

from harness.attention.execute import _head_batches, run_layer_plan  # noqa: E402
from harness.attention.plan import Ablation, LayerPlan, Window  # noqa: E402


class FakeAttention:
    layer_idx = 0
    is_causal = True
    num_key_value_groups = 3


def test_head_batches_are_views_of_whole_groups_or_one_group():
    # group 3: heads 0, 2 | 3 4 5 | 7 | 9 10 11 | 12 13 14 | 16
    heads = [16, 0, 2, 3, 4, 5, 7, 9, 10, 11, 12, 13, 14]
    got = [(q.start, q.stop, k.start, k.stop) for q, k in _head_batches(heads, 3)]
    assert got == [
        (0, 1, 0, 1),
        (2, 3, 0, 1),
        (3, 6, 1, 2),
        (7, 8, 2, 3),
        (9, 15, 3, 5),
        (16, 17, 5, 6),
    ]
    # Heads 4..7 of group 4 straddle nothing; 1..6 of group 4 split at the group edge.
    assert [(q.start, q.stop) for q, _ in _head_batches(list(range(1, 7)), 4)] == [(1, 4), (4, 7)]


def run(lp, q, k, v, mask, kernel):
    return run_layer_plan(FakeAttention(), lp, q, k, v, mask, 0.0, None, {}, kernel)[0]


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("sinks", [0, 2])
def test_scattered_windows_match_reference(padded, sinks):
    """Uneven windowed heads per KV group, two window sizes, an ablated head, HF layouts."""
    gen = torch.Generator().manual_seed(sinks + 2 * padded)
    n, heads, kv_heads, dim = 150, 12, 4, 8
    q = torch.randn(2, n, heads, dim, generator=gen).transpose(1, 2)  # as HF passes them
    k, v = (torch.randn(2, n, kv_heads, dim, generator=gen).transpose(1, 2) for _ in range(2))
    mask = None
    if padded:
        pos = torch.arange(n)
        rows = [(pos[None] <= pos[:, None]) & (pos[None] >= p) for p in (0, 17)]
        mask = torch.stack(rows)[:, None]
    w1, w2 = Window(20, sinks), Window(7, sinks)
    window = {0: w1, 2: w1, 3: w1, 4: w1, 5: w1, 7: w2, 9: w1, 10: w1, 11: w1}
    lp = LayerPlan(window=window, ablate={6: Ablation("zero")})
    fast = run(lp, q, k, v, mask, "chunked")
    ref = run(lp, q, k, v, mask, "reference")
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)
    assert torch.all(fast[:, :, 6] == 0)
    # Dense heads equal plain SDPA with the KV heads repeated.
    krep, vrep = k.repeat_interleave(3, 1), v.repeat_interleave(3, 1)
    full = torch.nn.functional.scaled_dot_product_attention(
        q, krep, vrep, attn_mask=mask, is_causal=mask is None
    ).transpose(1, 2)
    torch.testing.assert_close(fast[:, :, [1, 8]], full[:, :, [1, 8]], atol=1e-6, rtol=1e-5)
    assert (fast[:, :, 0] - full[:, :, 0]).abs().max() > 1e-3  # the window bites
