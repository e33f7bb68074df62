"""Window kernels under masks that are not causal: the model's mask is authoritative.

Gemma3 lets an image block attend both ways; PaliGemma makes the whole prompt a bidirectional
prefix (families.md). A windowed head keeps what the model's mask allows except keys more than
W − 1 positions behind the query (plus sinks): transformers' own Gemma3 sliding layers compose
window and image block the same way (``sliding_window_overlay`` AND (causal OR blockwise),
``create_masks_for_vision_model`` in models/gemma3/modeling_gemma3.py), which
tests/integration/test_attention_semantics.py checks on the model itself.
"""

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness.attention.window import (  # noqa: E402
    keys_ahead,
    window_attention_chunked,
    window_attention_reference,
    window_mask,
)


def block_mask(pads, q_len, kv_len, blocks, prefix=0):
    """Causal ∧ left padding, OR'd with bidirectional [s, e) blocks and a prefix (absolute)."""
    off = kv_len - q_len
    q = torch.arange(off, kv_len)[:, None]
    k = torch.arange(kv_len)[None, :]
    allowed = k <= q
    for s, e in blocks:
        allowed = allowed | ((q >= s) & (q < e) & (k >= s) & (k < e))
    if prefix:
        allowed = allowed | ((q < prefix) & (k < prefix))
    return torch.stack([allowed & (k >= p) for p in pads])[:, None]


@settings(max_examples=80, deadline=None)
@given(
    batch=st.integers(1, 3),
    group=st.integers(1, 2),
    q_len=st.integers(2, 60),
    extra=st.integers(0, 6),
    size=st.integers(1, 20),
    sinks=st.integers(0, 3),
    block=st.integers(1, 17),
    start=st.integers(0, 30),
    length=st.integers(1, 25),
    prefix=st.integers(0, 20),
    pad=st.integers(0, 5),
    seed=st.integers(0, 1000),
)
def test_chunked_keeps_what_the_mask_allows_ahead(
    batch, group, q_len, extra, size, sinks, block, start, length, prefix, pad, seed
):
    gen = torch.Generator().manual_seed(seed)
    kv_len = q_len + extra
    pads = [min(pad * (b % 2), kv_len - 1) for b in range(batch)]
    mask = block_mask(pads, q_len, kv_len, [(start, start + length)], prefix)
    q = torch.randn(batch, 2 * group, q_len, 8, generator=gen)
    k, v = (torch.randn(batch, 2, kv_len, 8, generator=gen) for _ in range(2))
    ref = window_attention_reference(
        q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), mask, size, sinks, 0.3
    )
    fast = window_attention_chunked(q, k, v, mask, size, sinks, 0.3, block=block)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_bidirectional_block_long_enough_for_the_strided_path():
    """300 rows with a 64-token image block: the bulk path must not drop keys ahead."""
    gen = torch.Generator().manual_seed(0)
    mask = block_mask([0, 11], 300, 300, [(100, 164)])
    q = torch.randn(2, 4, 300, 8, generator=gen)
    k, v = (torch.randn(2, 2, 300, 8, generator=gen) for _ in range(2))
    ref = window_attention_reference(
        q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), mask, 16, 0
    )
    torch.testing.assert_close(window_attention_chunked(q, k, v, mask, 16, block=16), ref)


def test_window_mask_definition_on_an_image_block():
    """Row 3 of a bidirectional block [2, 6) with W = 2 sees keys 2..5; row 7 sees 6, 7."""
    mask = block_mask([0], 8, 8, [(2, 6)])
    win = window_mask(mask, 1, 8, 8, size=2)[0, 0]
    assert win[3].tolist() == [False, False, True, True, True, True, False, False]
    assert win[5].tolist() == [False, False, False, False, True, True, False, False]
    assert win[7].tolist() == [False] * 6 + [True, True]


def test_keys_ahead_detects_non_causal_masks_only():
    assert not keys_ahead(block_mask([0, 3], 9, 9, []))
    assert not keys_ahead(block_mask([0], 4, 9, []))  # cached prefix, causal
    assert keys_ahead(block_mask([0, 3], 9, 9, [(4, 7)]))
    assert keys_ahead(block_mask([0], 9, 9, [], prefix=3))
    assert keys_ahead(block_mask([0], 4, 9, [(6, 9)]))  # ahead of the query, behind the cache
    assert not keys_ahead(block_mask([0], 1, 9, [(2, 5)]))  # decode row: nothing ahead


def test_keys_ahead_reads_inference_and_meta_masks():
    """Generation runs under torch.inference_mode, whose tensors keep no version counter."""
    import torch

    from harness.attention.window import keys_ahead

    with torch.inference_mode():
        causal = torch.ones(4, 4, dtype=torch.bool).tril()[None, None]
        both_ways = torch.ones(1, 1, 4, 4, dtype=torch.bool)
        assert keys_ahead(causal) is False and keys_ahead(both_ways) is True
    assert keys_ahead(torch.empty(1, 1, 4, 4, dtype=torch.bool, device="meta")) is False


def test_last_keys_reads_ahead_slices_and_bounds_the_other_rows_by_their_position():
    from harness.attention.masks import last_keys

    mask = block_mask([0, 3], 600, 600, [(300, 340)])
    last = last_keys(mask)
    assert last[310].item() == 339 and last[339].item() == 339  # inside the block: its end
    assert last[100].item() == 100 and last[500].item() == 500  # elsewhere: the row itself
    assert last_keys(block_mask([0, 3], 600, 600, [])) is None


def test_additive_float_masks_are_read_as_bool_and_biases_refused():
    """GLM-5-Next's indexed_attention passes a float mask (0 / min) although sdpa_mask is
    registered; the plan must read it as the bool mask it stands for."""
    import types

    import torch

    from harness.attention.exact import explicit_mask

    module = types.SimpleNamespace(is_causal=True, layer_idx=3)
    allowed = torch.ones(4, 4, dtype=torch.bool).tril()[None, None]
    q = k = torch.zeros(1, 2, 4, 8)
    for fill in (torch.finfo(torch.float32).min, float("-inf")):
        additive = torch.zeros(1, 1, 4, 4).masked_fill(~allowed, fill)
        assert torch.equal(explicit_mask(module, additive, q, k), allowed)
    bias = torch.zeros(1, 1, 4, 4).masked_fill(~allowed, -1.5)
    with pytest.raises(ValueError, match="layer 3"):
        explicit_mask(module, bias, q, k)
