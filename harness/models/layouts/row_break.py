"""``row_break``: an aspect-kept grid whose rows end in a break token (Pixtral / Mistral3).

Pixtral's image processor (transformers ``image_processing_pil_pixtral``:
``get_resize_output_image_size``) shrinks an image whose longer side exceeds
``size["longest_edge"]`` by ``ratio = max(h / longest, w / longest)`` (each side floored), then
rounds each side *up* to a multiple of the token cell (``PixtralProcessor._process_images``
passes ``patch_size · spatial_merge_size`` as the patch: 16 · 2 = 32 px) and resizes the
original once to that size. The tower's patches are merged ``spatial_merge_size``² into one
token per cell; the processor writes ``[IMG]`` × columns then ``[IMG_BREAK]`` for every row,
the last break replaced by ``[IMG_END]`` (``replace_image_token``). Only ``[IMG]`` carries a
feature: breaks and the end token are text and are not visual tokens.

The resized size of every image is read from the processor output (``image_sizes``, (h, w)
per image, in order), never guessed; :func:`resized_size` replays the rule (held to equality
with ``PixtralImageProcessorPil`` by ``tests/integration/test_layout_kinds.py``) for callers without
an output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.models.layouts.base import LayoutKind
from harness.models.layouts.geometry import View, patch_spans
from harness.models.layouts.tokens import FRAME, Footprints, Layout

if TYPE_CHECKING:
    from harness.api.payloads import Request

__all__ = ["RowBreak", "resized_size"]


def resized_size(width: int, height: int, longest_edge: int, cell: int) -> tuple[int, int]:
    """(width, height) Pixtral's image processor resizes a ``width`` × ``height`` image to.

    Replays ``get_resize_output_image_size`` (``size = (longest_edge, longest_edge)``,
    ``patch_size = (cell, cell)``): shrink by the larger side ratio when above
    ``longest_edge`` (floored), then ``((side - 1) // cell + 1) · cell``.
    """
    ratio = max(height / longest_edge, width / longest_edge)
    if ratio > 1:
        height = int(math.floor(height / ratio))
        width = int(math.floor(width / ratio))
    return ((width - 1) // cell + 1) * cell, ((height - 1) // cell + 1) * cell


@dataclass(frozen=True)
class RowBreak(LayoutKind):
    """Aspect-kept cells row-major, a break token after each row (not a visual token).

    The cell is ``processor.patch_size · processor.spatial_merge_size`` px; sizes come from
    the processor output's ``image_sizes`` (images, then pages, then video frames shown as
    images).
    """

    kind = "row_break"

    @staticmethod
    def cell(adapter: Any) -> int:
        """Pixels per token side: the processor's patch times its spatial merge."""
        processor = adapter.processor
        return int(processor.patch_size) * int(getattr(processor, "spatial_merge_size", 1) or 1)

    def footprints(self, adapter: Any, request: Request, inputs: Any) -> Footprints:
        """Each ``[IMG]`` token's cell of the resized image, in original pixels."""
        ids = inputs["input_ids"][0].tolist()
        wanted = set(adapter.visual_token_ids())
        positions = [i for i, t in enumerate(ids) if t in wanted]
        stills = list(request.visual_inputs())
        frames = list(request.video.frames) if request.video is not None else []
        media = stills + (frames if adapter.video_as == "images" else [])
        sizes = inputs.get("image_sizes")
        sizes = sizes.tolist() if hasattr(sizes, "tolist") else sizes
        if media and (sizes is None or len(sizes) != len(media)):
            raise RuntimeError(f"{len(media)} images but image_sizes {sizes}")
        cell = self.cell(adapter)
        layout = Layout.empty()
        for index, image in enumerate(media):
            source = index if index < len(stills) else FRAME + index - len(stills)
            height, width = (int(v) for v in sizes[index])
            view = View.squash(image.size[0], image.size[1], width, height)
            rects = view.grid(patch_spans(1, height, cell), patch_spans(1, width, cell))
            layout.add(source, rects, image.size)
        return Footprints.of(positions, layout)
