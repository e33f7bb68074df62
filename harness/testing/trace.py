"""Token-local tracing: the input positions a box in the media really reaches, per the model.

The reference the adapters' evidence maps (``token_spans``) are held to, by equality. A request
is run twice through the real processor and model, once with black media and once with a white
box drawn on one image / frame, and the positions whose decoder input changes are the box's
tokens. Four things make that trace exact rather than approximate:

1. :func:`exact_overlap_resize`: every PIL resize (the processors' and the PIL video
   stand-ins') becomes an exact-overlap maximum: output pixel ``u`` takes the brightest input
   pixel sharing positive area with its footprint ``[u · old / new, (u + 1) · old / new)``,
   decided in integers. A white box then reaches exactly the resized pixels it overlaps
   (bicubic would spread its edge over 2 px). Padding, cropping and tiling stay the
   processor's own code.
2. :func:`token_local`: the vision tower's attention returns V, so a patch only sees itself.
3. The projector's output of the black run is subtracted in both runs (LLaVA family, InternVL,
   AyaVision; Idefics3's and SmolVLM's ``connector``):
   features of tokens the box does not reach are then exactly 0, and the model's own packing,
   unpadding and bilinear pooling carry into each token exactly the weights it reads from
   touched tokens (no round-off can absorb a small one). Qwen's merger output is scattered as
   is, and compared as is.
4. The decoder's ``inputs_embeds`` are captured and the decoder itself is never run.

A position counts as changed when any coordinate differs at all (``!= 0``): untouched tokens
go through bit-identical arithmetic in both runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = [
    "draw_box",
    "exact_overlap_resize",
    "text_decoder",
    "token_local",
    "traced_positions",
    "vision_tower",
]

_TOKEN_LOCAL = "headscope_token_local"


def _overlap_spans(old: int, new: int) -> tuple[Any, Any]:
    """Per output pixel, the input pixels ``[lo, hi)`` sharing positive area with it."""
    import numpy as np

    u = np.arange(new, dtype=np.int64)
    lo = (u * old) // new
    hi = -((-(u + 1) * old) // new)  # ceil((u + 1) · old / new)
    return lo, hi


def _max_resize(arr: Any, axis: int, old: int, new: int) -> Any:
    import numpy as np

    lo, hi = _overlap_spans(old, new)
    reach = int((hi - lo).max())
    idx = np.minimum(lo[:, None] + np.arange(reach)[None, :], (hi - 1)[:, None])
    return np.take(arr, idx, axis=axis).max(axis=axis + 1)


@contextlib.contextmanager
def exact_overlap_resize() -> Iterator[None]:
    """Within the block, ``PIL.Image.Image.resize`` is the exact-overlap maximum (see module)."""
    import numpy as np
    from PIL import Image

    original = Image.Image.resize

    def resize(self: Any, size: Sequence[int], resample: Any = None, box: Any = None,
               reducing_gap: Any = None) -> Any:  # fmt: skip
        if box is not None:
            raise NotImplementedError("exact_overlap_resize: resize(box=...) is not replayed")
        width, height = int(size[0]), int(size[1])
        arr = np.asarray(self)
        out = _max_resize(_max_resize(arr, 0, self.height, height), 1, self.width, width)
        return Image.fromarray(np.ascontiguousarray(out), mode=self.mode)

    Image.Image.resize = resize
    try:
        yield
    finally:
        Image.Image.resize = original


def _value_only(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                **kwargs: Any) -> tuple[Any, None]:  # fmt: skip
    return value.transpose(1, 2).contiguous(), None


def vision_tower(model: Any) -> Any:
    """The vision encoder (``visual``, ``vision_tower``; Idefics3 / SmolVLM: ``vision_model``)."""
    inner = model.model
    tower = getattr(inner, "visual", None) or getattr(inner, "vision_tower", None)
    return tower or inner.vision_model


def text_decoder(model: Any) -> Any:
    """The text decoder (``language_model``; Idefics3 / SmolVLM: ``text_model``)."""
    inner = model.model
    return getattr(inner, "language_model", None) or inner.text_model


def _vision_config(model: Any) -> Any:
    return vision_tower(model).config


@contextlib.contextmanager
def token_local(model: Any) -> Iterator[None]:
    """Within the block, the vision tower's attention returns V (each patch sees only itself)."""
    from transformers import AttentionInterface

    AttentionInterface.register(_TOKEN_LOCAL, _value_only)
    config = _vision_config(model)
    old = config._attn_implementation
    config._attn_implementation = _TOKEN_LOCAL
    try:
        yield
    finally:
        config._attn_implementation = old


class _Captured(Exception):
    """Raised by the decoder pre-hook once the inputs are captured (the decoder never runs)."""


def _decoder_inputs(adapter: Any, requests: list[Any], reference: list[Any] | None) -> Any:
    """(inputs_embeds, attention_mask, projector outputs) of one batch, under the tracing."""
    import torch

    seen: dict[str, Any] = {}
    projected: list[Any] = []

    def grab(_module: Any, _args: Any, kwargs: Any) -> None:
        seen["x"] = kwargs["inputs_embeds"].detach().clone()
        raise _Captured

    def subtract(_module: Any, _args: Any, out: Any) -> Any:
        projected.append(out.detach().clone())
        base = out if reference is None else reference[len(projected) - 1]
        return out - base

    model = adapter.model
    inner = model.model
    hooks = [text_decoder(model).register_forward_pre_hook(grab, with_kwargs=True)]
    projector = getattr(inner, "multi_modal_projector", None) or getattr(inner, "connector", None)
    if projector is not None:
        hooks.append(projector.register_forward_hook(subtract))
    inputs = adapter.prepare(requests)
    try:
        with torch.no_grad():
            model(**inputs)
    except _Captured:
        pass
    finally:
        for hook in hooks:
            hook.remove()
    if "x" not in seen:
        raise RuntimeError("the decoder was never reached")
    return seen["x"], inputs["attention_mask"], projected


def traced_positions(adapter: Any, blank: list[Any], lit: list[Any]) -> list[set[int]]:
    """Per request, the positions (unpadded ``input_ids`` indices) whose decoder input changes.

    Args:
        adapter: An :class:`~harness.models.hf.HFAdapter` over a real processor and model.
        blank: The batch with black media.
        lit: The same batch with white boxes drawn (same sizes, same text).

    Returns:
        One set per row; row ``b``'s left padding is taken off.
    """
    with exact_overlap_resize(), token_local(adapter.model):
        base, mask, projected = _decoder_inputs(adapter, blank, None)
        after, mask_after, _ = _decoder_inputs(adapter, lit, projected)
    if base.shape != after.shape or not bool((mask == mask_after).all()):
        raise ValueError("blank and lit batches must encode to the same shapes")
    changed = (base != after).any(dim=-1)
    out = []
    for row in range(changed.shape[0]):
        pad = int(mask.shape[1] - mask[row].sum())
        out.append({int(i) - pad for i in changed[row].nonzero().flatten().tolist()})
    return out


def draw_box(image: Any, box: Any) -> Any:
    """A copy of ``image`` with ``box`` (x2/y2 exclusive, integer edges) filled white."""
    from PIL import ImageDraw

    out = image.copy()
    ImageDraw.Draw(out).rectangle([box.x1, box.y1, box.x2 - 1, box.y2 - 1], fill=(255, 255, 255))
    return out
