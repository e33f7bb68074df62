"""Streamed KV in decode: the :class:`Stream` plan effect and its attention on a streamed cache.

A decode call on a layer whose plan carries a :class:`Stream` reads its KV groups in two
parts: the kept groups' whole cache (what the cache layer's ``update`` returned, with HF's
mask) and, for every other group, the sink + recent tokens the streamed cache layer holds
(:mod:`harness.attention.stream_cache`) with their absolute positions. Query head ``h`` reads
KV group ``h // group`` in both. The result equals :class:`~harness.attention.plan.Window`
(``recent``, ``sink``) applied in decode on a dense cache (the reference,
``Stream.reference``): the same keys, in another order (docs/decode.md).

Importing this module imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.api.errors import UsageError

if TYPE_CHECKING:
    import torch

__all__ = ["Stream", "StreamCacheMissing", "stream_attention", "stream_heads"]

BOUND_ATTR = "_headscope_stream_bound"
"""Attribute a streamed cache layer sets on its attention module in ``update``; the attention
function pops it in the same layer call (so a binding never outlives its call)."""


class StreamCacheMissing(UsageError):
    """A decode call under ``decode=stream`` found a dense cache, not headscope's streamed one."""


@dataclass(frozen=True)
class Stream:
    """Streamed KV in decode: whole KV groups keep their cache, the others sink + recent keys.

    In a decode call (one with a cache prefix), every query head of a KV group outside
    ``kept`` sees only the first ``sink`` real tokens and the last ``recent`` positions (its
    own included) of what the mask allows: ``Window(recent, sink, in_decode=True)`` in decode
    (:func:`harness.attention.execute` builds it).
    Prefill is unchanged. With headscope's streamed cache
    (:func:`harness.attention.stream_cache.stream_cache`) those groups store only those
    tokens; ``reference=True`` computes the same on a dense cache with per-head masks (the
    eager reference of the streamed path).

    Attributes:
        kept: KV groups of the layer that keep their whole cache.
        sink: Sink tokens (each row's first real tokens) the streamed groups keep.
        recent: Most recent positions the streamed groups keep (≥ 1: the query's own).
        reference: Compute on a dense cache with per-head masks instead of a streamed cache.
    """

    kept: frozenset[int]
    sink: int
    recent: int
    reference: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "kept", frozenset(self.kept))
        if self.sink < 0 or self.recent < 1:
            raise ValueError(f"invalid stream sink={self.sink} recent={self.recent}")

    def streamed(self, num_kv_heads: int) -> list[int]:
        """The layer's KV groups that keep sink + recent tokens only."""
        return [g for g in range(num_kv_heads) if g not in self.kept]


def stream_heads(groups: list[int], group: int) -> list[int]:
    """The query heads of KV ``groups`` (``group`` query heads per KV head), in order."""
    return [g * group + j for g in groups for j in range(group)]


def missing_cache(layer: int) -> StreamCacheMissing:
    """The error of a decode call under ``decode=stream`` on a dense cache."""
    return StreamCacheMissing(
        f"hybrid decode=stream: layer {layer} decodes on a dense cache; generate through "
        "headscope (adapter.generate), or pass past_key_values="
        "harness.attention.stream_cache.stream_cache(model) to model.generate "
        "(decode=stream_reference computes the same on a dense cache)"
    )


def stream_attention(
    layer: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scale: float,
    cap: float | None,
) -> torch.Tensor:
    """(B, 1, H, D) output of a decode call on a streamed cache layer.

    Args:
        layer: The streamed cache layer updated for this call (``kept``, ``streamed``,
            ``group``, ``stream_kv``).
        query: (B, H, 1, D).
        key: (B, G_kept, S_kv, D): the kept groups' whole cache.
        value: (B, G_kept, S_kv, D).
        attention_mask: HF's bool mask (B, 1, 1, S_kv) or None (every cached key).
        scale: Softmax scale.
        cap: Logit softcap (Gemma 2) or None.
    """
    batch, heads, q_len, _ = query.shape
    out = query.new_empty(batch, q_len, heads, value.shape[-1])
    if layer.kept:
        idx = stream_heads(layer.kept, layer.group)
        res = _attend(query[:, idx], key, value, attention_mask, scale, cap)
        out[:, :, idx] = res.transpose(1, 2).to(out.dtype)
    if layer.streamed:
        idx = stream_heads(layer.streamed, layer.group)
        k, v, allowed = layer.stream_kv(attention_mask)
        res = _attend(query[:, idx], k, v, allowed, scale, cap)
        out[:, :, idx] = res.transpose(1, 2).to(out.dtype)
    return out


def _attend(q, k, v, mask, scale, cap):
    """Attention of (B, h, 1, D) queries over (B, g, N, D) keys (h a multiple of g)."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    rep = q.shape[1] // k.shape[1]
    if cap is None:
        if rep > 1 and mask is not None and q.device.type == "cuda":
            k, v = (t.repeat_interleave(rep, 1) for t in (k, v))
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=scale, enable_gqa=k.shape[1] != q.shape[1]
        )
    k, v = (t.repeat_interleave(rep, 1) for t in (k, v))
    logits = torch.matmul(q, k.transpose(-1, -2)) * scale
    logits = torch.tanh(logits / cap) * cap
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(logits.float(), dim=-1).to(v.dtype)
    return torch.matmul(probs, v)
