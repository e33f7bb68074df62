"""Executes one decoder layer's :class:`~harness.attention.plan.LayerPlan` inside attention.

Order of work: routing (a layer's :class:`~harness.attention.route.Route` picks each
sample's windowed heads, prefill only) → record (observes learned attention) → dense heads
(HF's exact SDPA call when no head is windowed; else SDPA on the dense subset) → windowed
head groups → ablations → priors → output hooks (the last three in
:mod:`harness.attention.edit`). Shapes: query (B, H, S_q, D); key/value
(B, H_kv, S_kv, D); the returned output is (B, S_q, H, D) like HF's attention functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.attention.edit import ablate, apply_hooks, apply_priors
from harness.attention.plan import LayerPlan, Window
from harness.attention.window import (
    full_bool_mask,
    per_head_kv,
    window_attention_chunked,
    window_attention_reference,
)

if TYPE_CHECKING:
    import torch

__all__ = [
    "run_layer_plan",
    "WINDOW_KERNELS",
    "KERNEL_CHOICES",
    "resolve_window_kernel",
    "kernels_used",
    "reset_kernels_used",
]

WINDOW_KERNELS = {"chunked": window_attention_chunked, "reference": window_attention_reference}
"""Per-head-group window implementations (the chunked one is the CPU path, both references)."""
FLEX_KERNELS = ("flex", "flex_eager")
"""Whole-layer FlexAttention paths (:mod:`harness.attention.flex`); eager = small tests only."""
KERNEL_CHOICES = ("auto", *WINDOW_KERNELS, *FLEX_KERNELS)
"""Names accepted by ``harness.attention.dispatch.set_window_kernel``."""
_USED: dict[str, int] = {}


def resolve_window_kernel(name: str, device: Any) -> str:
    """The kernel ``name`` means on ``device``: ``auto`` → ``flex`` on CUDA, else ``chunked``."""
    if name != "auto":
        return name
    from harness.attention.flex import flex_available

    cuda = getattr(device, "type", str(device)).startswith("cuda")
    return "flex" if cuda and flex_available() else "chunked"


def kernels_used() -> dict[str, int]:
    """Layer calls per window kernel that actually ran since :func:`reset_kernels_used`."""
    return dict(_USED)


def reset_kernels_used() -> None:
    """Forget the counts of :func:`kernels_used`."""
    _USED.clear()


def _flex_layer(query, key, value, attention_mask, windows, scale, kernel):
    """(B, S, H, D) output of every head from one flex call, or None when flex cannot run.

    Flex runs only for a prefill without cache prefix whose mask (if any) is causal ∧ left
    padding (see :func:`harness.attention.flex.left_padding_start`).
    """
    from harness.attention import flex

    batch, heads, q_len, _ = query.shape
    if key.shape[2] != q_len:
        return None  # decode step or cached prefix: the chunked kernel handles offsets
    start = flex.left_padding_start(attention_mask, batch)
    if attention_mask is not None and start is None:
        return None
    kinds = tuple(
        (windows[h].size, windows[h].sinks) if h in windows else flex.FULL for h in range(heads)
    )
    res = flex.flex_layer_attention(
        query, key, value, kinds, start, scale, compiled=kernel == "flex"
    )
    return res.transpose(1, 2)


def _head_batches(heads: list[int], group: int) -> list[tuple[slice, slice]]:
    """(query-head slice, KV-head slice) pairs covering ``heads`` with views only.

    Each pair is either a run of whole KV groups (SDPA's ``enable_gqa`` maps query head j
    to KV head j // group) or a run of query heads inside one group (one KV head). Slicing
    never copies Q/K/V and the outputs are written in place: gathering scattered heads with
    an index copy cost ~15% of a hybrid layer at 16K tokens on CPU.
    """
    batches: list[tuple[slice, slice]] = []
    hs = sorted(set(heads))
    i = 0
    while i < len(hs):
        j = i
        while j + 1 < len(hs) and hs[j + 1] == hs[j] + 1:
            j += 1
        lo, hi = hs[i], hs[j] + 1  # a run of consecutive query heads
        while lo < hi:
            g0 = lo // group
            if lo % group == 0 and hi - lo >= group:  # whole groups
                end = lo + (hi - lo) // group * group
                batches.append((slice(lo, end), slice(g0, end // group)))
            else:  # part of one group
                end = min(hi, (g0 + 1) * group)
                batches.append((slice(lo, end), slice(g0, g0 + 1)))
            lo = end
        i = j + 1
    return batches


def _dense_subset(out, query, key, value, attention_mask, heads: list[int], group: int, scale):
    """Full causal SDPA for ``heads``, written in place into ``out`` (B, S, H, D)."""
    import torch.nn.functional as F  # noqa: N812

    q_len, kv_len = query.shape[2], key.shape[2]
    mask, causal = attention_mask, False
    if mask is None and q_len > 1:
        if q_len == kv_len:
            causal = True  # no explicit mask: SDPA skips the blocks above the diagonal
        else:
            mask = full_bool_mask(None, query.shape[0], q_len, kv_len, query.device)
    for qs, ks in _head_batches(heads, group):
        q, k, v = query[:, qs], key[:, ks], value[:, ks]
        if k.shape[1] != q.shape[1] and mask is not None and q.device.type == "cuda":
            # CUDA's fused kernels take GQA only without a mask (else the math kernel runs).
            k, v = (t.repeat_interleave(q.shape[1] // t.shape[1], 1) for t in (k, v))
        res = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask,
            is_causal=causal,
            scale=scale,
            enable_gqa=k.shape[1] != q.shape[1],
        )
        out[:, :, qs].transpose(1, 2).copy_(res)


def _windowed(out, query, key, value, attention_mask, windows, group, scale, kernel_name, cap):
    kernel = WINDOW_KERNELS[kernel_name]
    for (size, sinks), members in _groups(windows).items():
        if kernel is not window_attention_chunked:  # the reference takes one KV row per head
            k, v = per_head_kv(key, members, group), per_head_kv(value, members, group)
            res = kernel(query[:, members], k, v, attention_mask, size, sinks, scale, cap)
            out[:, :, members] = res.transpose(1, 2).to(out.dtype)
            continue
        for qs, ks in _head_batches(members, group):
            view = out[:, :, qs].transpose(1, 2)  # (B, h, S, D), written in place
            kq, kv = key[:, ks], value[:, ks]
            kernel(query[:, qs], kq, kv, attention_mask, size, sinks, scale, out=view)


def run_layer_plan(
    module: Any,
    lp: LayerPlan,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float,
    scaling: float | None,
    kwargs: dict[str, Any],
    window_kernel: str = "auto",
    stream_layer: Any = None,
) -> tuple[torch.Tensor, None]:
    """Attention for one layer under ``lp``; returns (B, S_q, H, D), None.

    ``window_kernel`` is a name of :data:`KERNEL_CHOICES`; flex falls back to ``chunked``
    where it cannot run, and the kernel that ran is counted (:func:`kernels_used`). With
    logit softcapping (``kwargs["softcap"]``, Gemma 2) every head is capped: heads without
    an effect keep the model's own eager call, and windowed, routed and dense-subset heads
    run the eager ``reference`` kernel (SDPA and flex here cannot cap; counted as such).
    A layer with a :class:`~harness.attention.stream.Stream` decodes on ``stream_layer`` (the
    streamed cache layer updated for this call), or, with ``Stream.reference``, on the dense
    cache with the streamed groups' heads windowed (:func:`_stream_windows`).
    """
    from harness.attention.exact import exact_attention
    from harness.attention.record import record_attention

    batch, heads, q_len, dim = query.shape
    group = heads // key.shape[1] if stream_layer is None else stream_layer.group
    scale = dim**-0.5 if scaling is None else scaling
    cap = kwargs.get("softcap")
    windows = {h: w for h, w in lp.window.items() if q_len > 1 or w.in_decode}
    if lp.stream is not None:
        if stream_layer is not None and stream_layer.pending is None:  # decode, streamed cache
            from harness.attention.stream import stream_attention

            args = (stream_layer, query, key, value, attention_mask, scale, cap)
            return stream_attention(*args), None
        if stream_layer is None and key.shape[2] > q_len:  # decode on a dense cache
            windows = _stream_windows(module, lp, windows, key.shape[1], group)
    routed, out = None, None  # adaptive routing (prefill only): windowed heads per sample
    kernel = resolve_window_kernel(window_kernel, query.device) if cap is None else "reference"
    if lp.route is not None and q_len > 1:
        from harness.attention import route as routing

        args = (lp.route, module.layer_idx, query, key)
        if kernel == "reference":
            out, routed = routing.routed_attention_reference(
                *args, value, attention_mask, scale, cap
            )
        else:
            routed = routing.select_windowed(*args, attention_mask, scale)
    for spec in lp.record:
        seen = windows if routed is None else _routed_windows(lp.route, routed)
        record_attention(spec, module.layer_idx, query, key, attention_mask, scale, seen, cap)
    if not lp.changes_output:
        return exact_attention(module, query, key, value, attention_mask, dropout, scaling, kwargs)
    # Zero/mean-ablated heads are never computed: their output is overwritten anyway.
    skip = {h for h, a in lp.ablate.items() if a.mode in ("zero", "mean")}
    if out is not None:  # the routed eager reference computed every head
        _USED[kernel] = _USED.get(kernel, 0) + 1
    elif routed is not None and any(routed):
        win = Window(lp.route.size, lp.route.sinks)
        for rows, members in routing.group_rows(routed).items():
            qkvm = _rows(rows, query, key, value, attention_mask)
            wins = dict.fromkeys(members, win)
            res, ran = _mixed(*qkvm, wins, skip, group, scale, kernel, cap)
            _USED[ran] = _USED.get(ran, 0) + 1
            if len(rows) == batch:
                out = res
            else:
                out = query.new_empty(batch, q_len, heads, value.shape[-1]) if out is None else out
                out[list(rows)] = res
    elif not windows:  # also a route that kept every head: HF's exact call
        out, _ = exact_attention(
            module, query, key, value, attention_mask, dropout, scaling, kwargs
        )
    else:
        args = (query, key, value, attention_mask, windows, skip, group, scale)
        out, kernel = _mixed(*args, kernel, cap)
        _USED[kernel] = _USED.get(kernel, 0) + 1
    if lp.ablate:
        ablate(out, lp, query, key, value, attention_mask, group)
    if lp.prior:
        apply_priors(out, lp, query, key, value, attention_mask, group, scale, cap)
    if lp.hooks:
        apply_hooks(out, lp, module.layer_idx, key.shape[2] - q_len, attention_mask)
    if stream_layer is not None:  # prefill into a streamed cache: keep sinks + recent only
        stream_layer.compact(attention_mask)
    return out, None


def _stream_windows(module, lp: LayerPlan, windows: dict, num_kv: int, group: int) -> dict:
    """A decode call's windows on a dense cache: the streamed groups' heads see sink + recent."""
    from harness.attention.stream import missing_cache, stream_heads

    if not lp.stream.reference:
        raise missing_cache(module.layer_idx)
    heads = stream_heads(lp.stream.streamed(num_kv), group)
    window = Window(lp.stream.recent, lp.stream.sink, in_decode=True)
    return {**windows, **dict.fromkeys(heads, window)}


def _mixed(query, key, value, attention_mask, windows, skip, group, scale, kernel, cap) -> tuple:
    """(B, S, H, D) output of dense and windowed heads, and the window kernel that ran.

    Flex computes every head in one call where it can; otherwise dense heads (all but
    ``windows`` and ``skip``) go through SDPA and windowed heads through ``kernel``. With a
    softcap ``cap`` (kernel ``reference`` then), dense heads are the eager reference with a
    window longer than the keys.
    """
    if kernel in FLEX_KERNELS:
        out = _flex_layer(query, key, value, attention_mask, windows, scale, kernel)
        if out is not None:
            return out, kernel
        kernel = "chunked"
    # Every head is written below: dense, windowed, or (zero/mean) by edit.ablate.
    batch, heads, q_len, _ = query.shape
    out = query.new_empty(batch, q_len, heads, value.shape[-1])
    dense = [h for h in range(heads) if h not in windows and h not in skip]
    if dense and cap is not None:
        full = dict.fromkeys(dense, Window(key.shape[2] + 1))
        _windowed(out, query, key, value, attention_mask, full, group, scale, kernel, cap)
    elif dense:
        _dense_subset(out, query, key, value, attention_mask, dense, group, scale)
    _windowed(out, query, key, value, attention_mask, windows, group, scale, kernel, cap)
    return out, kernel


def _rows(rows, query, key, value, mask) -> tuple:
    """Q, K, V and mask of the batch ``rows`` (no copy when they are the whole batch)."""
    batch = query.shape[0]
    if len(rows) == batch:
        return query, key, value, mask
    idx = list(rows)
    mask = mask[idx] if mask is not None and mask.shape[0] == batch else mask
    return query[idx], key[idx], value[idx], mask


def _routed_windows(route, routed: list[tuple[int, ...]]) -> dict[int, Window]:
    """The routed windows as one head → window map (for recording: one choice per batch)."""
    if len(set(routed)) > 1:
        raise ValueError(
            "recording attention under adaptive routing needs every sample of the batch to "
            "route alike; record with batch size 1"
        )
    return dict.fromkeys(routed[0], Window(route.size, route.sinks))


def _groups(windows: dict) -> dict[tuple[int, int], list[int]]:
    groups: dict[tuple[int, int], list[int]] = {}
    for head, w in sorted(windows.items()):
        groups.setdefault((w.size, w.sinks), []).append(head)
    return groups
