"""``tiles``: an image cut into tiles of a fixed size (best grid), plus a global thumbnail.

The image is squashed onto the ``cols × rows`` grid of ``tile``-px tiles whose aspect ratio is
closest to the image's (transformers' ``get_optimal_tiled_canvas``, at most ``max_patches``
tiles, GotOcr2's ``crop_image_to_patches``); tiles are row-major, each a grid of ``cell``-px
tokens (the tower's patch after pixel shuffle: ``patch / downsample_ratio``), and when there is
more than one tile a thumbnail (the whole image squashed to one tile) comes last. A box
therefore maps to tokens in every tile that covers it *and* in the thumbnail. Marker tokens
between tiles (``<img>``, ``<row_i_col_j>``, ``TILE_k``) carry no features and are not visual
tokens: only the placeholder ids declared by the family are. A video shows every frame as one
squashed tile.

Families: InternVL (and, with their canvas rules, AyaVision — GotOcr2 as InternVL —, Idefics3
and SmolVLM, whose resize to a multiple of the tile is another ``canvas``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harness.models.layouts.base import SpatialKind, config_int
from harness.models.layouts.geometry import FRAME, Layout, View, patch_spans

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Tiles", "tile_rects"]


def tile_rects(
    width: int,
    height: int,
    *,
    tile: int,
    cell: int,
    min_tiles: int = 1,
    max_tiles: int = 12,
    crop_to_patches: bool = True,
) -> np.ndarray:
    """Footprints of one InternVL image: tiles row-major, then the thumbnail (> 1 tile).

    Replays ``GotOcr2ImageProcessorPil.crop_image_to_patches`` (``get_optimal_tiled_canvas``,
    a squash onto ``cols·tile × rows·tile``, row-major tiles, a squashed thumbnail last).

    Args:
        width: Original width.
        height: Original height.
        tile: Tile size in pixels.
        cell: Pixels per token side (patch size / pixel-shuffle ``downsample_ratio``).
        min_tiles: The image processor's ``min_patches``.
        max_tiles: The image processor's ``max_patches``.
        crop_to_patches: False shows the image as a single squashed tile.

    Returns:
        (N, 4) rects.
    """
    import numpy as np
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
        get_optimal_tiled_canvas,
    )

    one = patch_spans(1, tile, cell)
    thumb = View.squash(width, height, tile, tile).grid(one, one)
    if not crop_to_patches or max_tiles <= 1:
        return thumb
    cols, rows = get_optimal_tiled_canvas((height, width), (tile, tile), min_tiles, max_tiles)
    view = View.squash(width, height, cols * tile, rows * tile)
    row_spans, col_spans = patch_spans(rows, tile, cell), patch_spans(cols, tile, cell)
    grid = len(one)
    parts = []
    for t in range(rows * cols):
        tr, tc = divmod(t, cols)
        rs, cs = row_spans[tr * grid : (tr + 1) * grid], col_spans[tc * grid : (tc + 1) * grid]
        parts.append(view.grid(rs, cs))
    if rows * cols > 1:
        parts.append(thumb)
    return np.concatenate(parts)


@dataclass(frozen=True)
class Tiles(SpatialKind):
    """Row-major tiles of ``cell``-px tokens, thumbnail last (more than one tile).

    Attributes:
        canvas: How the image is mapped onto the tiles: ``"got_ocr2"`` (squash onto the best
            ``cols × rows`` grid: InternVL, AyaVision).
        downsample: Model-config attribute of the pixel shuffle: a value below 1 divides the
            patch (InternVL's ``downsample_ratio`` 0.5: 14-px patches → 28-px cells), 1 or
            more multiplies it (AyaVision's ``downsample_factor``, Idefics3's
            ``scale_factor``).
        crop_to_patches: Whether still images are tiled (else one squashed tile); the
            adapter passes the same value to the processor.
    """

    kind = "tiles"
    canvas: Literal["got_ocr2"] = "got_ocr2"
    downsample: str = "downsample_ratio"
    crop_to_patches: bool = True

    def tile_cell(self, adapter: Any) -> tuple[int, int]:
        """(tile, cell) in pixels: the processor's tile size and the tower's pixels per token.

        A token is ``1 / downsample_ratio`` patches wide after the pixel shuffle (448² tiles,
        patch 14, ratio 0.5 → 28-px cells, 16×16 = ``image_seq_length`` 256 tokens per tile).
        """
        config = adapter.model.config
        tile = int(adapter.processor.image_processor.size["height"])
        patch = config_int(config.vision_config.patch_size)
        factor = float(getattr(config, self.downsample))
        cell = round(patch / factor) if factor < 1 else round(patch * factor)
        seq = getattr(adapter.processor, "image_seq_length", None)
        if seq is not None and (tile // cell) ** 2 != int(seq):
            raise NotImplementedError(f"{tile}-px tiles of {cell}-px cells ≠ image_seq_length")
        return tile, cell

    def add_image(
        self, adapter: Any, layout: Layout, source: int, size: tuple[int, int], shown: int
    ) -> None:
        """Tiles row-major, thumbnail last (more than one tile)."""
        proc = adapter.processor.image_processor
        tile, cell = self.tile_cell(adapter)
        rects = tile_rects(
            size[0],
            size[1],
            tile=tile,
            cell=cell,
            min_tiles=int(proc.min_patches),
            max_tiles=int(proc.max_patches),
            crop_to_patches=self.crop_to_patches,
        )
        layout.add(source, rects, size)

    def add_video(self, adapter: Any, layout: Layout, frames: tuple[Any, ...], shown: int) -> None:
        """One squashed tile per frame."""
        tile, cell = self.tile_cell(adapter)
        for position, frame in enumerate(frames):
            rects = tile_rects(*frame.size, tile=tile, cell=cell, crop_to_patches=False)
            layout.add(FRAME + position, rects, frame.size)
