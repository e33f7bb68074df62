"""Edits of a layer's attention output after its heads ran: ablations, priors, hooks.

:func:`harness.attention.execute.run_layer_plan` computes every head's output (B, S_q, H, D)
first, then applies, in this order, :func:`ablate` (zero, mean, uniform, bos), :func:`apply_priors`
(SAP: ``code`` and ``distribution`` semantics) and :func:`apply_hooks` (user output hooks). Each
writes into that output in place. Shapes: query (B, H, S_q, D); key/value (B, H_kv, S_kv, D).
"""

from __future__ import annotations

from typing import Any

from harness.attention.plan import HookContext, LayerPlan
from harness.attention.window import (
    capped,
    first_real,
    full_bool_mask,
    masked_softmax,
    per_head_kv,
)

__all__ = ["ablate", "apply_priors", "apply_hooks"]


def ablate(out, lp: LayerPlan, query, key, value, attention_mask, group: int) -> None:
    """Overwrite each ablated head's output in ``out`` (B, S_q, H, D) by its mode."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    batch, _, q_len, _ = query.shape
    kv_len = key.shape[2]
    for head, ab in sorted(lp.ablate.items()):
        if ab.mode == "zero":
            out[:, :, head] = 0
        elif ab.mode == "mean":
            out[:, :, head] = ab.mean.to(out.device, out.dtype)
        elif ab.mode == "uniform":
            # A zero query gives equal logits, so SDPA yields the mean of the allowed values.
            mask = full_bool_mask(attention_mask, batch, q_len, kv_len, query.device)
            v = value[:, head // group : head // group + 1]
            res = F.scaled_dot_product_attention(
                torch.zeros_like(query[:, head : head + 1]),
                key[:, head // group : head // group + 1],
                v,
                attn_mask=mask,
            )
            out[:, :, head] = res[:, 0]
        else:  # bos: the first real (non-padding) key
            first = first_real(attention_mask, batch, query.device)
            v = value[torch.arange(batch, device=value.device), head // group, first]
            out[:, :, head] = v[:, None, :].to(out.dtype)


def _visual_columns(prior, batch: int, kv_len: int, device) -> tuple[Any, Any]:
    """(B, S_kv) bool visual-key mask and (B, S_kv) prior values placed on those keys."""
    import torch

    keys = prior.keys.to(device)
    ok = (keys >= 0) & (keys < kv_len)
    if prior.valid is not None:
        ok = ok & prior.valid.to(device)
    safe = torch.where(ok, keys, 0)
    vis = torch.zeros(batch, kv_len, dtype=torch.bool, device=device)
    vis.scatter_(1, safe, ok)
    val = torch.zeros(batch, kv_len, dtype=torch.float32, device=device)
    val.scatter_(1, safe, torch.where(ok, prior.prior.to(device, torch.float32), 0.0))
    return vis, val


def apply_priors(
    out, lp, query, key, value, attention_mask, group: int, scale: float, softcap=None
) -> None:
    """Apply each prior of ``lp`` to its heads' rows of ``out``, one pass per prior.

    The pre-softmax logits a prior mixes into are the model's: softcapped with ``softcap``.
    """
    by_prior: dict[int, tuple[Any, list[int]]] = {}
    for head, prior in sorted(lp.prior.items()):
        by_prior.setdefault(id(prior), (prior, []))[1].append(head)
    for prior, members in by_prior.values():
        fn = _prior_code if prior.semantics == "code" else _prior_distribution
        fn(out, prior, members, query, key, value, attention_mask, group, scale, softcap)


def _prior_code(
    out, prior, members, query, key, value, attention_mask, group, scale, softcap=None
) -> None:
    """Paper B code: last row; heads in the quantile band; visual logits → (1−λ)l + λ·prior."""
    import torch

    batch, _, q_len, _ = query.shape
    kv_len = key.shape[2]
    k, v = per_head_kv(key, members, group), per_head_kv(value, members, group)
    logits = (query[:, members, -1:] @ k.transpose(-1, -2)).float() * scale  # [b, h, 1, kv]
    logits = capped(logits, softcap)
    mask = full_bool_mask(attention_mask, batch, q_len, kv_len, query.device)[:, :, -1:]
    vis, val = _visual_columns(prior, batch, kv_len, query.device)
    other = mask & ~vis[:, None, None, :]
    mean_other = (logits * other).sum(-1) / other.sum(-1).clamp(min=1)  # [b, h, 1]
    lo = torch.quantile(mean_other, prior.band[0], dim=1, keepdim=True)
    hi = torch.quantile(mean_other, prior.band[1], dim=1, keepdim=True)
    chosen = (mean_other >= lo) & (mean_other <= hi)  # [b, h, 1]
    mixed = (1 - prior.lam) * logits + prior.lam * val[:, None, None, :]
    logits = torch.where(vis[:, None, None, :], mixed, logits)
    new = (masked_softmax(logits, mask) @ v.float()).to(out.dtype)  # [b, h, 1, d]
    old = out[:, -1, members]  # [b, h, d]
    out[:, -1, members] = torch.where(chosen, new[:, :, 0], old)


def _prior_distribution(
    out, prior, members, query, key, value, attention_mask, group, scale, softcap=None
):
    """Mix log(prior) into visual log-probabilities (weight λ), keeping each row's visual mass.

    A row changes when it is not itself a visual token and the mask lets it see every visual
    key (:func:`_changed_rows`): under a causal mask, the rows after a sample's last visual
    key. Only rows from the batch's earliest changed row on are computed (the text after the
    visual span: a few percent of a prefill); each computed row is the same arithmetic as
    over all rows, row by row.
    """
    import torch

    batch, _, q_len, _ = query.shape
    kv_len = key.shape[2]
    vis, val = _visual_columns(prior, batch, kv_len, query.device)
    first, changed = _changed_rows(attention_mask, prior, vis, q_len)
    # meta tensors (the device tests) hold no values: every row is computed there.
    start = 0 if first.device.type == "meta" else int(first.min())
    if start >= q_len:
        return
    k, v = per_head_kv(key, members, group), per_head_kv(value, members, group)
    log_prior = torch.log(val.clamp(min=1e-30))[:, None, None, :]
    if attention_mask is not None and attention_mask.shape[2] == q_len:
        attention_mask = attention_mask[:, :, start:]
    # Rows start.. as a q_len − start block: None builds the causal mask at the same offset.
    full = full_bool_mask(attention_mask, batch, q_len - start, kv_len, query.device)
    chunk = max(1, (1 << 22) // max(1, kv_len * len(members) * batch))  # bounded row memory
    for s in range(start, q_len, chunk):
        e = min(q_len, s + chunk)
        logits = capped((query[:, members, s:e] @ k.transpose(-1, -2)).float() * scale, softcap)
        mask = full[:, :, s - start : e - start]
        vmask = mask & vis[:, None, None, :]
        lse_old = logits.masked_fill(~vmask, float("-inf")).logsumexp(-1, keepdim=True)
        mixed = (1 - prior.lam) * logits + prior.lam * log_prior
        lse_new = mixed.masked_fill(~vmask, float("-inf")).logsumexp(-1, keepdim=True)
        logits = torch.where(vmask, mixed - lse_new + lse_old, logits)
        new = (masked_softmax(logits, mask) @ v.float()).to(out.dtype).transpose(1, 2)
        sees_all = changed[:, s:e]  # [b, rows]
        cur = out[:, s:e, members]
        out[:, s:e, members] = torch.where(sees_all[:, :, None, None], new, cur)


def _changed_rows(attention_mask, prior, vis, q_len: int) -> tuple[Any, Any]:
    """Rows a ``distribution`` prior changes: (first per sample (B,), (B, S_q) bool).

    A row changes when it is not a visual token and sees every visual key. Without a mask
    (causal) those are the rows after the last visual key. With one, the mask decides: in
    Gemma3's bidirectional image block the image rows see the whole image but are visual
    themselves; under a sliding band, rows too far behind the image see only part of it and
    keep their learned attention. ``first`` is S_q where no row changes.
    """
    import torch

    batch, kv_len = vis.shape
    offset = kv_len - q_len
    rows = torch.arange(q_len, device=vis.device)
    if attention_mask is None:
        last_vis = torch.where(vis, torch.arange(kv_len, device=vis.device), -1).max(1).values
        first = torch.where(last_vis >= 0, (last_vis + 1 - offset).clamp(min=0), q_len)
        return first, rows[None, :] >= first[:, None]
    keys = prior.keys.to(vis.device)
    ok = (keys >= 0) & (keys < kv_len) & vis.gather(1, keys.clamp(0, kv_len - 1))
    idx = torch.where(ok, keys, 0)[:, None, :].expand(batch, q_len, keys.shape[1])
    seen = attention_mask[:, 0].expand(batch, q_len, kv_len).gather(-1, idx)
    changed = (seen | ~ok[:, None, :]).all(-1) & ok.any(-1, keepdim=True) & ~vis[:, offset:]
    first = torch.where(changed.any(1), changed.int().argmax(1), q_len)
    return first, changed


def apply_hooks(out, lp: LayerPlan, layer: int, offset: int, attention_mask) -> None:
    """Replace each hooked head's output by its hook's result (same shape required)."""
    by_hook: dict[int, tuple[Any, list[int]]] = {}
    for head, hooks in sorted(lp.hooks.items()):
        for hook in hooks:
            by_hook.setdefault(id(hook), (hook, []))[1].append(head)
    for hook, members in by_hook.values():
        ctx = HookContext(layer, tuple(members), offset, attention_mask)
        res = hook.fn(out[:, :, members], ctx)
        if tuple(res.shape) != tuple(out[:, :, members].shape):
            raise ValueError(f"output hook {hook.name!r} changed the shape to {tuple(res.shape)}")
        out[:, :, members] = res.to(out.dtype)
