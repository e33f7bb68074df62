"""headscope's streamed KV cache: whole KV groups for kept heads, sink + recent for the rest.

:func:`stream_cache` builds the model's own cache (``DynamicCache`` or ``StaticCache`` from
its config, so sliding and linear-attention layers keep transformers' layer classes) and
replaces the layers the installed plan streams (:class:`~harness.attention.stream.Stream`)
with a streamed layer: the kept KV groups go through the base layer's ``update`` (so
``get_mask_sizes`` and HF's masks stay right), the other groups keep each row's first
``sink`` real tokens and a ring of the last ``recent`` positions, in fixed-size buffers (also
under a static cache). The layer tells the attention function about itself through its
module (``stream.BOUND_ATTR``, read via ``module.layer_idx``'s plan in the same call):

- prefill (the first call, no cache prefix): ``update`` returns the call's whole K/V, the
  attention runs as without streaming, then :meth:`compact` keeps sinks (from the prefill
  mask: with left padding, each row's first real tokens) and the recent ring;
- decode (one token per call): ``update`` returns the kept groups' cache only and the
  attention function reads the rest from :meth:`stream_kv`.

Importing this module imports transformers.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer, StaticCache, StaticLayer

from harness.attention.stream import BOUND_ATTR

__all__ = [
    "StreamedDynamicLayer",
    "StreamedStaticLayer",
    "kv_bytes",
    "stream_cache",
    "stream_plan",
    "streamable_layers",
]


class _Streamed:
    """Streamed groups' storage and the kept groups' update (mixed into a cache layer)."""

    def _setup(self, module: Any, kept: list[int], shape: tuple[int, int], sink: int, recent: int):
        self.module = module
        num_kv, self.group = shape
        self.kept = sorted(kept)
        self.streamed = [g for g in range(num_kv) if g not in set(kept)]
        self.sink, self.recent = sink, recent
        self.seen = 0
        self.pending: tuple[torch.Tensor, torch.Tensor] | None = None
        self.sink_k = self.sink_v = self.sink_pos = None
        self.ring_k = self.ring_v = self.ring_pos = None

    def update(self, key_states, value_states, *args, **kwargs):
        """Store one call's K/V; see the module docstring for what it returns."""
        dev = key_states.device
        kept = torch.tensor(self.kept, dtype=torch.long, device=dev)
        streamed = torch.tensor(self.streamed, dtype=torch.long, device=dev)
        k_kept, v_kept = key_states.index_select(1, kept), value_states.index_select(1, kept)
        k_str, v_str = key_states.index_select(1, streamed), value_states.index_select(1, streamed)
        n_new = key_states.shape[2]
        if self.seen == 0:
            super().update(k_kept, v_kept, *args, **kwargs)
            self.pending = (k_str, v_str)
            self.seen = n_new
            setattr(self.module, BOUND_ATTR, self)
            return key_states, value_states
        if self.pending is not None:
            raise RuntimeError(
                f"layer {self.module.layer_idx}: the prefill was not compacted (the attention "
                "function did not run under the plan the streamed cache was built for)"
            )
        if n_new != 1:
            raise ValueError(
                f"a streamed cache decodes one token per call, got {n_new} (assisted or "
                "chunked decoding is not supported under decode=stream)"
            )
        keys, values = super().update(k_kept, v_kept, *args, **kwargs)
        t, slot = self.seen, self.seen % self.recent
        self.ring_k[:, :, slot] = k_str[:, :, 0]
        self.ring_v[:, :, slot] = v_str[:, :, 0]
        self.ring_pos[slot] = t
        hit = (self.sink_pos == t)[:, None, :, None]  # a row whose sinks reach past its prompt
        self.sink_k.copy_(torch.where(hit, k_str, self.sink_k))
        self.sink_v.copy_(torch.where(hit, v_str, self.sink_v))
        self.seen += 1
        setattr(self.module, BOUND_ATTR, self)
        return keys, values

    def compact(self, attention_mask: torch.Tensor | None) -> None:
        """After the prefill's attention: keep sinks and the recent ring, drop the rest."""
        from harness.attention.window import first_real

        k, v = self.pending
        self.pending = None
        batch, groups, n, dim = k.shape
        start = first_real(attention_mask, batch, k.device)
        self.sink_pos = start[:, None] + torch.arange(self.sink, device=k.device)
        idx = self.sink_pos.clamp(max=n - 1)[:, None, :, None].expand(batch, groups, -1, dim)
        self.sink_k, self.sink_v = k.gather(2, idx), v.gather(2, idx)
        self.ring_k = k.new_zeros(batch, groups, self.recent, dim)
        self.ring_v = v.new_zeros(batch, groups, self.recent, v.shape[-1])
        self.ring_pos = torch.full((self.recent,), -1, dtype=torch.long, device=k.device)
        pos = torch.arange(max(0, n - self.recent), n, device=k.device)
        self.ring_k[:, :, pos % self.recent] = k[:, :, pos]
        self.ring_v[:, :, pos % self.recent] = v[:, :, pos]
        self.ring_pos[pos % self.recent] = pos

    def stream_kv(self, attention_mask: torch.Tensor | None) -> tuple:
        """Streamed groups' (K, V, allowed) for the decode query at position ``seen - 1``.

        K/V are (B, G_streamed, sink + recent, D); ``allowed`` (B, 1, 1, sink + recent) keeps
        sinks the ring does not hold and ring slots inside the last ``recent`` positions,
        where HF's mask allows them (padding).
        """
        p = self.seen - 1
        batch = self.sink_pos.shape[0]
        pos = torch.cat([self.sink_pos, self.ring_pos.expand(batch, -1)], dim=1)
        ok = torch.cat(
            [self.sink_pos <= p - self.recent, (self.ring_pos > p - self.recent).expand(batch, -1)],
            dim=1,
        )
        if attention_mask is not None:
            row = attention_mask[:, 0, -1].expand(batch, -1)
            ok = ok & row.gather(1, pos.clamp(0, row.shape[1] - 1))
        keys = torch.cat([self.sink_k, self.ring_k], dim=2)
        values = torch.cat([self.sink_v, self.ring_v], dim=2)
        return keys, values, ok[:, None, None, :]

    def streamed_bytes(self) -> int:
        """Bytes of the streamed groups' buffers."""
        parts = (self.sink_k, self.sink_v, self.ring_k, self.ring_v, *(self.pending or ()))
        return sum(t.numel() * t.element_size() for t in parts if t is not None)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Reorder kept and streamed buffers for beam search."""
        super().reorder_cache(beam_idx)
        if self.sink_k is not None:
            idx = beam_idx.to(self.sink_k.device)
            self.sink_k, self.sink_v = self.sink_k[idx], self.sink_v[idx]
            self.ring_k, self.ring_v = self.ring_k[idx], self.ring_v[idx]
            self.sink_pos = self.sink_pos[idx]


class StreamedDynamicLayer(_Streamed, DynamicLayer):
    """A ``DynamicLayer`` that streams the KV groups outside ``kept``."""

    def __init__(self, module: Any, kept: list[int], shape: tuple, sink: int, recent: int):
        DynamicLayer.__init__(self)
        self._setup(module, kept, shape, sink, recent)

    def get_seq_length(self) -> int:
        """Positions seen (the kept part may hold no group at all)."""
        return self.seen


class StreamedStaticLayer(_Streamed, StaticLayer):
    """A ``StaticLayer`` (fixed ``max_cache_len``) that streams the KV groups outside ``kept``."""

    def __init__(self, module, kept, shape, sink, recent, max_cache_len: int):
        StaticLayer.__init__(self, max_cache_len)
        self._setup(module, kept, shape, sink, recent)


def stream_cache(model: Any, static: bool = False, max_cache_len: int | None = None) -> Any:
    """The cache to generate with under the installed plan's :class:`Stream` layers.

    Args:
        model: A model on the ``headscope`` attention function with a plan installed
            (``plan_scope``, or an attached ``hybrid:...,decode=stream``).
        static: Build on ``StaticCache`` (``max_cache_len`` required) instead of
            ``DynamicCache``.
        max_cache_len: Prompt + new tokens, for a static cache.

    Raises:
        ValueError: when the plan streams nothing, or a streamed layer is not a plain
            full-attention cache layer of the model.
    """
    from harness.api.anatomy import attention_modules
    from harness.attention.dispatch import current_plan

    plan = current_plan(model)
    streams = {
        i: lp.stream
        for i, lp in (plan.layers.items() if plan is not None else ())
        if lp.stream is not None and not lp.stream.reference
    }
    if not streams:
        raise ValueError("the installed plan streams no layer (hybrid decode=stream)")
    config = model.config
    if static:
        if not max_cache_len:
            raise ValueError("a static streamed cache needs max_cache_len")
        cache = StaticCache(config=config, max_cache_len=max_cache_len)
    else:
        cache = DynamicCache(config=config)
    modules = attention_modules(model)
    text = config.get_text_config(decoder=True)
    shape = (text.num_key_value_heads, text.num_attention_heads // text.num_key_value_heads)
    base = StaticLayer if static else DynamicLayer
    for i, stream in streams.items():
        if type(cache.layers[i]) is not base:
            raise ValueError(
                f"layer {i} caches with {type(cache.layers[i]).__name__}; only full-attention "
                "layers stream"
            )
        args = (modules[i], sorted(stream.kept), shape, stream.sink, stream.recent)
        cache.layers[i] = (
            StreamedStaticLayer(*args, max_cache_len) if static else StreamedDynamicLayer(*args)
        )
    return cache


def stream_plan(
    geometry: Any,
    full: set[Any],
    prefill: Any,
    *,
    sink: int,
    recent: int,
    reference: bool = False,
    layers: set[int] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """A hybrid plan that also streams KV in decode, and what it keeps.

    Args:
        geometry: The model's :class:`~harness.api.heads.Geometry`.
        full: Query heads (``Head``) with full attention; every other head gets ``prefill``
            (None: no prefill window).
        prefill: The prefill window of the other heads.
        sink: Sink tokens of the streamed groups.
        recent: Recent positions of the streamed groups.
        reference: Decode on a dense cache with per-head masks (the eager reference).
        layers: Layers that may stream (full-attention layers); None = every attention layer.

    Returns:
        ``(plan, info)``; info: ``kv_groups_kept``, ``kv_groups_total``, ``kv_kept_fraction``
        (kept ÷ total KV groups of the attention layers, layers that do not stream counted
        kept), ``extra_heads`` (query heads that keep full KV only because their group does)
        and ``streamed_layers``.
    """
    from harness.api.heads import Head
    from harness.attention.plan import LayerPlan, Plan
    from harness.attention.stream import Stream, stream_heads

    group = geometry.group_size
    per: dict[int, LayerPlan] = {}
    kept_total, extra, streamed_layers = 0, [], []
    for layer in geometry.head_layers:
        mine = {h.head for h in full if h.layer == layer}
        kept = {h // group for h in mine}
        may = layers is None or layer in layers
        if may:
            extra += [Head(layer, h) for h in stream_heads(sorted(kept), group) if h not in mine]
        else:  # the model's own sliding layer keeps its own cache
            kept = set(range(geometry.num_kv_heads))
        kept_total += len(kept)
        windows = (
            {}
            if prefill is None
            else {h: prefill for h in range(geometry.num_heads) if h not in mine}
        )
        stream = None
        if may and len(kept) < geometry.num_kv_heads:
            stream = Stream(frozenset(kept), sink, recent, reference)
            streamed_layers.append(layer)
        if windows or stream is not None:
            per[layer] = LayerPlan(window=windows, stream=stream)
    total = len(geometry.head_layers) * geometry.num_kv_heads
    info = {
        "kv_groups_kept": kept_total,
        "kv_groups_total": total,
        "kv_kept_fraction": kept_total / total,
        "extra_heads": [str(h) for h in sorted(extra)],
        "streamed_layers": streamed_layers,
    }
    return Plan(per), info


def streamable_layers(model: Any) -> set[int]:
    """Decoder layers that may stream: the full-attention ones.

    The model's own sliding layers keep transformers' cache; linear-attention layers have no KV.
    """
    from harness.api.anatomy import layer_kinds

    return {i for i, k in enumerate(layer_kinds(model)) if k.kind == "full_attention"}


def kv_bytes(cache: Any) -> int:
    """Bytes a cache holds in K/V tensors (streamed layers: kept part + sink/recent buffers)."""
    total = 0
    for layer in cache.layers:
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
        if isinstance(layer, _Streamed):
            total += layer.streamed_bytes()
    return total
