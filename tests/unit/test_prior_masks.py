"""SAP ``distribution`` priors under masks that are not plain causal: the mask decides the rows.

A row changes when it is not a visual token and its mask row allows every visual key. The
reference below applies that definition row by row with an explicit softmax; under a causal
mask it is "the rows after the visual span" (tests/unit/test_prior_rows.py holds that case).
"""

import pytest

torch = pytest.importorskip("torch")

from harness.attention import edit  # noqa: E402
from harness.attention.plan import VisualPrior  # noqa: E402
from tests.unit.test_window_masks import block_mask  # noqa: E402


def definition(out, prior, members, q, k, v, mask, group, scale):
    """Row by row: visual log-probs mixed with log(prior), the row's visual mass kept."""
    batch, _, q_len, _ = q.shape
    kv_len = k.shape[2]
    off = kv_len - q_len
    for b in range(batch):
        keys = prior.keys[b]
        for r in range(q_len):
            row = mask[b, 0, r]
            if (off + r) in keys.tolist() or not bool(row[keys].all()):
                continue
            for h in members:
                kv = h // group
                logits = (q[b, h, r] @ k[b, kv].T).float() * scale
                logits = logits.masked_fill(~row, float("-inf"))
                vis = logits[keys]
                mixed = (1 - prior.lam) * vis + prior.lam * prior.prior[b].log()
                logits[keys] = mixed - mixed.logsumexp(0) + vis.logsumexp(0)
                out[b, r, h] = torch.softmax(logits, 0) @ v[b, kv].float()
    return out


def run(mask, keys, lam=0.7, seed=0, q_len=None):
    gen = torch.Generator().manual_seed(seed)
    batch, _, q_rows, kv_len = mask.shape
    q = torch.randn(batch, 4, q_rows, 8, generator=gen) * 2
    k = torch.randn(batch, 2, kv_len, 8, generator=gen) * 2
    v = torch.randn(batch, 2, kv_len, 8, generator=gen)
    out = torch.randn(batch, q_rows, 4, 8, generator=gen)
    keys = torch.tensor(keys)
    prior = VisualPrior(
        keys, torch.softmax(torch.randn(keys.shape, generator=gen), -1), "distribution", lam=lam
    )
    want = definition(out.clone(), prior, [0, 1, 3], q, k, v, mask, 2, 0.35)
    got = out.clone()
    edit._prior_distribution(got, prior, [0, 1, 3], q, k, v, mask, 2, 0.35)
    return got, want, out


def test_bidirectional_image_block_rows_are_visual_and_stay():
    mask = block_mask([0, 2], 20, 20, [(6, 12)])
    keys = [list(range(6, 12))] * 2
    got, want, out = run(mask, keys)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert torch.equal(got[:, :12], out[:, :12]) and not torch.equal(got[:, 12:], out[:, 12:])


def test_rows_a_sliding_band_keeps_from_part_of_the_image_stay():
    """Band of 6 keys: rows 12..14 see all of [6, 12) (image rows stay), row 15 on do not."""
    mask = block_mask([0], 24, 24, [(6, 12)])
    pos = torch.arange(24)
    mask = mask & ((pos[:, None] - pos[None, :]) < 9)[None, None]
    got, want, out = run(mask, [list(range(6, 12))])
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert not torch.equal(got[:, 12:15], out[:, 12:15])
    assert torch.equal(got[:, 15:], out[:, 15:])


def test_a_bidirectional_prefix_changes_text_rows_before_the_image_too():
    """PaliGemma-like prefix [0, 14) with the image at [4, 10): rows 0..3 see it all."""
    mask = block_mask([0], 18, 18, [], prefix=14)
    got, want, out = run(mask, [list(range(4, 10))])
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert not torch.equal(got[:, :4], out[:, :4])
    assert torch.equal(got[:, 4:10], out[:, 4:10])
