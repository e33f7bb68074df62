"""``fixed_grid``: one fixed-size canvas per image, a row-major grid of (pooled) patches.

The image processor maps the image onto the vision tower's canvas: [pad to a centred square
(``do_pad``)], resize (``size``: ``shortest_edge``, aspect kept, or ``height``/``width``, a
squash), [center crop ``crop_size`` (``do_center_crop``)]. The tower cuts the canvas into
``patch``-px patches (``vision_config.patch_size``); with ``pool`` > 1 the model average-pools
``pool × pool`` patches into one token (Gemma3: 64×64 patches of 14 px pooled 4×4 → 16×16).
Tokens are row-major, in feature order, at the image placeholder's positions; a kept CLS
token (``vision_feature_select_strategy == "full"`` with ``num_additional_image_tokens``)
comes first and has no footprint. Regions a center crop removes have no token.

Families: LLaVA-1.5 (CLIP 336, resize short side + center crop), the toy, PaliGemma (squash to
224²), Gemma3 (squash to 896², 4×4 pooling).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.models.layouts.base import SpatialKind, config_int
from harness.models.layouts.geometry import Axis, View, patch_spans
from harness.models.layouts.tokens import Layout

__all__ = ["FixedGrid", "crop_view"]


def crop_view(
    width: int,
    height: int,
    *,
    size: dict[str, int],
    crop: dict[str, int] | None,
    pad_to_square: bool = False,
) -> tuple[View, int, int]:
    """LLaVA-1.5 preprocessing as a view: [pad to square], resize, [center crop].

    Args:
        width: Original width.
        height: Original height.
        size: The image processor's ``size`` (``shortest_edge`` or ``height``/``width``).
        crop: The center-crop size (``height``/``width``), None when not cropping.
        pad_to_square: Whether the processor pads to a centred square first (``do_pad``).

    Returns:
        The view and the canvas (width, height) the vision tower sees.
    """
    pre_x = pre_y = 0
    cw, ch = width, height
    if pad_to_square and width != height:  # pad_to_square: pasted at (side − size) // 2
        side = max(width, height)
        pre_x, pre_y, cw, ch = (side - width) // 2, (side - height) // 2, side, side
    if size.get("shortest_edge"):  # image_transforms.get_resize_output_image_size
        short, long = sorted((cw, ch))
        new_short, new_long = size["shortest_edge"], int(size["shortest_edge"] * long / short)
        nw, nh = (new_short, new_long) if cw <= ch else (new_long, new_short)
    else:
        nw, nh = size["width"], size["height"]
    post_x = post_y = 0
    cx, cy = nw, nh
    if crop:  # image_transforms.center_crop starts at (H − h) // 2
        post_x, post_y = -((nw - crop["width"]) // 2), -((nh - crop["height"]) // 2)
        cx, cy = crop["width"], crop["height"]
    view = View(Axis(cw, nw, pre_x, post_x), Axis(ch, nh, pre_y, post_y))
    return view, cx, cy


@dataclass(frozen=True)
class FixedGrid(SpatialKind):
    """A fixed canvas per image (video frames shown as images), row-major (pooled) patches.

    Attributes:
        pool: Patches pooled into one token per side: an int, or the name of a model-config
            attribute giving tokens per image (``mm_tokens_per_image``: pool = patches per
            side // √tokens).
    """

    kind = "fixed_grid"
    pool: int | str = 1

    def pool_of(self, config: Any, patches_per_side: int) -> int:
        """Patches per token side (1: no pooling)."""
        if isinstance(self.pool, int):
            return self.pool
        tokens = int(round(int(getattr(config, self.pool)) ** 0.5))
        if not tokens or patches_per_side % tokens:
            raise NotImplementedError(f"{patches_per_side} patches do not pool to {tokens}")
        return patches_per_side // tokens

    def add_image(
        self, adapter: Any, layout: Layout, source: int, size: tuple[int, int], shown: int
    ) -> None:
        """Append one image's tokens: a (pooled) patch grid over the processed canvas."""
        proc = adapter.processor.image_processor
        crop_size = getattr(proc, "crop_size", None)
        crop = dict(crop_size) if getattr(proc, "do_center_crop", False) and crop_size else None
        pad = bool(getattr(proc, "do_pad", False))
        view, cw, ch = crop_view(
            size[0], size[1], size=dict(proc.size), crop=crop, pad_to_square=pad
        )
        config = adapter.model.config
        patch = config_int(config.vision_config.patch_size)
        cell = patch * self.pool_of(config, ch // patch)
        extra = int(getattr(adapter.processor, "num_additional_image_tokens", 0) or 0)
        if getattr(config, "vision_feature_select_strategy", None) == "full" and extra:
            layout.add_blank(source, extra)  # CLS kept: it is not a spatial patch
        layout.add(source, view.grid(patch_spans(1, ch, cell), patch_spans(1, cw, cell)), size)
