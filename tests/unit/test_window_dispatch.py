"""Windowed + dense heads through the dispatch (GQA batching, in-place writes) vs reference."""

import pytest

torch = pytest.importorskip("torch")

from harness.dispatch_exec import _gqa_batches, run_layer_plan  # noqa: E402
from harness.dispatch_plan import Ablation, LayerPlan, Window  # noqa: E402


class FakeAttention:
    layer_idx = 0
    is_causal = True
    num_key_value_groups = 3


def test_gqa_batches_group_by_count():
    # group 3: KV0 ← {0, 2}, KV1 ← {3, 4, 5}, KV2 ← {7}, KV3 ← {9, 10, 11}
    batches = _gqa_batches([11, 0, 2, 3, 4, 5, 7, 9, 10], 3)
    assert sorted(batches) == [([0, 2], [0]), ([3, 4, 5, 9, 10, 11], [1, 3]), ([7], [2])]


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
