"""Window kernels: chunked fast path vs explicit reference, on random shapes."""

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness.attention.window import (  # noqa: E402
    _bulk,
    full_bool_mask,
    window_attention_chunked,
    window_attention_reference,
    window_mask,
)


def hf_mask(pads, q_len, kv_len):
    """Causal (with cache offset) AND left-padding mask, like transformers' sdpa_mask."""
    off = kv_len - q_len
    q = torch.arange(off, kv_len)[:, None]
    k = torch.arange(kv_len)[None, :]
    rows = [((k <= q) & (k >= p)) for p in pads]
    return torch.stack(rows)[:, None]


@settings(max_examples=80, deadline=None)
@given(
    batch=st.integers(1, 3),
    kv_heads=st.integers(1, 2),
    group=st.integers(1, 3),
    q_len=st.integers(1, 40),
    extra=st.integers(0, 12),
    size=st.integers(1, 50),
    sinks=st.integers(0, 4),
    block=st.integers(1, 17),
    pad=st.integers(0, 6),
    masked=st.booleans(),
    strided_out=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_chunked_matches_reference(
    batch, kv_heads, group, q_len, extra, size, sinks, block, pad, masked, strided_out, seed
):
    gen = torch.Generator().manual_seed(seed)
    kv_len = q_len + extra
    heads = kv_heads * group
    q = torch.randn(batch, heads, q_len, 8, generator=gen)
    k = torch.randn(batch, kv_heads, kv_len, 8, generator=gen)
    v = torch.randn(batch, kv_heads, kv_len, 8, generator=gen)
    mask = None
    if masked:
        pads = [min(pad * (b % 2), kv_len - 1) for b in range(batch)]
        mask = hf_mask(pads, q_len, kv_len)
    # The reference takes one KV row per query head; the kernel takes the GQA layout.
    k_rep, v_rep = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    ref = window_attention_reference(q, k_rep, v_rep, mask, size, sinks, 0.3)
    out = None
    if strided_out:  # a (B, h, S, D) view of a (B, S, h, D) buffer, as the dispatch passes
        out = torch.full((batch, q_len, heads, 8), float("nan")).transpose(1, 2)
    fast = window_attention_chunked(q, k, v, mask, size, sinks, 0.3, block=block, out=out)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)
    if out is not None:
        assert fast is out


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("extra", [0, 5, 40])
@pytest.mark.parametrize("size, block", [(37, 16), (16, 16), (8, 40), (64, 64)])
def test_bulk_blocks_match_reference(masked, extra, size, block):
    """Longer rows, so most blocks take the one-call strided path (not the per-block loop)."""
    gen = torch.Generator().manual_seed(size + block + extra)
    q_len, kv_len = 300, 300 + extra
    q = torch.randn(2, 4, q_len, 8, generator=gen)
    k, v = (torch.randn(2, 2, kv_len, 8, generator=gen) for _ in range(2))
    mask = hf_mask([0, 23], q_len, kv_len) if masked else None
    ref = window_attention_reference(
        q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), mask, size, 0, None
    )
    done = _bulk(q, k, v, mask, size, None, block, torch.zeros_like(q))
    assert done[1] - done[0] >= 2 * block  # the strided path ran
    fast = window_attention_chunked(q, k, v, mask, size, block=block)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_bulk_accepts_broadcast_mask():
    """HF may hand an expanded mask (stride 0 over the batch): the strided mask view copes."""
    q, k, v = (torch.randn(3, 2, 90, 8) for _ in range(3))
    mask = hf_mask([5], 90, 90).expand(3, 1, 90, 90)
    ref = window_attention_reference(q, k, v, mask, 10, 0)
    torch.testing.assert_close(window_attention_chunked(q, k, v, mask, 10, block=8), ref)


def test_reference_is_the_definition():
    """One hand-checked case: W=2, one sink, row 4 sees keys {0, 3, 4}."""
    q = torch.zeros(1, 1, 5, 2)  # equal logits → uniform over the allowed keys
    k = torch.randn(1, 1, 5, 2)
    v = torch.arange(5.0).view(1, 1, 5, 1).expand(1, 1, 5, 2)
    out = window_attention_reference(q, k, v, None, 2, 1)
    assert out[0, 0, 4, 0].item() == pytest.approx((0 + 3 + 4) / 3)
    assert out[0, 0, 1, 0].item() == pytest.approx((0 + 1) / 2)
    mask = window_mask(None, 1, 5, 5, 2, 1)[0, 0]
    assert mask[4].tolist() == [True, False, False, True, True]


def test_window_covering_everything_is_causal():
    mask = hf_mask([2, 0], 6, 9)
    full = window_mask(mask, 2, 6, 9, size=9, sinks=0)
    assert torch.equal(full, full_bool_mask(mask, 2, 6, 9))


def test_sinks_follow_left_padding():
    mask = hf_mask([3], 8, 8)
    m = window_mask(mask, 1, 8, 8, size=1, sinks=2)[0, 0]
    assert m[7].tolist() == [False, False, False, True, True, False, False, True]


def test_fully_masked_rows_give_zero():
    mask = hf_mask([4], 6, 6)
    q, k, v = (torch.randn(1, 2, 6, 4) for _ in range(3))
    for out in (
        window_attention_reference(q, k, v, mask, 3, 1),
        window_attention_chunked(q, k, v, mask, 3, 1, block=2),
    ):
        assert torch.all(out[:, :, :4] == 0)
        assert torch.all(out[:, :, 4:].abs().sum(-1) > 0)
