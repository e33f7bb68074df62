"""Causal sliding-window attention kernels (per head group), plus shared mask helpers.

Conventions: ``q`` is (B, h, S_q, D); ``k``/``v`` are (B, h, S_kv, D) with one KV row per
query head for the reference (callers gather KV heads), or (B, h_kv, S_kv, D) with GQA
grouping for the chunked kernel; ``attention_mask`` is HF's bool mask
(B, 1, S_q, S_kv), True = attend, or None for "plain causal"; the first query row sits at
absolute position ``S_kv − S_q``. The mask is authoritative: a windowed query at position p
sees every key the mask allows except those at or before p − W, plus (``sinks`` = n) the
first n *real* keys (after left padding) when the mask allows them. For a causal mask that
is the band (p − W, p]; where the model lets a query see keys *ahead* of it (Gemma3's
bidirectional image block, PaliGemma's prefix-LM) those keys stay, as in transformers' own
Gemma3 sliding layers (``sliding_window_overlay`` AND (causal OR blockwise)). Rows that see
no key return 0, as torch's SDPA does.

Two implementations with one contract: :func:`window_attention_reference` (explicit masked
softmax over the full S_q × S_kv mask) and :func:`window_attention_chunked` (SDPA per query
block over keys [s − W + 1, e) plus gathered sink keys; O(S·W) work).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from harness.attention.masks import keys_ahead, last_keys

if TYPE_CHECKING:
    import torch

__all__ = [
    "full_bool_mask",
    "first_real",
    "keys_ahead",
    "last_keys",
    "capped",
    "masked_softmax",
    "per_head_kv",
    "window_mask",
    "window_attention_reference",
    "window_attention_chunked",
    "default_block",
]


def full_bool_mask(
    attention_mask: torch.Tensor | None, batch: int, q_len: int, kv_len: int, device=None
) -> torch.Tensor:
    """HF's mask made explicit: (B, 1, S_q, S_kv) bool (causal with offset when None)."""
    import torch

    if attention_mask is not None:
        return attention_mask.expand(batch, 1, q_len, kv_len)
    q_pos = torch.arange(kv_len - q_len, kv_len, device=device)
    causal = q_pos[:, None] >= torch.arange(kv_len, device=device)[None, :]
    return causal.view(1, 1, q_len, kv_len).expand(batch, 1, q_len, kv_len)


def first_real(attention_mask: torch.Tensor | None, batch: int, device=None) -> torch.Tensor:
    """(B,) position of the first key any query row may attend (0 without padding)."""
    import torch

    if attention_mask is None:
        return torch.zeros(batch, dtype=torch.long, device=device)
    valid = attention_mask.any(dim=2)[:, 0]  # [batch, kv]
    return valid.int().argmax(dim=-1).expand(batch)


