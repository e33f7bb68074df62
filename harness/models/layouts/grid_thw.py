"""``grid_thw``: a Qwen-style grid read from the processor's ``image_grid_thw``/``video_grid_thw``.

Each image is resized (aspect kept) to multiples of ``cell = patch · merge`` and cut into
``patch``-px patches; each merged token covers one ``cell × cell`` square of the resized image,
and tokens run row-major over cells, in feature order, at the image placeholder's positions. A
video's frames are grouped by ``temporal_patch_size`` (an odd last frame is repeated) and each
group is one grid of tokens; a token's source is its group's first frame
(``frames_per_token`` = ``temporal_patch_size``). Grids are read from the processor output
(``(t, h, w)`` in patches), never guessed; ``patch_size``, ``merge_size`` and
``temporal_patch_size`` from the loaded image / video processors.

Families: Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4.1V (whose processor has the same outputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.api.payloads import Box
from harness.models.layouts.base import LayoutKind
from harness.models.layouts.geometry import View, patch_spans
from harness.models.layouts.tokens import FRAME, Footprints, Layout, overlapping

if TYPE_CHECKING:
    from harness.api.payloads import Request

__all__ = ["GridTHW", "box_cells", "cell_rects"]


def cell_rects(image_size: tuple[int, int], resized_size: tuple[int, int], cell: int) -> Any:
    """(N, 4) original-pixel footprints of the resized image's row-major ``cell``-px squares."""
    (w0, h0), (rw, rh) = image_size, resized_size
    return View.squash(w0, h0, rw, rh).grid(patch_spans(1, rh, cell), patch_spans(1, rw, cell))


def box_cells(
    box: Box | None, image_size: tuple[int, int], resized_size: tuple[int, int], cell: int
) -> list[int]:
    """Row-major indices of the ``cell``-px squares of the resized image that ``box`` covers.

    The image is squashed (aspect kept up to rounding, HF's ``smart_resize``) to
    ``resized_size``, multiples of ``cell`` = patch · merge; merged token ``k`` sees one
    square. Selection is the one evidence rule, :func:`harness.models.hf.overlapping`.

    Args:
        box: Box in original-image pixels (parts outside the image are dropped); None for
            the whole image.
        image_size: Original (width, height).
        resized_size: (width, height) the model saw, multiples of ``cell``.
        cell: Merged-token size in resized pixels.

    Raises:
        EvidenceError: the box does not overlap the image.
    """
    import numpy as np

    rects = cell_rects(image_size, resized_size, cell)
    box = Box(0, 0, *image_size) if box is None else box
    return np.flatnonzero(overlapping(rects, box, image_size)).tolist()


def _patch_merge(processor: Any, video: bool) -> tuple[int, int]:
    proc = processor.video_processor if video else processor.image_processor
    return int(proc.patch_size), int(proc.merge_size)


@dataclass(frozen=True)
class GridTHW(LayoutKind):
    """Qwen-style merged-cell grids from ``image_grid_thw`` / ``video_grid_thw``.

    Visual tokens are the processor's ``image_token_id`` and ``video_token_id`` positions.
    """

    kind = "grid_thw"

    def image_blocks(self, processor: Any, inputs: Any, image_pos: list[int]) -> list[tuple]:
        """Per still image: (its token positions, resized width, resized height)."""
        patch, merge = _patch_merge(processor, video=False)
        blocks, offset = [], 0
        grids = inputs["image_grid_thw"].tolist() if "image_grid_thw" in inputs else []
        for t, gh, gw in grids:
            n = t * gh * gw // merge**2
            blocks.append((image_pos[offset : offset + n], gw * patch, gh * patch))
            offset += n
        if offset != len(image_pos):
            raise RuntimeError(f"{len(image_pos)} image tokens but grids account for {offset}")
        return blocks

    def footprints(self, adapter: Any, request: Request, inputs: Any) -> Footprints:
        """Every visual token's position and its ``cell``-px square, in original pixels.

        Images and pages by their ``image_grid_thw``; a video's temporal groups by
        ``video_grid_thw``, each token's source the group's first frame.
        """
        processor = adapter.processor
        ids = inputs["input_ids"][0].tolist()
        image_pos = [i for i, t in enumerate(ids) if t == processor.image_token_id]
        video_id = getattr(processor, "video_token_id", None)  # image-only processors lack it
        video_pos = [i for i, t in enumerate(ids) if video_id is not None and t == video_id]
        layout = Layout.empty()
        positions: list[int] = []
        patch, merge = _patch_merge(processor, video=False)
        images = request.visual_inputs()
        for index, (block, rw, rh) in enumerate(self.image_blocks(processor, inputs, image_pos)):
            size = images[index].size
            layout.add(index, cell_rects(size, (rw, rh), patch * merge), size)
            positions += block
        tps = 1
        if request.video is not None:
            patch, merge = _patch_merge(processor, video=True)
            tps = int(processor.video_processor.temporal_patch_size)
            gt, gh, gw = inputs["video_grid_thw"][0].tolist()
            if gt * gh * gw // merge**2 != len(video_pos):
                raise RuntimeError(
                    f"{len(video_pos)} video tokens but the grid gives {gt * gh * gw // merge**2}"
                )
            frames = request.video.frames
            for group in range(gt):
                size = frames[group * tps].size
                rects = cell_rects(size, (gw * patch, gh * patch), patch * merge)
                layout.add(FRAME + group * tps, rects, size)
            for f, frame in enumerate(frames):
                layout.sizes.setdefault(FRAME + f, tuple(frame.size))
            positions += video_pos
        return Footprints.of(positions, layout, tps)
