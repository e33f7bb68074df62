"""What an HF attention mask allows beyond plain causal attention, read once per mask.

A model may let a query see keys *after* its own position: Gemma3's bidirectional image block,
PaliGemma's bidirectional prefix. The window kernels (:mod:`harness.attention.window`) need to
know where, to reach those keys; :func:`last_keys` reads it from the mask (bool reads of its
upper part; a pass over the rows that see keys ahead) and remembers the answer per mask tensor,
since a model passes one mask object to every layer of a forward.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["keys_ahead", "last_keys"]


def keys_ahead(attention_mask: torch.Tensor | None) -> bool:
    """Whether the mask lets any query row see a key after its own position.

    False for None (plain causal) and for HF's causal ∧ padding masks; True for Gemma3's
    bidirectional image blocks and PaliGemma's prefix.
    """
    return attention_mask is not None and last_keys(attention_mask) is not None


def last_keys(attention_mask: torch.Tensor) -> torch.Tensor | None:
    """(S_q,) CPU tensor: the last key any batch row lets each query row see; None if causal.

    Rows that see no key ahead get their own position (a bound as good as their last key
    for every use here). Remembered for the last few mask tensors: a model passes the same
    mask to every layer of a forward, and the chunked kernel asks once per head batch.
    Work: one read of the mask's upper part, then a pass over the 256-row slices that hold
    rows seeing keys ahead.
    """
    if attention_mask.device.type == "meta":
        return None  # meta: shapes only, no values to read (the device tests)
    mask = attention_mask
    # Inference tensors (torch.inference_mode, as generation runs) keep no version counter.
    version = -1 if mask.is_inference() else mask._version
    key = (mask.data_ptr(), tuple(mask.shape), mask.stride(), version, str(mask.device))
    hit = _AHEAD.get(key)
    if hit is not None and hit[0]() is attention_mask:
        return hit[1]
    slices = _ahead_rows(mask)
    found = _last_keys(mask, slices) if slices else None
    if len(_AHEAD) >= 8:
        _AHEAD.clear()
    _AHEAD[key] = (weakref.ref(attention_mask), found)
    return found


_AHEAD: dict[tuple, tuple] = {}


def _ahead_rows(mask: torch.Tensor) -> list[tuple[int, int]]:
    """Row slices [s, e) of 256 rows holding a row that sees a key after its own position.

    Bool reads of the mask's upper part only, no big copies.
    """
    import torch

    q_len, kv_len = mask.shape[-2:]
    offset = kv_len - q_len
    ahead = torch.ones(256, 256, dtype=torch.bool, device=mask.device).triu(1)
    found = []
    for s in range(0, q_len, 256):
        e = min(q_len, s + 256)
        if (
            mask[:, 0, s:e, offset + e :].any()
            or (mask[:, 0, s:e, offset + s : offset + e] & ahead[: e - s, : e - s]).any()
        ):
            found.append((s, e))
    return found


def _last_keys(mask: torch.Tensor, slices: list[tuple[int, int]]) -> torch.Tensor:
    """(S_q,) last key each row may see: read in ``slices``, the row's own position elsewhere.

    Outside ``slices`` no row sees a key ahead, so its own position is as good a bound.
    """
    import torch

    q_len, kv_len = mask.shape[-2:]
    last = torch.arange(kv_len - q_len, kv_len, device=mask.device, dtype=torch.int32)
    cols = torch.arange(kv_len, device=mask.device, dtype=torch.int32)
    for s, e in slices:
        last[s:e] = torch.where(mask[:, 0, s:e], cols, -1).amax(-1).amax(0)
    return last.cpu()  # read per block by the kernels: on the host, no device syncs
