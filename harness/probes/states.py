"""Residual-stream state capture with forward hooks (not through the attention dispatch).

:func:`capture_states` records the three residual-stream states of each decoder layer (block
input, after attention, after FFN) from inside the layer, so Qwen3-VL's DeepStack additions
(made between layers) land in the next layer's input. The diagnostics (eRank, RID, TME,
MixIG) and the noise baselines read them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from harness.api.anatomy import decoder_layers

__all__ = ["StateCapture", "capture_states"]


@dataclass
class StateCapture:
    """Residual-stream states per decoder layer, float32 on CPU, (B, S or P, hidden).

    Attributes:
        inputs: layer → block input.
        post_attn: layer → input + attention update (input of ``post_attention_layernorm``;
            of ``pre_feedforward_layernorm`` in Gemma 2/3's sandwich-norm layers; input +
            attention output where attention and MLP run in parallel, Cohere2 / AyaVision).
        post_ffn: layer → block output (input + attention + FFN).
        calls: Number of forwards seen (only the first is kept when ``first_call_only``).
    """

    inputs: dict[int, Any] = field(default_factory=dict)
    post_attn: dict[int, Any] = field(default_factory=dict)
    post_ffn: dict[int, Any] = field(default_factory=dict)
    calls: int = 0

    def delta_attn(self, layer: int) -> Any:
        """ΔX_attn = post_attn − input."""
        return self.post_attn[layer] - self.inputs[layer]


@contextmanager
def capture_states(
    model: Any,
    layers: Sequence[int] | None = None,
    positions: Sequence[int] | Any | None = None,
    first_call_only: bool = True,
) -> Iterator[StateCapture]:
    """Capture block input / post-attention / post-FFN states of decoder layers.

    Args:
        model: A model with ``model.language_model.layers`` (or another layout known to
            :func:`harness.api.anatomy.decoder_layers`).
        layers: Layer indices (default all).
        positions: Sequence positions to keep (1-D, same for every sample); default all.
        first_call_only: Keep only the first forward (the prefill under ``generate``).

    Yields:
        The :class:`StateCapture` being filled; hooks are removed on exit, even on error.
    """
    blocks = decoder_layers(model)
    chosen = range(len(blocks)) if layers is None else layers
    cap = StateCapture()
    handles = []

    def keep(store: dict[int, Any], layer: int, tensor: Any) -> None:
        if first_call_only and layer in store:
            return
        if positions is not None:
            import torch

            tensor = tensor[:, torch.as_tensor(positions, device=tensor.device)]
        store[layer] = tensor.detach().float().cpu()

    def first_arg(args: tuple, kwargs: dict) -> Any:
        return args[0] if args else kwargs["hidden_states"]

    raw: dict[int, Any] = {}  # a parallel block's input, until its attention output comes
    for layer in chosen:
        block = blocks[layer]

        def pre(_m, args, kwargs, layer=layer):
            if layer == min(chosen):
                cap.calls += 1
            raw[layer] = first_arg(args, kwargs)
            keep(cap.inputs, layer, raw[layer])

        def parallel(_m, _args, output, layer=layer):
            out = output[0] if isinstance(output, tuple) else output
            keep(cap.post_attn, layer, raw.pop(layer) + out)

        def mid(_m, args, layer=layer):
            keep(cap.post_attn, layer, args[0])

        def post(_m, _args, output, layer=layer):
            keep(cap.post_ffn, layer, output[0] if isinstance(output, tuple) else output)

        handles.append(block.register_forward_pre_hook(pre, with_kwargs=True))
        # the norm whose input is the residual after attention: Gemma 2/3's sandwich layers
        # norm the attention output itself in post_attention_layernorm
        norm = getattr(block, "pre_feedforward_layernorm", None)
        norm = norm or getattr(block, "post_attention_layernorm", None)
        if norm is not None:
            handles.append(norm.register_forward_pre_hook(mid))
        else:  # attention and MLP in parallel (Cohere, Cohere2): input + attention output
            handles.append(block.self_attn.register_forward_hook(parallel))
        handles.append(block.register_forward_hook(post))
    try:
        yield cap
    finally:
        for handle in handles:
            handle.remove()
