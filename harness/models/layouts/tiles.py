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

Canvas ``"idefics3"`` (Idefics3, SmolVLM): the image is resized twice — its longer side to
``size["longest_edge"]`` (aspect kept, the other side made even, at most 4096), then each side
up to a multiple of the tile — and cut into tiles without further resizing; the global image
(last) is that twice-resized image squashed to one tile. Footprints go back through every
resize (:class:`~harness.models.layouts.geometry.Chain`); the resizes and the tiles' pixels are
held to ``Idefics3ImageProcessorPil``'s own outputs by ``tests/integration/test_layout_kinds.py``
and the tokens to the model-level oracle (``tests/integration/test_evidence_conformance.py``).

Families: InternVL, AyaVision (``got_ocr2``), Idefics3 and SmolVLM (``idefics3``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harness.models.layouts.base import SpatialKind, config_int
from harness.models.layouts.geometry import Axis, Chain, View, patch_spans
from harness.models.layouts.tokens import FRAME, Layout

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Tiles", "idefics3_rects", "idefics3_sizes", "tile_rects"]


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


def idefics3_sizes(
    width: int, height: int, *, longest_edge: int | None, tile: int, max_size: int = 4096
) -> tuple[tuple[int, int], tuple[int, int]]:
    """(stage-1 (w, h), stage-2 (w, h)) of Idefics3's two resizes, as its processor computes them.

    Replays ``image_processing_pil_idefics3``: ``_resize_output_size_rescale_to_max_len``
    (longer side := ``longest_edge``, the other ``int(...)`` and made even) then
    ``_resize_output_size_scale_below_upper_bound`` (``max_size``), skipped when
    ``longest_edge`` is None (``do_resize`` off); then ``resize_for_vision_encoder`` (each side
    up to a multiple of ``tile``, the second from the first by the aspect ratio).
    """
    h, w = height, width
    if longest_edge is not None:
        aspect = w / h
        if w >= h:
            w, h = longest_edge, int(longest_edge / aspect)
            h += h % 2
        else:
            h, w = longest_edge, int(longest_edge * aspect)
            w += w % 2
        h, w = max(h, 1), max(w, 1)
        aspect = w / h
        if w >= h and w > max_size:
            w, h = max_size, int(max_size / aspect)
        elif h > w and h > max_size:
            h, w = max_size, int(max_size * aspect)
        h, w = max(h, 1), max(w, 1)
    aspect = w / h
    if w >= h:
        w2 = math.ceil(w / tile) * tile
        h2 = math.ceil(int(w2 / aspect) / tile) * tile
    else:
        h2 = math.ceil(h / tile) * tile
        w2 = math.ceil(int(h2 * aspect) / tile) * tile
    return (w, h), (w2, h2)


def idefics3_rects(
    width: int,
    height: int,
    *,
    longest_edge: int | None,
    tile: int,
    cell: int,
    split: bool = True,
    max_size: int = 4096,
) -> np.ndarray:
    """Footprints of one Idefics3 / SmolVLM image: tiles row-major, then the global image.

    Args:
        width: Original width.
        height: Original height.
        longest_edge: The image processor's ``size["longest_edge"]`` (None: ``do_resize`` off).
        tile: ``max_image_size["longest_edge"]`` (the tower's input side).
        cell: Pixels per token side (patch · ``scale_factor``).
        split: ``do_image_splitting`` (off: the stage-1 image squashed to one tile).
        max_size: transformers' ``MAX_IMAGE_SIZE``.

    Returns:
        (N, 4) rects.
    """
    import numpy as np

    (w1, h1), (w2, h2) = idefics3_sizes(
        width, height, longest_edge=longest_edge, tile=tile, max_size=max_size
    )
    first = (Axis(width, w1), Axis(height, h1))
    one = patch_spans(1, tile, cell)
    if not split:
        return View(Chain((first[0], Axis(w1, tile))), Chain((first[1], Axis(h1, tile)))).grid(
            one, one
        )
    second = (Axis(w1, w2), Axis(h1, h2))
    tiled = View(Chain((first[0], second[0])), Chain((first[1], second[1])))
    if w2 <= tile and h2 <= tile:  # split_images keeps the one tile-sized image, no global
        return tiled.grid(one, one)
    rows, cols = h2 // tile, w2 // tile
    row_spans, col_spans = patch_spans(rows, tile, cell), patch_spans(cols, tile, cell)
    grid, parts = len(one), []
    for t in range(rows * cols):
        tr, tc = divmod(t, cols)
        rs, cs = row_spans[tr * grid : (tr + 1) * grid], col_spans[tc * grid : (tc + 1) * grid]
        parts.append(tiled.grid(rs, cs))
    glob = View(
        Chain((first[0], second[0], Axis(w2, tile))), Chain((first[1], second[1], Axis(h2, tile)))
    )
    parts.append(glob.grid(one, one))
    return np.concatenate(parts)


@dataclass(frozen=True)
class Tiles(SpatialKind):
    """Row-major tiles of ``cell``-px tokens, thumbnail last (more than one tile).

    Attributes:
        canvas: How the image is mapped onto the tiles: ``"got_ocr2"`` (squash onto the best
            ``cols × rows`` grid: InternVL, AyaVision) or ``"idefics3"`` (two resizes to a
            multiple of the tile, global image last: Idefics3, SmolVLM).
        downsample: Model-config attribute of the pixel shuffle: a value below 1 divides the
            patch (InternVL's ``downsample_ratio`` 0.5: 14-px patches → 28-px cells), 1 or
            more multiplies it (AyaVision's ``downsample_factor``, Idefics3's
            ``scale_factor``).
        crop_to_patches: Whether still images are tiled (else one squashed tile); the
            adapter passes the same value to the processor.
    """

    kind = "tiles"
    canvas: Literal["got_ocr2", "idefics3"] = "got_ocr2"
    downsample: str = "downsample_ratio"
    crop_to_patches: bool = True

    def tile_cell(self, adapter: Any) -> tuple[int, int]:
        """(tile, cell) in pixels: the processor's tile size and the tower's pixels per token.

        A token is ``1 / downsample_ratio`` patches wide after the pixel shuffle (448² tiles,
        patch 14, ratio 0.5 → 28-px cells, 16×16 = ``image_seq_length`` 256 tokens per tile).
        """
        config = adapter.model.config
        proc = adapter.processor.image_processor
        if self.canvas == "idefics3":
            tile = int(proc.max_image_size["longest_edge"])
        else:
            tile = int(proc.size["height"])
        patch = config_int(config.vision_config.patch_size)
        factor = float(getattr(config, self.downsample))
        cell = round(patch / factor) if factor < 1 else round(patch * factor)
        seq = getattr(adapter.processor, "image_seq_length", None)
        seq = getattr(adapter.processor, "image_seq_len", None) if seq is None else seq
        if seq is None and hasattr(adapter.processor, "img_size"):  # AyaVisionProcessor
            # its placeholders a tile: (img_size / (patch_size · its downsample_factor))²
            seq = (int(adapter.processor.img_size) // int(adapter.processor.patch_size)) ** 2
        if seq is not None and (tile // cell) ** 2 != int(seq):
            raise NotImplementedError(f"{tile}-px tiles of {cell}-px cells ≠ image_seq_length")
        return tile, cell

    def add_image(
        self, adapter: Any, layout: Layout, source: int, size: tuple[int, int], shown: int
    ) -> None:
        """Tiles row-major, thumbnail last (more than one tile)."""
        proc = adapter.processor.image_processor
        tile, cell = self.tile_cell(adapter)
        if self.canvas == "idefics3":
            resize = dict(proc.size or {}) if proc.do_resize else {}
            longest = int(resize["longest_edge"]) if resize else None
            split = bool(proc.do_image_splitting)
            rects = idefics3_rects(
                size[0], size[1], longest_edge=longest, tile=tile, cell=cell, split=split
            )
            layout.add(source, rects, size)
            return
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
        """One squashed tile per frame (frames shown as images: each tiled as an image)."""
        if self.canvas == "idefics3" or adapter.video_as == "images":
            super().add_video(adapter, layout, frames, shown)
            return
        tile, cell = self.tile_cell(adapter)
        for position, frame in enumerate(frames):
            rects = tile_rects(*frame.size, tile=tile, cell=cell, crop_to_patches=False)
            layout.add(FRAME + position, rects, frame.size)
