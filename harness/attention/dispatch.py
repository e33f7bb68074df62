"""The single ``headscope`` attention function for the text decoder, and plan installation.

One registered function serves every intervention and probe (attention.md): it reads the
:class:`~harness.attention.plan.LayerPlan` installed on each decoder attention module by
:func:`plan_scope`. Layers without a plan — and modules that are not decoder layers (vision
towers: no ``layer_idx``) — go through HF's own ``sdpa_attention_forward`` unchanged, so an
empty plan is bit-identical to ``attn_implementation="sdpa"``. A decoder module that says
``is_causal=False`` (PaliGemma's prefix-LM) is still a decoder layer: its plan runs under the
mask the model passes (docs/attention_semantics.md).

Usage::

    use_dispatch(model)                      # text decoder → "headscope", vision stays sdpa
    with plan_scope(model, plan):            # plan removed (previous one restored) on exit
        logits = model(**inputs).logits

Importing this module imports no torch/transformers; :func:`ensure_registered` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from harness.api.anatomy import attention_modules, check_decoder_only, geometry_of, text_config
from harness.attention.plan import (
    Ablation,
    AttentionRecorder,
    HookContext,
    LayerPlan,
    OutputHook,
    Plan,
    PlanConflictError,
    RecordSpec,
    VisualPrior,
    Window,
    merge_plans,
)
from harness.attention.stream import BOUND_ATTR, Stream

if TYPE_CHECKING:
    import torch

__all__ = [
    "ATTN_NAME",
    "Ablation",
    "AttentionRecorder",
    "HookContext",
    "LayerPlan",
    "OutputHook",
    "Plan",
    "PlanConflictError",
    "RecordSpec",
    "Stream",
    "VisualPrior",
    "Window",
    "current_plan",
    "ensure_registered",
    "headscope_attention",
    "merge_plans",
    "plan_scope",
    "resolved_window_kernel",
    "set_window_kernel",
    "use_dispatch",
    "window_kernel",
    "window_kernels_used",
]

ATTN_NAME = "headscope"
_PLAN_ATTR = "_headscope_layer_plan"
_MODEL_PLAN_ATTR = "_headscope_plan"
_state = {"registered": False, "window_kernel": "auto"}


def headscope_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, Any]:
    """HF attention-interface function: sdpa unless the module carries a layer plan.

    Args:
        module: The attention module (decoder layers have ``layer_idx`` and ``is_causal``).
        query: (B, H, S_q, D), RoPE applied.
        key: (B, H_kv, S_kv, D), cache included, not repeated for GQA.
        value: (B, H_kv, S_kv, D).
        attention_mask: HF bool mask (B, 1, S_q, S_kv), True = attend, authoritative (it may
            let a query see keys ahead of it: Gemma3's image block, PaliGemma's prefix);
            None = the module's own default: causal, or no mask at all for a decoder module
            with ``is_causal=False`` (PaliGemma's), as HF's sdpa path reads it.
        dropout: Attention dropout (only the plain sdpa path honours it; models run in eval).
        scaling: Softmax scale.
        **kwargs: Passed through to HF's sdpa function (or, with ``softcap``, the model's own
            eager one: :func:`harness.attention.exact.exact_attention`); under a plan,
            ``softcap`` applies to every head's logits and ``s_aux``/``position_bias`` are
            refused (:func:`harness.attention.exact.check_kwargs`).

    Returns:
        ``(attn_output (B, S_q, H, D), None)``.
    """
    from harness.attention.exact import check_kwargs, exact_attention, explicit_mask

    lp = getattr(module, _PLAN_ATTR, None)
    bound = module.__dict__.pop(BOUND_ATTR, None)  # a streamed cache layer, this call only
    if bound is not None and (lp is None or lp.stream is None):
        raise RuntimeError(
            f"layer {getattr(module, 'layer_idx', None)} has a streamed cache but no stream "
            "plan: generate under the plan the cache was built for"
        )
    if lp is None or getattr(module, "layer_idx", None) is None:
        return exact_attention(module, query, key, value, attention_mask, dropout, scaling, kwargs)
    from harness.attention.execute import run_layer_plan

    check_kwargs(module, kwargs)
    attention_mask = explicit_mask(module, attention_mask, query, key, kwargs.get("is_causal"))
    if bound is not None and attention_mask is not None and bound.pending is not None:
        attention_mask = attention_mask[..., : key.shape[2]]  # a static cache's prefill mask
    key, value, attention_mask = _unfilled_dropped(query, key, value, attention_mask)

    return run_layer_plan(
        module,
        lp,
        query,
        key,
        value,
        attention_mask,
        dropout,
        scaling,
        kwargs,
        window_kernel=_state["window_kernel"],
        stream_layer=bound,
    )


def _unfilled_dropped(query: Any, key: Any, value: Any, mask: Any) -> tuple:
    """K/V and mask without a static cache's not yet filled slots (trailing keys no row sees).

    Plans read a query's position as ``S_kv - S_q``; a static cache passes its whole buffer,
    so the keys after the last one the mask allows are dropped first. A dynamic cache's last
    key is the newest token, which its row sees: nothing changes. A causal prefill on an
    empty static cache may come with no mask at all (transformers skips it: sdpa's
    ``is_causal`` aligns upper-left, query ``i`` sees keys ``0..i``); its keys after the
    queries are dropped, as transformers' ``sdpa_attention_forward`` does
    (``integrations/sdpa_attention.py``).
    """
    q_len, kv_len = query.shape[2], key.shape[2]
    if mask is None and 1 < q_len < kv_len:  # the None left here means causal (explicit_mask)
        return key[:, :, :q_len], value[:, :, :q_len], None
    if mask is None or mask.shape[-1] != kv_len or kv_len <= q_len:
        return key, value, mask
    if mask.is_meta or bool(mask[..., -1].any()):
        return key, value, mask
    used = int(mask.any(dim=2)[:, 0].any(dim=0).nonzero().max()) + 1
    return key[:, :, :used], value[:, :, :used], mask[..., :used]


def ensure_registered() -> None:
    """Register ``headscope`` in AttentionInterface and AttentionMaskInterface (idempotent).

    The mask registration (with ``sdpa_mask``) matters: without it HF passes no padding
    mask at all (attention.md pitfall 1).
    """
    if _state["registered"]:
        return
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(ATTN_NAME, headscope_attention)
    AttentionMaskInterface.register(ATTN_NAME, sdpa_mask)
    _state["registered"] = True


def set_window_kernel(name: str) -> None:
    """Select the window implementation of windowed heads.

    ``auto`` (default): FlexAttention (compiled) on CUDA, chunked SDPA elsewhere; ``chunked``;
    ``reference`` (eager masked softmax); ``flex`` (compiled FlexAttention on any device);
    ``flex_eager`` (flex's eager implementation: materialises S × S, small tests only).
    Calls flex cannot serve (decode, a cached prefix, a mask that is not causal ∧ left
    padding) run ``chunked``; :func:`window_kernels_used` tells which kernels ran.
    """
    from harness.attention.execute import KERNEL_CHOICES

    if name not in KERNEL_CHOICES:
        raise ValueError(f"unknown window kernel {name!r} (known: {sorted(KERNEL_CHOICES)})")
    _state["window_kernel"] = name


def window_kernel() -> str:
    """The selected window kernel name (see :func:`set_window_kernel`)."""
    return _state["window_kernel"]


def resolved_window_kernel(device: Any) -> str:
    """The kernel the selection means for prefill on ``device`` (``auto`` resolved)."""
    from harness.attention.execute import resolve_window_kernel

    return resolve_window_kernel(_state["window_kernel"], device)


def window_kernels_used(reset: bool = False) -> dict[str, int]:
    """Windowed layer calls per kernel that actually ran (since the last reset)."""
    from harness.attention.execute import kernels_used, reset_kernels_used

    used = kernels_used()
    if reset:
        reset_kernels_used()
    return used


def use_dispatch(model: Any) -> Any:
    """Route the text decoder's attention through ``headscope``; other towers keep theirs.

    Works for composite VLM configs (``{"text_config": "headscope", "vision_config": ...}``)
    and for plain text models. Returns ``model``.

    Raises:
        harness.api.anatomy.UnsupportedModelError: for cross-attention (Mllama) and
            encoder-decoder (Florence-2, …) models, with the reason.
    """
    check_decoder_only(model)
    ensure_registered()
    subs = getattr(model.config, "sub_configs", {}) or {}
    if "text_config" in subs:
        impl = {"text_config": ATTN_NAME}
        for name in subs:
            if name != "text_config":
                sub = getattr(model.config, name, None)
                impl[name] = getattr(sub, "_attn_implementation", None) or "sdpa"
        model.set_attn_implementation(impl)
    else:
        model.set_attn_implementation(ATTN_NAME)
    if text_config(model)._attn_implementation != ATTN_NAME:
        raise RuntimeError(f"could not switch {type(model).__name__}'s text decoder to headscope")
    return model


def current_plan(model: Any) -> Plan | None:
    """The plan installed by the innermost active :func:`plan_scope`, or None."""
    return getattr(model, _MODEL_PLAN_ATTR, None)


@contextmanager
def plan_scope(model: Any, plan: Plan) -> Iterator[Plan]:
    """Install ``plan`` on the decoder's attention modules; restore the previous one on exit.

    Nested scopes replace (not merge) the outer plan; use :func:`merge_plans` to combine.

    Raises:
        RuntimeError: if the text decoder does not use the ``headscope`` function (the plan
            would be silently ignored); call :func:`use_dispatch` first.
    """
    if text_config(model)._attn_implementation != ATTN_NAME:
        raise RuntimeError("the text decoder is not on 'headscope'; call use_dispatch(model)")
    plan.validate(geometry_of(model))
    modules = attention_modules(model)
    attns = list(modules.values())
    previous = [getattr(a, _PLAN_ATTR, None) for a in attns]
    previous_plan = current_plan(model)
    try:
        for idx, attn in modules.items():
            lp = plan.layers.get(idx)
            setattr(
                attn,
                _PLAN_ATTR,
                lp if lp is not None and (lp.changes_output or lp.record) else None,
            )
        setattr(model, _MODEL_PLAN_ATTR, plan)
        yield plan
    finally:
        for attn, old in zip(attns, previous):
            setattr(attn, _PLAN_ATTR, old)
        setattr(model, _MODEL_PLAN_ATTR, previous_plan)