def per_head_kv(tensor: torch.Tensor, heads: list[int], group: int) -> torch.Tensor:
    """KV rows for the given query heads: (B, len(heads), S, D) (no full repeat)."""
    return tensor[:, [h // group for h in heads]]


def capped(logits: torch.Tensor, softcap: float | None) -> torch.Tensor:
    """Logit softcapping as HF's eager attention does it (Gemma 2): c · tanh(logits / c)."""
    import torch

    if softcap is None:
        return logits
    return torch.tanh(logits / softcap) * softcap


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim where ``mask``; rows with no True give zeros (like SDPA)."""
    import torch

    probs = torch.softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.nan_to_num(probs, nan=0.0)


def window_mask(
    attention_mask: torch.Tensor | None,
    batch: int,
    q_len: int,
    kv_len: int,
    size: int,
    sinks: int = 0,
    device=None,
) -> torch.Tensor:
    """The full window mask (B, 1, S_q, S_kv): band ∪ sinks, ANDed with causal + padding."""
    import torch

    base = full_bool_mask(attention_mask, batch, q_len, kv_len, device)
    q_pos = torch.arange(kv_len - q_len, kv_len, device=device)
    k_pos = torch.arange(kv_len, device=device)
    keep = (q_pos[:, None] - k_pos[None, :] < size).view(1, 1, q_len, kv_len)
    if sinks:
        start = first_real(attention_mask, batch, device).view(batch, 1, 1, 1)
        keep = keep | (k_pos.view(1, 1, 1, kv_len) < start + sinks)
    return base & keep


def window_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attention_mask: torch.Tensor | None,
    size: int,
    sinks: int = 0,
    scale: float | None = None,
    softcap: float | None = None,
) -> torch.Tensor:
    """Eager reference: explicit logits, full mask, masked softmax. Returns (B, h, S_q, D).

    ``softcap`` caps the logits as HF's eager attention does (Gemma 2).
    """
    batch, _, q_len, dim = q.shape
    kv_len = k.shape[2]
    scale = dim**-0.5 if scale is None else scale
    mask = window_mask(attention_mask, batch, q_len, kv_len, size, sinks, q.device)
    logits = capped((q @ k.transpose(-1, -2)) * scale, softcap)  # [batch, head, q_pos, k_pos]
    return masked_softmax(logits, mask) @ v


def default_block(size: int) -> int:
    """Query rows per block: small blocks waste fewer masked keys (W + b − 1 per row of W).

    Measured (one CPU thread, CPU time, 16K tokens): W=512, 16×64 heads: b=32 ≈ 64 < 128
    (−13%) < 256; W=1024, 8×128 heads: b=64 < 128 ≈ 256 (−5%). Below 64 rows per block SDPA's
    own overhead grows; tiny windows use b = W.
    """
    return 64 if size >= 64 else max(16, size)


def window_attention_chunked(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attention_mask: torch.Tensor | None,
    size: int,
    sinks: int = 0,
    scale: float | None = None,
    block: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Fast path: SDPA over query blocks, keys [s − W + 1, e) plus sink keys.

    Without sinks, all interior blocks (whose key span starts at or after key 0) go through
    one SDPA call: keys are an overlapping strided *view* (no copy), blocks are the batch
    dimension and the band mask (b, W + b − 1) is shared by every block. The first blocks,
    the tail and every block with sinks take the per-block loop. Where the mask lets rows see
    keys ahead of them (:func:`last_keys`: Gemma3's image block, PaliGemma's prefix), the
    strided blocks holding such rows are computed again per block with their key span
    reaching the last key the mask allows; the rest of the strided path stands.

    Args:
        q: (B, h, S_q, D) queries.
        k: (B, h_kv, S_kv, D) keys; ``h_kv`` divides ``h`` and query head i reads KV head
            ``i // (h // h_kv)`` (GQA, as SDPA's ``enable_gqa``), so KV is never copied
            per query head.
        v: (B, h_kv, S_kv, D) values.
        attention_mask: HF bool mask (B, 1, S_q, S_kv) or None.
        size: Window W.
        sinks: Number of sink tokens (first real tokens).
        scale: Softmax scale (default D^-1/2).
        block: Query rows per block (default :func:`default_block`).
        out: Optional (B, h, S_q, D) tensor (may be a strided view) written in place.

    Returns:
        (B, h, S_q, D) attention outputs (``out`` when given).
    """
    import torch

    batch, heads, q_len, _ = q.shape
    kv_len = k.shape[2]
    block = max(1, block or default_block(size))
    if k.shape[1] != heads and q.device.type == "cuda":
        # CUDA's fused kernels take GQA only without a mask (else the math kernel runs).
        k, v = (t.repeat_interleave(heads // t.shape[1], 1) for t in (k, v))
    if out is None:
        out = q.new_empty(batch, heads, q_len, v.shape[-1])
    if sinks:
        start = first_real(attention_mask, batch, q.device)
        for s, e in _spans(0, q_len, block):
            _one_block(q, k, v, attention_mask, size, (sinks, start), scale, (s, e), out)
        return out
    lo, hi = _bulk(q, k, v, attention_mask, size, scale, block, out)
    # The rows before and after the strided blocks: one call each (the head rows' keys all
    # start at 0, so a block loop there would only add calls).
    for s, e in ((0, lo), (hi, q_len)) if hi > lo else _spans(0, q_len, block):
        if e > s:
            _one_block(q, k, v, attention_mask, size, (0, None), scale, (s, e), out)
    last = None if attention_mask is None else last_keys(attention_mask)
    if last is not None:  # strided blocks with rows that see keys ahead: again, keys extended
        ahead = (last > torch.arange(kv_len - q_len, kv_len)).tolist()
        for s, e in _spans(lo, hi, block):
            if any(ahead[s:e]):  # a host list: no device sync per block
                _one_block(q, k, v, attention_mask, size, (0, None), scale, (s, e), out)
    return out


def _spans(lo: int, hi: int, block: int) -> list[tuple[int, int]]:
    return [(s, min(s + block, hi)) for s in range(lo, hi, block)]


def _bulk(q, k, v, attention_mask, size: int, scale, block: int, out) -> tuple[int, int]:
    """All interior blocks in one SDPA call per batch row; returns the query rows done."""
    import torch.nn.functional as F  # noqa: N812

    batch, heads, q_len, dim = q.shape
    kv_len = k.shape[2]
    offset = kv_len - q_len
    # Block i covers query rows [i·b, (i+1)·b) and keys from offset + i·b − W + 1.
    first = -(-max(0, size - 1 - offset) // block)
    count = q_len // block - first
    if count < 2:
        return 0, 0
    lo, hi, span = first * block, (first + count) * block, size + block - 1
    k0 = offset + lo - size + 1
    band = _band(block, size, str(q.device))  # [q_row, key] of every block
    # Without padding every row sees its own key: an additive float mask is exact and SDPA
    # need not convert a bool mask on every call.
    additive = _band(block, size, str(q.device), q.dtype) if attention_mask is None else None
    gqa = k.shape[1] != heads
    for b in range(batch):
        ks, vs = (_block_view(t[b], k0, block, span, count) for t in (k, v))
        qs = q[b, :, lo:hi].unflatten(1, (count, block)).transpose(0, 1)
        mask = additive
        if attention_mask is not None:
            am = attention_mask[b, 0]  # [q_pos, k_pos], possibly broadcast (stride 0)
            sq, sk = am.stride()
            view = am.as_strided(
                (count, 1, block, span),
                (block * (sq + sk), 0, sq, sk),
                am.storage_offset() + lo * sq + k0 * sk,
            )
            mask = view & band
        res = F.scaled_dot_product_attention(
            qs, ks, vs, attn_mask=mask, scale=scale, enable_gqa=gqa
        )  # [block_idx, head, row, dim]
        out[b, :, lo:hi].unflatten(1, (count, block)).transpose(0, 1).copy_(res)
    return lo, hi


@functools.lru_cache(maxsize=32)
def _band(block: int, size: int, device: str, dtype=None):
    """(b, W + b − 1) band of a strided block: bool (True = attend), or additive 0/−inf.

    Cached: on a shared CPU every small op costs a thread-pool wake-up (ms under load).
    """
    import torch

    rel = torch.arange(block, device=device)[:, None] + (size - 1)
    rel = rel - torch.arange(size + block - 1, device=device)[None, :]
    band = (rel >= 0) & (rel < size)
    if dtype is None:
        return band
    return torch.zeros(band.shape, dtype=dtype, device=device).masked_fill(~band, float("-inf"))


def _block_view(t, start: int, step: int, span: int, count: int):
    """(count, h, span, D) overlapping view of t (h, S, D): block i = rows start + i·step."""
    sh, ss, sd = t.stride()
    shape = (count, t.shape[0], span, t.shape[2])
    return t.as_strided(shape, (step * ss, sh, ss, sd), t.storage_offset() + start * ss)


def _one_block(q, k, v, attention_mask, size: int, sink_info, scale, rows, out) -> None:
    """Query rows [s, e): SDPA over keys [s − W + 1, end) (+ sink keys gathered in front).

    ``end`` is the block's last query + 1, or further when the mask allows keys ahead of the
    rows (:func:`keys_ahead`). With a mask, causality and everything ahead come from the mask
    alone; without one the band is causal. ``sink_info`` is (sinks, first real key per batch
    row or None).
    """
    import torch
    import torch.nn.functional as F  # noqa: N812

    batch, heads, q_len, dim = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    offset = kv_len - q_len
    (sinks, start), (s, e) = sink_info, rows
    if not sinks and attention_mask is None and offset == s == 0 and e <= size:
        # Leading rows p < W see every key ≤ p: plain causal, no mask to build.
        out[:, :, :e] = F.scaled_dot_product_attention(
            q[:, :, :e], k[:, :, :e], v[:, :, :e], is_causal=True, scale=scale,
            enable_gqa=kv_heads != heads,
        )  # fmt: skip
        return
    end = offset + e
    last = None if attention_mask is None else last_keys(attention_mask)
    if last is not None:  # the mask lets some rows see keys ahead: the span reaches them
        end = max(end, int(last[s:e].max()) + 1)
    q_pos = torch.arange(offset + s, offset + e, device=q.device)
    ks = max(0, offset + s - size + 1)
    k_pos = torch.arange(ks, end, device=q.device)
    rel = q_pos[:, None] - k_pos[None, :]
    behind = rel >= 0 if attention_mask is None else torch.ones_like(rel, dtype=torch.bool)
    mask = (behind & (rel < size)).view(1, 1, e - s, -1)
    kb, vb = k[:, :, ks:end], v[:, :, ks:end]
    if sinks:
        sink_idx = (start[:, None] + torch.arange(sinks, device=q.device)).clamp(max=kv_len - 1)
        # sinks that fall inside this key slice but outside the band
        in_sink = k_pos.view(1, 1, 1, -1) < start.view(batch, 1, 1, 1) + sinks
        mask = mask | (behind.view(1, 1, e - s, -1) & in_sink)
    if attention_mask is not None:
        mask = mask & attention_mask[:, :, s:e, ks:end]
    if sinks:
        # Sinks already inside the band are masked here so they are not counted twice.
        sm = sink_idx[:, None, :] < ks
        if attention_mask is None:
            sm = sm & (sink_idx[:, None, :] <= q_pos[None, :, None])
        else:
            rows = attention_mask[:, 0, s:e]
            sm = sm & rows.gather(-1, sink_idx[:, None, :].expand(-1, e - s, -1))
        mask = torch.cat([sm[:, None].expand(-1, 1, -1, -1), mask.expand(batch, -1, -1, -1)], -1)
        gather = sink_idx.view(batch, 1, sinks, 1).expand(batch, kv_heads, sinks, dim)
        k_sink = k.gather(2, gather)
        v_sink = v.gather(2, gather[..., :1].expand(-1, -1, -1, v.shape[-1]))
        kb, vb = torch.cat([k_sink, kb], 2), torch.cat([v_sink, vb], 2)
    out[:, :, s:e] = F.scaled_dot_product_attention(
        q[:, :, s:e], kb, vb, attn_mask=mask, scale=scale, enable_gqa=kv_heads != heads
    )
