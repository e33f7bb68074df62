"""FlexAttention fast path for a layer with windowed heads (CUDA; also runs on CPU).

One ``flex_attention`` call computes every query head of a layer with a per-head mask
(``mask_mod``): kept heads causal, windowed heads causal window ``(p − W, p]`` plus the first
``sinks`` real keys, and left padding from HF's mask (a key before the row's first real key
is never seen). GQA goes through ``enable_gqa=True``: KV heads are never repeated.

Block masks. Building a block mask evaluates the mask on every (query, key) pair, so it is
built once per *head type* ((W, sinks) or full) at a *length bucket* (:func:`length_bucket`)
by a compiled builder, with one head (H = 1), and cached; a layer's mask is assembled from
the type masks by indexing their block tables per head, and cropped to the exact length
(``BlockMask._adjust``, valid for causal masks: it keeps the upper-left corner). A run over
samples of varying length thus builds at most one mask per (bucket, type, padding) and the
compiled builder sees only bucket lengths. The kernel itself is ``torch.compile``-d once
(torch turns on dynamic shapes at the second length, so it does not recompile per sample).

Only prefill without a cache prefix (S_q == S_kv) takes this path; other calls (decode, a
cached prefix) fall back to the chunked SDPA kernel, and the dispatch records which kernel
ran (:func:`harness.attention.dispatch.window_kernels_used`).

``compiled=False`` runs flex's eager implementation, which materialises the S × S scores:
for equivalence tests at small sizes only.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = [
    "FLEX_BLOCK",
    "FULL",
    "flex_available",
    "length_bucket",
    "left_padding_start",
    "layer_block_mask",
    "flex_layer_attention",
    "clear_mask_cache",
    "mask_cache_info",
]

FLEX_BLOCK = 128
"""Query/key block size of the block masks (flex's default)."""
FULL = (0, 0)
"""Head type of a kept (full causal) head; windowed heads are ``(W, sinks)`` with W ≥ 1."""
_TYPE_CACHE: OrderedDict[tuple, Any] = OrderedDict()
_LAYER_CACHE: OrderedDict[tuple, Any] = OrderedDict()
_CACHE_SIZE = {"types": 32, "layers": 256}
_STATS = {"type_builds": 0, "layer_builds": 0, "hits": 0, "build_ms": 0.0}


def flex_available() -> bool:
    """Whether ``torch.nn.attention.flex_attention`` can be imported (torch ≥ 2.5)."""
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def length_bucket(n: int, per_octave: int = 4) -> int:
    """Length at which block masks for ``n`` tokens are built (≥ n, few distinct values).

    Multiples of :data:`FLEX_BLOCK` up to ``FLEX_BLOCK · per_octave``; above, ``per_octave``
    steps per doubling (n = 5000 → 5120, 33000 → 40960), so at most 25% of a mask is unused
    and lengths from 1K to 128K map to about 30 buckets.
    """
    if n < 1:
        raise ValueError(f"length must be ≥ 1, got {n}")
    step = FLEX_BLOCK
    if n > FLEX_BLOCK * per_octave:
        step = max(FLEX_BLOCK, (1 << (n.bit_length() - 1)) // per_octave)
    return -(-n // step) * step


def left_padding_start(attention_mask: torch.Tensor | None, batch: int) -> torch.Tensor | None:
    """(B,) first real key per row when HF's mask is causal ∧ left padding; else None.

    ``attention_mask`` is HF's bool mask (B, 1, S, S) of a prefill (True = attend); None
    (no padding) gives None. The whole mask is compared with the causal ∧ key ≥ start mask it
    should be, in blocks of rows (at most 2^28 entries at a time), so any other structure
    (right padding, packed sequences, custom masks) returns None and the caller falls back to
    the chunked kernel.
    """
    import torch

    if attention_mask is None:
        return None
    if attention_mask.dim() != 4 or attention_mask.dtype != torch.bool:
        return None
    length = attention_mask.shape[-1]
    if attention_mask.shape[-2] != length:
        return None
    mask = attention_mask.expand(batch, 1, length, length)
    last = mask[:, 0, -1]  # the last row sees every real key
    start = torch.where(last.any(-1), last.int().argmax(-1), length)
    pos = torch.arange(length, device=mask.device)
    rows = max(1, (1 << 28) // max(1, batch * length))
    for lo in range(0, length, rows):
        q = pos[lo : lo + rows]
        expect = (q[None, :, None] >= pos[None, None, :]) & (
            pos[None, None, :] >= start[:, None, None]
        )
        if not torch.equal(mask[:, 0, lo : lo + rows], expect):
            return None
    return start


def _type_mask_mod(start: torch.Tensor, size: int, sinks: int):
    def mask_mod(b, h, q_idx, kv_idx):
        ok = (kv_idx <= q_idx) & (kv_idx >= start[b])
        if size:
            keep = (q_idx - kv_idx) < size
            if sinks:
                keep = keep | (kv_idx < start[b] + sinks)
            ok = ok & keep
        return ok

    return mask_mod


def _layer_mask_mod(start: torch.Tensor, sizes: torch.Tensor, sinks: torch.Tensor):
    def mask_mod(b, h, q_idx, kv_idx):
        ok = (kv_idx <= q_idx) & (kv_idx >= start[b])
        keep = ((q_idx - kv_idx) < sizes[h]) | (kv_idx < start[b] + sinks[h])
        return ok & keep

    return mask_mod


def _build_type(start: torch.Tensor, size: int, sinks: int, length: int) -> Any:
    """Block mask (B, 1, L, L) of one head type (the function the compiled builder runs)."""
    from torch.nn.attention.flex_attention import create_block_mask

    return create_block_mask(
        _type_mask_mod(start, size, sinks),
        start.shape[0],
        1,
        length,
        length,
        device=start.device,
        BLOCK_SIZE=FLEX_BLOCK,
    )


@functools.lru_cache(maxsize=1)
def _compiled_builder() -> Any:
    import torch

    return torch.compile(_build_type)


@functools.lru_cache(maxsize=1)
def _compiled_flex() -> Any:
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention)


def _remember(cache: OrderedDict, key: tuple, value: Any, limit: int) -> Any:
    cache[key] = value
    while len(cache) > limit:
        cache.popitem(last=False)
    return value


def _type_mask(start: torch.Tensor, key_start: tuple, kind: tuple[int, int], bucket: int, compiled):
    key = (str(start.device), bucket, key_start, kind, compiled)
    hit = _TYPE_CACHE.get(key)
    if hit is not None:
        _TYPE_CACHE.move_to_end(key)
        return hit
    builder = _compiled_builder() if compiled else _build_type
    _STATS["type_builds"] += 1
    with _timing(start.device):
        mask = builder(start, kind[0], kind[1], bucket)
    return _remember(_TYPE_CACHE, key, mask, _CACHE_SIZE["types"])


@contextmanager
def _timing(device: Any) -> Iterator[None]:
    """Add the wall time of the block to ``build_ms`` (CUDA synchronised: builds are rare)."""
    import torch

    cuda = torch.device(device).type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
    begin = time.perf_counter()
    try:
        yield
    finally:
        if cuda:
            torch.cuda.synchronize(device)
        _STATS["build_ms"] += (time.perf_counter() - begin) * 1000.0


def layer_block_mask(
    kinds: tuple[tuple[int, int], ...],
    length: int,
    start: torch.Tensor | None,
    device: Any,
    compiled: bool = True,
) -> Any:
    """The block mask of one layer: head h has type ``kinds[h]`` (:data:`FULL` or (W, sinks)).

    Args:
        kinds: Per query head, ``FULL`` or ``(W, sinks)``.
        length: Exact sequence length S (prefill: S_q = S_kv).
        start: (B,) first real key per row (left padding), or None (no padding; the mask
            then broadcasts over the batch).
        device: Device of the attention inputs.
        compiled: Build type masks with the compiled builder (False: eager, small S only).

    Returns:
        A ``BlockMask`` of shape (B or 1, H, S, S) whose ``mask_mod`` is the per-head mask.
    """
    import torch

    if start is None:
        start = torch.zeros(1, dtype=torch.long, device=device)
        key_start: tuple = ()
    else:
        start = start.to(device=device, dtype=torch.long)
        key_start = tuple(int(x) for x in start.tolist())
    bucket = length_bucket(length)
    key = (str(torch.device(device)), bucket, key_start, kinds, length, compiled)
    hit = _LAYER_CACHE.get(key)
    if hit is not None:
        _STATS["hits"] += 1
        _LAYER_CACHE.move_to_end(key)
        return hit
    types = sorted(set(kinds))
    masks = [_type_mask(start, key_start, kind, bucket, compiled) for kind in types]
    with _timing(device):
        mask = _assemble(masks, types, kinds, start, bucket, length, device)
    _STATS["layer_builds"] += 1
    return _remember(_LAYER_CACHE, key, mask, _CACHE_SIZE["layers"])


def _assemble(masks, types, kinds, start, bucket: int, length: int, device) -> Any:
    """One layer's mask from its type masks (block tables indexed per head), cropped to S."""
    import torch
    from torch.nn.attention.flex_attention import BlockMask

    index = torch.tensor([types.index(k) for k in kinds], device=device)

    def stack(name: str) -> Any:
        parts = [getattr(m, name) for m in masks]
        if any(p is None for p in parts):
            return None
        return torch.cat(parts, dim=1).index_select(1, index)

    big = 1 << 30  # "full": a window longer than any sequence
    sizes = torch.tensor([k[0] or big for k in kinds], device=device)
    sinks = torch.tensor([k[1] for k in kinds], device=device)
    full = BlockMask.from_kv_blocks(
        stack("kv_num_blocks"),
        stack("kv_indices"),
        stack("full_kv_num_blocks"),
        stack("full_kv_indices"),
        BLOCK_SIZE=FLEX_BLOCK,
        mask_mod=_layer_mask_mod(start, sizes, sinks),
        seq_lengths=(bucket, bucket),
        compute_q_blocks=False,
    )
    return full if length == bucket else full._adjust(length, length)


def flex_layer_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    kinds: tuple[tuple[int, int], ...],
    start: torch.Tensor | None,
    scale: float,
    compiled: bool = True,
) -> torch.Tensor:
    """Attention of every query head under its type; returns (B, H, S, D).

    Args:
        query: (B, H, S, D).
        key: (B, H_kv, S, D), GQA: query head h reads KV head h // (H / H_kv).
        value: (B, H_kv, S, D).
        kinds: Per query head, :data:`FULL` or ``(W, sinks)``.
        start: (B,) first real key per row (see :func:`left_padding_start`) or None.
        scale: Softmax scale.
        compiled: ``torch.compile``-d kernel (False: flex's eager implementation).
    """
    from torch.nn.attention.flex_attention import flex_attention

    length = query.shape[2]
    mask = layer_block_mask(kinds, length, start, query.device, compiled)
    gqa = key.shape[1] != query.shape[1]
    if compiled:
        return _compiled_flex()(query, key, value, block_mask=mask, scale=scale, enable_gqa=gqa)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "materializes the full scores matrix"
        return flex_attention(query, key, value, block_mask=mask, scale=scale, enable_gqa=gqa)


def clear_mask_cache() -> None:
    """Forget every cached block mask (and the build counters)."""
    _TYPE_CACHE.clear()
    _LAYER_CACHE.clear()
    for name in _STATS:
        _STATS[name] = 0


def mask_cache_info() -> dict[str, int]:
    """Counters since the last :func:`clear_mask_cache`.

    ``type_builds``, ``layer_builds``, ``hits`` (layer masks served from the cache) and
    ``build_ms``: wall time spent building and assembling block masks (compiles included).
    """
    return dict(_STATS) | {"cached_types": len(_TYPE_CACHE), "cached_layers": len(_LAYER_CACHE)}
