"""InternVL adapter (``InternVLForConditionalGeneration``, InternVL2.5/3 ``-hf`` checkpoints).

Visual tokens: each ``<IMG_CONTEXT>`` placeholder expands to ``<img>`` + 256 context tokens per
tile + ``</img>``. The image is squashed onto the ``cols``×``rows`` grid of 448² tiles (at most
``max_patches`` = 12) whose aspect ratio is closest to the image's (transformers'
``get_optimal_tiled_canvas``); tiles are row-major, each a 16×16 grid of tokens (pixel shuffle
merges 2×2 patches of 14 px: 28-px cells), and when there is more than one tile a thumbnail
(the whole image squashed to one tile) comes last. A box therefore maps to tokens in every
tile that covers it *and* in the thumbnail. Only the context tokens count as visual tokens.

Video: every frame is one squashed tile, written ``Frame1: <img>…</img>`` lines by the
processor's video path, which needs torchvision (``InternVLVideoProcessor``; the CPU tests use
a PIL stand-in). Boxes are written as integers in [0, 1000), read as [0, 1] fractions when
the four numbers sum below 4 (``normalized_1000_auto``, the rule of InternVL's own
``evaluate_grounding.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from harness.api.payloads import Request
from harness.api.registry import model_family
from harness.models._layout import FRAME, Layout, View, patch_spans
from harness.models.llava import LlavaAdapter

if TYPE_CHECKING:
    import numpy as np

__all__ = ["InternVLAdapter", "tile_rects"]


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


@model_family("internvl")
class InternVLAdapter(LlavaAdapter):
    """InternVL (``OpenGVLab/InternVL3-*-hf``); boxes as integers in [0, 1000).

    InternVL's own RefCOCO evaluator (OpenGVLab/InternVL ``internvl_chat/eval/refcoco/
    evaluate_grounding.py::evaluate_chat_model``) divides the four numbers by 1000 when they
    sum to 4 or more, else reads them as [0, 1] fractions; :meth:`parse_box` does the same.
    """

    # [0, 1000) integers, or [0, 1] fractions when the four sum below 4: InternVL's own rule
    # (evaluate_grounding.py). A named convention, so rescore reads boxes as the run did.
    box_convention = "normalized_1000_auto"

    default_pretrained = "OpenGVLab/InternVL3-8B-hf"
    model_class: ClassVar[str] = "InternVLForConditionalGeneration"
    video_as = "video"
    crop_to_patches: ClassVar[bool] = True

    def settings(self) -> dict[str, Any]:
        """Base settings plus tiling and the video preprocessing path."""
        out = super().settings()
        proc = self.processor.image_processor
        out.update(
            crop_to_patches=self.crop_to_patches,
            max_tiles=int(proc.max_patches),
        )
        return out

    def processor_kwargs(self, requests: list[Request]) -> dict[str, Any]:
        """Tile still images (InternVL's default), explicitly so the layout agrees."""
        return {"crop_to_patches": self.crop_to_patches}

    # -- geometry --------------------------------------------------------------------------
    def tile_cell(self) -> tuple[int, int]:
        """(tile, cell) in pixels: the processor's tile size and the tower's pixels per token.

        A token is ``1 / downsample_ratio`` patches wide after the pixel shuffle (448² tiles,
        patch 14, ratio 0.5 → 28-px cells, 16×16 = ``image_seq_length`` 256 tokens per tile).
        """
        config = self.model.config
        tile = int(self.processor.image_processor.size["height"])
        patch = config.vision_config.patch_size
        patch = int(patch[0] if isinstance(patch, list | tuple) else patch)
        cell = round(patch / float(config.downsample_ratio))
        if (tile // cell) ** 2 != int(self.processor.image_seq_length):
            raise NotImplementedError(f"{tile}-px tiles of {cell}-px cells ≠ image_seq_length")
        return tile, cell

    def add_image(self, layout: Layout, source: int, size: tuple[int, int], shown: int) -> None:
        """Tiles row-major, thumbnail last (more than one tile)."""
        proc = self.processor.image_processor
        tile, cell = self.tile_cell()
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

    def add_video(self, layout: Layout, frames: tuple[Any, ...], shown: int) -> None:
        """One squashed tile per frame."""
        tile, cell = self.tile_cell()
        for position, frame in enumerate(frames):
            rects = tile_rects(*frame.size, tile=tile, cell=cell, crop_to_patches=False)
            layout.add(FRAME + position, rects, frame.size)
