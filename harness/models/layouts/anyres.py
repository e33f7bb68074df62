"""``anyres``: LLaVA-NeXT / OneVision's base view plus a high-resolution grid of crops.

Visual tokens of one image, in feature order (:func:`anyres_rects`):

1. the base view: the whole image squashed to the crop size (336²) → 24×24 tokens;
2. the "anyres" view: the image resized into the best grid pinpoint (aspect kept, transformers'
   ``select_best_resolution``), padded centred, cut into crops; the crops' feature maps are
   stitched into one grid, the rows (or columns) that only saw padding are dropped
   (``unpad_image``), OneVision's ``anyres_max_N`` shrinks a grid that is too large
   bilinearly, and every remaining row ends with a newline token (no footprint).

Parameters (:class:`Anyres`) cover OneVision's other paths: several images in one request
(each padded to a centred square, one crop, its grid and one newline) and video (every frame
squashed to one crop, its grid pooled bilinearly to half size, then one newline for the whole
video). The crop size, patch size and pinpoints are read from the loaded processor and model
config (which must agree), ``anyres_max_N`` from ``config.vision_aspect_ratio``.

Families: LLaVA-NeXT (``multi_image="anyres"``, video frames as images), LLaVA-OneVision
(``multi_image="square"``, ``video="pooled"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harness.models.layouts.base import SpatialKind
from harness.models.layouts.fixed_grid import crop_view
from harness.models.layouts.geometry import Axis, View, bilinear_sources, patch_spans
from harness.models.layouts.tokens import FRAME, NO_SOURCE, Layout

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Anyres", "anyres_rects", "patch_output_size"]


def patch_output_size(height: int, width: int, target: tuple[int, int]) -> tuple[int, int]:
    """(new_h, new_w) of the aspect-kept resize into a pinpoint, as transformers computes it.

    ``image_processing_utils.get_patch_output_size``: the scale is computed first, then
    ``ceil(side · scale)`` (``ceil(width · best_h / height)`` can be one pixel more).
    """
    target_h, target_w = target
    scale_w, scale_h = target_w / width, target_h / height
    if scale_w < scale_h:
        return min(math.ceil(height * scale_w), target_h), target_w
    return target_h, min(math.ceil(width * scale_h), target_w)


def anyres_rects(
    width: int,
    height: int,
    *,
    pinpoints: list[list[int]],
    tile: int,
    patch: int,
    max_patches: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Footprints of a LLaVA-NeXT / OneVision single image: base view, then the anyres grid.

    Replays ``get_image_patches`` of the image processors (``select_best_resolution``,
    :func:`patch_output_size`, centred zero padding, ``tile``² crops; the base view squashes the
    whole image to ``tile``²) and the model's ``pack_image_features`` (``unpad_image``, the
    ``anyres_max_N`` bilinear shrink, a newline after every row).

    Args:
        width: Original width.
        height: Original height.
        pinpoints: The ``image_grid_pinpoints`` ((height, width) pairs).
        tile: Crop size in pixels (the vision tower's input size).
        patch: The vision tower's patch size (``tile // patch`` features per crop side).
        max_patches: N of OneVision's ``anyres_max_N``: when the unpadded grid holds more
            than 1.1² × N crops' worth of tokens it is shrunk bilinearly (each token then
            covers the cells it interpolates). None for LLaVA-NeXT.

    Returns:
        (base rects (grid², 4), anyres rects with a NaN newline row ending each row (M, 4)).
    """
    import numpy as np
    from transformers.image_processing_utils import select_best_resolution

    grid = tile // patch
    one = patch_spans(1, tile, patch)
    base = View.squash(width, height, tile, tile).grid(one, one)
    best_h, best_w = select_best_resolution((height, width), pinpoints)
    new_h, new_w = patch_output_size(height, width, (best_h, best_w))
    view = View(
        Axis(width, new_w, post=(best_w - new_w) // 2),
        Axis(height, new_h, post=(best_h - new_h) // 2),
    )
    row_spans = patch_spans(best_h // tile, tile, patch)
    col_spans = patch_spans(best_w // tile, tile, patch)
    rows, cols = len(row_spans), len(col_spans)
    # modeling_llava_next.unpad_image: drop the feature rows (or columns) that only saw padding
    if width / height > cols / rows:
        pad = (rows - int(round(height * (cols / width), 7))) // 2
        row_spans = row_spans[pad : rows - pad]
    else:
        pad = (cols - int(round(width * (rows / height), 7))) // 2
        col_spans = col_spans[pad : cols - pad]
    n_rows, n_cols = len(row_spans), len(col_spans)
    row_src = np.stack([np.arange(n_rows)] * 2, 1)
    col_src = np.stack([np.arange(n_cols)] * 2, 1)
    if max_patches is not None:  # modeling_llava_onevision.pack_image_features
        ratio = math.sqrt(n_rows * n_cols / (max_patches * grid**2))
        if ratio > 1.1:
            row_src = bilinear_sources(n_rows, int(n_rows // ratio))
            col_src = bilinear_sources(n_cols, int(n_cols // ratio))
    ys = np.stack([row_spans[row_src[:, 0], 0], row_spans[row_src[:, 1], 1]], 1)
    xs = np.stack([col_spans[col_src[:, 0], 0], col_spans[col_src[:, 1], 1]], 1)
    rects = view.grid(ys, xs).reshape(len(ys), len(xs), 4)
    newline = np.full((len(ys), 1, 4), np.nan)
    return base, np.concatenate([rects, newline], axis=1).reshape(-1, 4)


@dataclass(frozen=True)
class Anyres(SpatialKind):
    """Base view + unpadded anyres grid with a newline per row (LLaVA-NeXT / OneVision).

    Attributes:
        multi_image: With several images in a request, ``"anyres"`` lays each out as a lone
            image (NeXT) and ``"square"`` pads each to a centred square, one crop, its grid and
            one newline (OneVision).
        video: ``"frames"``: frames shown as images; ``"pooled"``: every frame squashed to the
            video processor's square, its grid pooled bilinearly to ``ceil(n / 2)`` per side,
            one newline after the last frame (OneVision's ``apply_pooling``).
        max_from_config: Whether the model shrinks a too-large grid to ``anyres_max_N`` read
            from ``config.vision_aspect_ratio`` (OneVision's ``pack_image_features``; NeXT's
            model never does, whatever its config holds).
    """

    kind = "anyres"
    multi_image: Literal["anyres", "square"] = "anyres"
    video: Literal["frames", "pooled"] = "frames"
    max_from_config: bool = False

    def max_patches(self, adapter: Any) -> int | None:
        """N of the model's ``vision_aspect_ratio`` ``anyres_max_N`` (None otherwise)."""
        if not self.max_from_config:
            return None
        ratio = str(getattr(adapter.model.config, "vision_aspect_ratio", "") or "")
        return int(ratio.removeprefix("anyres_max_")) if ratio.startswith("anyres_max_") else None

    @staticmethod
    def tile_patch(adapter: Any) -> tuple[int, int]:
        """(crop size, patch size) in pixels, from the image processor and the vision config.

        The crop is what ``_preprocess`` of the NeXT / OneVision image processors cuts
        (``crop_size`` height, else ``size`` height, else ``shortest_edge``); the tower must
        take it whole (its ``image_size``), and the model reads ``image_size // patch_size``
        features per side.
        """
        proc = adapter.processor.image_processor
        crop, size = dict(proc.crop_size or {}), dict(proc.size or {})
        tile = crop.get("height") or size.get("height") or size.get("shortest_edge")
        vision = adapter.model.config.vision_config
        if int(vision.image_size) != tile:
            raise NotImplementedError(f"processor crop {tile} differs from the tower's input size")
        return int(tile), int(vision.patch_size)

    @staticmethod
    def pinpoints(adapter: Any) -> list[list[int]]:
        """The anyres pinpoints (processor and model must agree)."""
        mine = [list(p) for p in adapter.processor.image_processor.image_grid_pinpoints]
        if mine != [list(p) for p in adapter.model.config.image_grid_pinpoints]:
            raise NotImplementedError("processor and model image_grid_pinpoints differ")
        return mine

    def add_image(
        self, adapter: Any, layout: Layout, source: int, size: tuple[int, int], shown: int
    ) -> None:
        """Base view, then anyres rows each ending in a newline (or the square path)."""
        tile, patch = self.tile_patch(adapter)
        if shown > 1 and self.multi_image == "square":
            # _preprocess without patching: pad_to_square (mean colour), then resize to the crop
            square = {"height": tile, "width": tile}
            view, _, _ = crop_view(size[0], size[1], size=square, crop=None, pad_to_square=True)
            spans = patch_spans(1, tile, patch)
            layout.add(source, view.grid(spans, spans), size)
            layout.add_blank(source)
            return
        base, hires = anyres_rects(
            size[0],
            size[1],
            pinpoints=self.pinpoints(adapter),
            tile=tile,
            patch=patch,
            max_patches=self.max_patches(adapter),
        )
        layout.add(source, base, size)
        layout.add(source, hires)

    @staticmethod
    def video_tile(adapter: Any) -> int:
        """Side of the square every frame is resized to (the video processor's ``size``)."""
        size = dict(adapter.processor.video_processor.size)
        if size.get("height") != size.get("width"):
            raise NotImplementedError(f"video size {size} is not square")
        return int(size["height"])

    def add_video(self, adapter: Any, layout: Layout, frames: tuple[Any, ...], shown: int) -> None:
        """Frames as images, or per frame the pooled grid then one newline (``pooled``)."""
        import numpy as np

        if self.video == "frames":
            super().add_video(adapter, layout, frames, shown)
            return
        tile, patch = self.video_tile(adapter), self.tile_patch(adapter)[1]
        spans = patch_spans(1, tile, patch)
        src = bilinear_sources(len(spans), math.ceil(len(spans) / 2))  # apply_pooling
        pooled = np.stack([spans[src[:, 0], 0], spans[src[:, 1], 1]], 1)
        for position, frame in enumerate(frames):
            view = View.squash(frame.size[0], frame.size[1], tile, tile)
            layout.add(FRAME + position, view.grid(pooled, pooled), frame.size)
        layout.add_blank(NO_SOURCE)
