"""SAP ``distribution`` priors compute only the rows they keep, with the all-rows outputs.

``_all_rows`` is the implementation before that change (commit 41821a8's
``harness/attention/execute.py::_prior_distribution``), kept here as the reference: it
computes every query row and then keeps only the rows after each sample's last visual key.
The row-restricted code must give the same tensor bit for bit (each kept row is the same
arithmetic; only which rows are computed, and where the memory chunks start, changed).
"""

import pytest

torch = pytest.importorskip("torch")

from harness.attention import edit  # noqa: E402
from harness.attention.plan import VisualPrior  # noqa: E402
from harness.attention.window import full_bool_mask, masked_softmax, per_head_kv  # noqa: E402


def _all_rows(out, prior, members, query, key, value, attention_mask, group, scale):
    """The pre-change implementation: every row computed, rows after the visual span kept."""
    batch, _, q_len, _ = query.shape
    kv_len = key.shape[2]
    offset = kv_len - q_len
    k, v = per_head_kv(key, members, group), per_head_kv(value, members, group)
    vis, val = edit._visual_columns(prior, batch, kv_len, query.device)
    last_vis = torch.where(vis, torch.arange(kv_len, device=query.device), -1).max(1).values
    log_prior = torch.log(val.clamp(min=1e-30))[:, None, None, :]
    full = full_bool_mask(attention_mask, batch, q_len, kv_len, query.device)
    chunk = max(1, (1 << 22) // max(1, kv_len * len(members) * batch))
    for s in range(0, q_len, chunk):
        e = min(q_len, s + chunk)
        logits = (query[:, members, s:e] @ k.transpose(-1, -2)).float() * scale
        mask = full[:, :, s:e]
        vmask = mask & vis[:, None, None, :]
        lse_old = logits.masked_fill(~vmask, float("-inf")).logsumexp(-1, keepdim=True)
        mixed = (1 - prior.lam) * logits + prior.lam * log_prior
        lse_new = mixed.masked_fill(~vmask, float("-inf")).logsumexp(-1, keepdim=True)
        logits = torch.where(vmask, mixed - lse_new + lse_old, logits)
        new = (masked_softmax(logits, mask) @ v.float()).to(out.dtype).transpose(1, 2)
        rows = torch.arange(offset + s, offset + e, device=query.device)
        sees_all = (rows[None, :] > last_vis[:, None]) & (last_vis[:, None] >= 0)
        cur = out[:, s:e, members]
        out[:, s:e, members] = torch.where(sees_all[:, :, None, None], new, cur)


def _case(seed, batch, heads, kv_heads, q_len, kv_len, keys, valid=None, pads=None, dim=8):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, q_len, dim, generator=gen) * 2
    k = torch.randn(batch, kv_heads, kv_len, dim, generator=gen) * 2
    v = torch.randn(batch, kv_heads, kv_len, dim, generator=gen)
    out = torch.randn(batch, q_len, heads, dim, generator=gen)
    keys = torch.tensor(keys)
    prior = torch.softmax(torch.randn(keys.shape, generator=gen), -1)
    mask = None
    if pads is not None:  # explicit causal ∧ left-padding mask
        off = kv_len - q_len
        causal = torch.arange(kv_len)[None] <= torch.arange(off, kv_len)[:, None]
        mask = torch.stack([causal & (torch.arange(kv_len)[None] >= p) for p in pads])[:, None]
    valid = None if valid is None else torch.tensor(valid)
    return q, k, v, out, keys, prior, valid, mask


CASES = {
    # batch of 3, left padding, visual spans ending at different rows, GQA group 2
    "padded_batch": dict(
        seed=0,
        batch=3,
        heads=6,
        kv_heads=3,
        q_len=24,
        kv_len=24,
        keys=[[3, 4, 5, 6], [8, 9, 10, 11], [12, 13, 14, 15]],
        pads=[2, 0, 5],
    ),
    # one sample's visual keys are all padding entries: it never changes
    "no_visual_in_one": dict(
        seed=1,
        batch=2,
        heads=4,
        kv_heads=4,
        q_len=16,
        kv_len=16,
        keys=[[2, 3, 4], [5, 6, 7]],
        valid=[[True, True, False], [False, False, False]],
    ),
    # cached prefix (q_len < kv_len), no explicit mask: causal with offset
    "cached_prefix": dict(
        seed=2,
        batch=2,
        heads=4,
        kv_heads=2,
        q_len=6,
        kv_len=20,
        keys=[[10, 11, 12, 13], [14, 15, 16, 17]],
    ),
    # a decode step
    "decode": dict(seed=3, batch=2, heads=4, kv_heads=2, q_len=1, kv_len=20, keys=[[3, 4], [5, 6]]),
    # visual span still running at the last row: nothing changes
    "span_to_the_end": dict(
        seed=4, batch=1, heads=4, kv_heads=2, q_len=12, kv_len=12, keys=[[8, 9, 10, 11]]
    ),
    # long enough for several memory chunks, which now start at the first kept row
    "chunked": dict(
        seed=5,
        batch=2,
        heads=4,
        kv_heads=2,
        q_len=2048,
        kv_len=2048,
        keys=[list(range(100, 1900)), list(range(200, 2000))],
        pads=[0, 40],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_kept_rows_equal_the_all_rows_code_bit_for_bit(name, lam):
    q, k, v, out, keys, prior, valid, mask = _case(**CASES[name])
    vp = VisualPrior(keys, prior, "distribution", lam=lam, valid=valid)
    members = [0, 1, 3]
    group = q.shape[1] // k.shape[1]
    want, got = out.clone(), out.clone()
    _all_rows(want, vp, members, q, k, v, mask, group, 0.35)
    edit._prior_distribution(got, vp, members, q, k, v, mask, group, 0.35)
    assert torch.equal(got, want)
    if name != "span_to_the_end" and lam > 0:
        assert not torch.equal(got, out)  # the case really changes rows


def test_only_rows_after_the_visual_span_are_computed():
    """The matmul work follows the kept rows (the all-rows code did 16x this here)."""
    from torch.utils.flop_counter import FlopCounterMode

    q, k, v, out, keys, prior, valid, mask = _case(
        seed=6,
        batch=2,
        heads=4,
        kv_heads=2,
        q_len=256,
        kv_len=256,
        keys=[list(range(10, 230)), list(range(20, 240))],
        pads=[0, 4],
    )
    vp = VisualPrior(keys, prior, "distribution", lam=0.5)

    def flops(fn):
        with FlopCounterMode(display=False) as counter:
            fn(out.clone(), vp, [0, 1], q, k, v, mask, 2, 0.35)
        return counter.get_total_flops()

    kept = 256 - 230  # rows from the batch's earliest kept row (after key 229) on
    per_row = flops(_all_rows) / 256
    assert flops(edit._prior_distribution) == kept * per_row
