"""LLaVA-NeXT adapter (``LlavaNextForConditionalGeneration``, LLaVA-1.6).

Visual tokens of one image, in feature order (:func:`anyres_rects`):

1. the base view: the whole image squashed to the crop size (336²) → 24×24 tokens;
2. the "anyres" view: the image resized into the best grid pinpoint (aspect kept, transformers'
   ``select_best_resolution``), padded centred, cut into 336² crops; the crops' feature maps are
   stitched into one grid, the rows (or columns) that only saw padding are dropped
   (``unpad_image``), and every remaining row ends with a newline token (no footprint).

Video frames are shown as consecutive images (LLaVA-NeXT has no video input; LLaVA-NeXT-Video
is another class). Boxes are written normalised to [0, 1] (``normalized``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from harness.api.registry import model_family
from harness.models._layout import Layout, View, bilinear_sources
from harness.models.llava import LlavaAdapter

if TYPE_CHECKING:
    import numpy as np

__all__ = ["LlavaNextAdapter", "anyres_rects"]


def anyres_rects(
    width: int,
    height: int,
    *,
    pinpoints: list[list[int]],
    tile: int,
    grid: int,
    max_patches: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Footprints of a LLaVA-NeXT / OneVision single image: base view, then the anyres grid.

    Args:
        width: Original width.
        height: Original height.
        pinpoints: The ``image_grid_pinpoints`` ((height, width) pairs).
        tile: Crop size in pixels (the vision tower's input size).
        grid: Feature grid side per crop (``tile / patch``).
        max_patches: N of OneVision's ``anyres_max_N``: when the unpadded grid holds more
            than 1.1² × N crops' worth of tokens it is shrunk bilinearly (each token then
            covers the cells it interpolates). None for LLaVA-NeXT.

    Returns:
        (base rects (grid², 4), anyres rects with a NaN newline row ending each row (M, 4)).
    """
    import numpy as np
    from transformers.image_processing_utils import select_best_resolution

    cell = tile / grid
    base = View(tile / width, tile / height).grid(grid, grid, cell, cell)
    best_h, best_w = select_best_resolution((height, width), pinpoints)
    # transformers' get_patch_output_size: fit inside the pinpoint, aspect kept, ceil'd.
    if best_w / width < best_h / height:
        new_w, new_h = best_w, min(math.ceil(height * best_w / width), best_h)
    else:
        new_h, new_w = best_h, min(math.ceil(width * best_h / height), best_w)
    view = View(new_w / width, new_h / height, (best_w - new_w) // 2, (best_h - new_h) // 2)
    rows, cols = best_h // tile * grid, best_w // tile * grid
    # unpad_image: drop the feature rows (or columns) that only saw padding.
    r0, c0, n_rows, n_cols = 0, 0, rows, cols
    if width / height > cols / rows:
        pad = (rows - int(round(height * (cols / width), 7))) // 2
        r0, n_rows = pad, rows - 2 * pad
    else:
        pad = (cols - int(round(width * (rows / height), 7))) // 2
        c0, n_cols = pad, cols - 2 * pad
    row_src = np.stack([np.arange(n_rows)] * 2, 1)
    col_src = np.stack([np.arange(n_cols)] * 2, 1)
    if max_patches is not None:
        ratio = math.sqrt(n_rows * n_cols / (max_patches * grid**2))
        if ratio > 1.1:
            row_src = bilinear_sources(n_rows, int(n_rows // ratio))
            col_src = bilinear_sources(n_cols, int(n_cols // ratio))
    out_r, out_c = len(row_src), len(col_src)
    r, c = np.divmod(np.arange(out_r * out_c), out_c)
    rects = view.cells(row_src[r] + r0, col_src[c] + c0, cell, cell).reshape(out_r, out_c, 4)
    newline = np.full((out_r, 1, 4), np.nan)
    return base, np.concatenate([rects, newline], axis=1).reshape(-1, 4)


@model_family("llava_next")
class LlavaNextAdapter(LlavaAdapter):
    """LLaVA-NeXT (``llava-hf/llava-v1.6-*-hf``); boxes normalised to [0, 1]."""

    default_pretrained = "llava-hf/llava-v1.6-mistral-7b-hf"
    model_class: ClassVar[str] = "LlavaNextForConditionalGeneration"

    def max_patches(self) -> int | None:
        """N of ``anyres_max_N`` (None: no downsampling)."""
        return None

    def tile_grid(self) -> tuple[int, int]:
        """(crop size in pixels, feature grid side per crop) of the vision tower."""
        vision = self.model.config.vision_config
        tile = int(vision.image_size)
        return tile, tile // int(vision.patch_size)

    def add_image(self, layout: Layout, source: int, size: tuple[int, int], shown: int) -> None:
        """Append one image's tokens: base view, then anyres rows each ending in a newline."""
        tile, grid = self.tile_grid()
        proc_size = dict(self.processor.image_processor.size)
        if proc_size.get("shortest_edge", proc_size.get("height")) != tile:
            raise NotImplementedError(f"processor size {proc_size} differs from the tower's {tile}")
        base, hires = anyres_rects(
            size[0],
            size[1],
            pinpoints=[list(p) for p in self.model.config.image_grid_pinpoints],
            tile=tile,
            grid=grid,
            max_patches=self.max_patches(),
        )
        layout.add(source, base, size)
        layout.add(source, hires)
