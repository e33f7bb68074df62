"""The exact attention call of a layer (what the model itself computes) and explicit masks.

:func:`exact_attention` is HF's ``sdpa_attention_forward`` (so an empty plan is bit-identical
to ``attn_implementation="sdpa"``) unless the model passes logit softcapping (Gemma 2, so
PaliGemma 2): SDPA cannot cap logits and HF's sdpa path refuses ``softcap``, so the call goes
to the model's own ``eager_attention_forward`` (its modeling module's, the function HF uses
for that model in eager mode) with HF's bool mask turned into eager's additive one.
:func:`explicit_mask` turns a ``None`` mask that means "no mask" into an all-True one.
:func:`check_kwargs` refuses the kwargs a plan cannot honour.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["PLAN_REFUSED_KWARGS", "check_kwargs", "exact_attention", "explicit_mask"]

PLAN_REFUSED_KWARGS = ("s_aux", "position_bias")
"""Kwargs that change the attention math in ways no plan effect implements (gpt-oss's learned
sink logits, T5-style position biases): a plan on a layer that gets one is refused."""


def explicit_mask(
    module: Any, attention_mask: Any, query: Any, key: Any, is_causal: bool | None = None
) -> Any:
    """The mask a plan runs under: HF's own, or all-True where None means "no mask".

    A float (additive) mask is read as the bool mask it stands for (:func:`_bool_of_additive`).

    HF's sdpa path reads a None mask as causal only when the module (or an ``is_causal``
    kwarg) says so; PaliGemma's decoder modules are ``is_causal=False`` and get None when
    no token type ids are passed and nothing is padded. The plan executor reads None as
    causal, so that case becomes an explicit all-True mask here.
    """
    import torch

    if attention_mask is not None and attention_mask.is_floating_point():
        return _bool_of_additive(module, attention_mask)
    causal = getattr(module, "is_causal", True) if is_causal is None else is_causal
    if attention_mask is not None or causal or query.shape[2] == 1:
        return attention_mask

    shape = (query.shape[0], 1, query.shape[2], key.shape[2])
    return torch.ones(1, 1, 1, 1, dtype=torch.bool, device=query.device).expand(shape)


def _bool_of_additive(module: Any, mask: Any) -> Any:
    """A float (additive) mask as the bool mask plans read: 0 = attend, very negative = not.

    Some attention layers get an additive mask although ``sdpa_mask`` is registered (GLM-5's
    ``indexed_attention`` layers: found by scripts/scan_families.py). A float mask holding any
    other value is a bias, not a mask: refused, with the layer named.
    """
    import torch

    if mask.is_meta:
        return mask.new_ones(mask.shape, dtype=torch.bool)
    blocked = mask <= torch.finfo(mask.dtype).min / 2
    if not bool(((mask == 0) | blocked).all()):
        raise ValueError(
            f"{type(module).__name__} (layer {getattr(module, 'layer_idx', None)}) passes an "
            "additive attention bias (values other than 0 and -inf); headscope plans read "
            "masks only, so no intervention or probe can run on this layer"
        )
    return ~blocked


def check_kwargs(module: Any, kwargs: dict[str, Any]) -> None:
    """Raise ValueError when a plan meets a kwarg of :data:`PLAN_REFUSED_KWARGS`."""
    for name in PLAN_REFUSED_KWARGS:
        if kwargs.get(name) is not None:
            raise ValueError(
                f"{type(module).__name__} (layer {module.layer_idx}) passes {name!r} to its "
                "attention; headscope plans do not implement it, so no intervention or "
                "probe can run on this layer"
            )


def exact_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float,
    scaling: float | None,
    kwargs: dict[str, Any],
) -> tuple[Any, Any]:
    """(B, S_q, H, D) output of the model's own attention for this call, and None."""
    if kwargs.get("softcap") is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    import torch

    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if eager is None:
        raise ValueError(f"{type(module).__name__} passes softcap but has no eager attention")
    if attention_mask is None:
        from harness.attention.window import full_bool_mask

        causal = kwargs.get("is_causal")
        if getattr(module, "is_causal", True) if causal is None else causal:
            attention_mask = full_bool_mask(
                None, query.shape[0], query.shape[2], key.shape[2], query.device
            )
    if attention_mask is not None and attention_mask.dtype == torch.bool:
        low = torch.finfo(query.dtype).min
        zero = torch.tensor(0.0, device=query.device, dtype=query.dtype)
        attention_mask = torch.where(attention_mask, zero, low)
    rest = {k: v for k, v in kwargs.items() if k != "is_causal"}
    out, _ = eager(
        module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **rest
    )
    return out, None
