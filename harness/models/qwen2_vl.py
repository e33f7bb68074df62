"""Qwen2-VL adapter, and the Qwen base shared by the Qwen2.5-VL and Qwen3-VL adapters.

Visual tokens: each image is resized (aspect kept) to multiples of ``cell = patch · merge``
(28 px for Qwen2/2.5-VL, 32 px for Qwen3-VL) and cut into ``patch``-px patches; each merged
token covers one ``cell × cell`` square and tokens run row-major over cells, in feature order,
between ``<|vision_start|>``/``<|vision_end|>``. A video's frames are grouped in pairs
(``temporal_patch_size`` 2; an odd last frame is repeated) and each group is one grid of
tokens. Grids are read from the processor output (``image_grid_thw``/``video_grid_thw``), never
guessed. Forwards need ``mm_token_type_ids`` with the grids; the processor returns them.

Answer coordinates: Qwen2-VL writes boxes as integers in [0, 1000) relative to the image
(``normalized_1000``).

Registered model args (``ModelSpec.args``) go to ``AutoProcessor.from_pretrained``, e.g.
``{"min_pixels": 3136, "max_pixels": 1003520}``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from harness.api.model import TokenSpans
from harness.api.payloads import (
    Box,
    BoxEvidence,
    Evidence,
    EvidenceError,
    PageEvidence,
    Request,
    TubeEvidence,
    Video,
)
from harness.api.registry import model_family
from harness.models import qwen_resize
from harness.models._layout import FRAME, Footprints, Layout, View, patch_spans, tube_inside
from harness.models.hf import HFAdapter, instruction_positions, overlapping, positions_of

__all__ = ["QwenVLAdapter", "Qwen2VLAdapter", "box_cells", "video_metadata"]


def video_metadata(video: Video) -> dict[str, Any]:
    """HF ``VideoMetadata`` fields for pre-sampled frames (so nothing is resampled)."""
    indices = [int(i) for i in video.frame_indices]
    return {
        "total_num_frames": max(indices) + 1,
        "fps": video.fps,
        "frames_indices": indices,
        "width": video.frames[0].size[0],
        "height": video.frames[0].size[1],
    }


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

    rects = _cells(image_size, resized_size, cell)
    box = Box(0, 0, *image_size) if box is None else box
    return np.flatnonzero(overlapping(rects, box, image_size)).tolist()


def _cells(image_size: tuple[int, int], resized_size: tuple[int, int], cell: int) -> Any:
    """(N, 4) original-pixel footprints of the resized image's row-major ``cell``-px squares."""
    (w0, h0), (rw, rh) = image_size, resized_size
    return View.squash(w0, h0, rw, rh).grid(patch_spans(1, rh, cell), patch_spans(1, rw, cell))


class QwenVLAdapter(HFAdapter):
    """Shared Qwen-VL logic: video metadata, token spans, resized sizes."""

    model_class: ClassVar[str] = "Qwen2VLForConditionalGeneration"
    #: The video processor's resize rule (:mod:`harness.models.qwen_resize`).
    video_resize_rule: ClassVar[str] = qwen_resize.VIDEO_RESIZE_QWEN2

    # -- inputs ------------------------------------------------------------------------
    def processor_kwargs(self, requests: list[Request]) -> dict[str, Any]:
        """Pass the real frame indices / fps and forbid resampling of pre-sampled frames."""
        metas = [video_metadata(r.video) for r in requests if r.video is not None]
        return {"video_metadata": metas, "do_sample_frames": False} if metas else {}

    def settings(self) -> dict[str, Any]:
        """Base settings, the pixel budgets actually in the processor, and its resizes.

        ``resize`` (:func:`harness.models.qwen_resize.resize_record`) and ``video_resize``
        (:func:`~harness.models.qwen_resize.video_resize_record`) are what
        :meth:`resized_size` and :meth:`video_resized_size` compute with, so
        ``headscope rescore`` can map boxes written in resized pixels back without the
        processor.
        """
        out = super().settings()
        for kind in ("image", "video"):
            proc = getattr(self.processor, f"{kind}_processor", None)
            size = getattr(proc, "size", None) or {}
            out[f"{kind}_min_pixels"] = size.get("shortest_edge")
            out[f"{kind}_max_pixels"] = size.get("longest_edge")
        if getattr(self.processor, "image_processor", None) is not None:
            out["resize"] = qwen_resize.resize_record(self.processor.image_processor)
        if getattr(self.processor, "video_processor", None) is not None:
            out["video_resize"] = self._video_resize()
        return out

    def _video_resize(self) -> dict[str, Any]:
        return qwen_resize.video_resize_record(
            self.processor.video_processor, self.video_resize_rule
        )

    # -- geometry of the visual tokens ------------------------------------------------------
    def _patch_merge(self, video: bool) -> tuple[int, int]:
        proc = self.processor.video_processor if video else self.processor.image_processor
        return int(proc.patch_size), int(proc.merge_size)

    def resized_size(self, image_size: tuple[int, int]) -> tuple[int, int]:
        """(width, height) a still image of ``image_size`` is resized to (HF's smart_resize).

        Computed from the loaded image processor's recorded parameters
        (:mod:`harness.models.qwen_resize`), the same function ``headscope rescore`` uses.
        """
        record = qwen_resize.resize_record(self.processor.image_processor)
        return qwen_resize.resized_size(image_size, record)

    def video_resized_size(self, frame_size: tuple[int, int], num_frames: int) -> tuple[int, int]:
        """(width, height) each frame of a ``num_frames``-frame video is resized to.

        The video processor's own rule and budget (:func:`qwen_resize.video_resized_size`),
        not the still-image one: the function ``headscope rescore`` uses.
        """
        return qwen_resize.video_resized_size(frame_size, num_frames, self._video_resize())

    def token_spans(self, request: Request, evidence: Evidence | None = None) -> TokenSpans:
        """Ω(V*) (covered visual tokens), instruction and all visual positions of ``request``.

        Raises:
            EvidenceError: evidence empty, degenerate, outside the input, or of a kind the
                request has no media for.
        """
        inputs = self.encode([request])
        ids = inputs["input_ids"][0].tolist()
        image_pos = positions_of(ids, self.processor.image_token_id)
        video_pos = positions_of(ids, self.processor.video_token_id)
        instruction = instruction_positions(self.tokenizer, self.render(request), request.text, ids)
        covered: tuple[int, ...] = ()
        if evidence is not None:
            covered = self._evidence(request, evidence, inputs, image_pos, video_pos)
            if not covered:
                raise EvidenceError(f"evidence {evidence!r} covers no visual token")
        return TokenSpans(
            evidence=covered,
            instruction=instruction,
            visual=tuple(sorted(image_pos + video_pos)),
            seq_len=len(ids),
        )

    def token_footprints(self, request: Request) -> Footprints:
        """Every visual token's position and footprint: its ``cell``-px square, in original pixels.

        The squares are the ones :func:`box_cells` selects from (images and pages by their
        ``image_grid_thw``; a video's temporal groups by ``video_grid_thw``, each token's source
        the group's first frame, ``frames_per_token`` = ``temporal_patch_size``).
        """
        inputs = self.encode([request])
        ids = inputs["input_ids"][0].tolist()
        image_pos = positions_of(ids, self.processor.image_token_id)
        video_pos = positions_of(ids, self.processor.video_token_id)
        layout = Layout.empty()
        positions: list[int] = []
        patch, merge = self._patch_merge(video=False)
        images = request.visual_inputs()
        for index, (block, rw, rh) in enumerate(self._image_blocks(inputs, image_pos)):
            layout.add(
                index, _cells(images[index].size, (rw, rh), patch * merge), images[index].size
            )
            positions += block
        tps = 1
        if request.video is not None:
            patch, merge = self._patch_merge(video=True)
            tps = int(self.processor.video_processor.temporal_patch_size)
            gt, gh, gw = inputs["video_grid_thw"][0].tolist()
            frames = request.video.frames
            for group in range(gt):
                size = frames[group * tps].size
                layout.add(
                    FRAME + group * tps, _cells(size, (gw * patch, gh * patch), patch * merge), size
                )
            for f, frame in enumerate(frames):
                layout.sizes.setdefault(FRAME + f, tuple(frame.size))
            positions += video_pos
        return Footprints.of(positions, layout, tps)

    def _image_blocks(self, inputs: Any, image_pos: list[int]) -> list[tuple[list[int], int, int]]:
        """Per still image: (its token positions, resized width, resized height)."""
        patch, merge = self._patch_merge(video=False)
        blocks, offset = [], 0
        grids = inputs["image_grid_thw"].tolist() if "image_grid_thw" in inputs else []
        for t, gh, gw in grids:
            n = t * gh * gw // merge**2
            blocks.append((image_pos[offset : offset + n], gw * patch, gh * patch))
            offset += n
        if offset != len(image_pos):
            raise RuntimeError(f"{len(image_pos)} image tokens but grids account for {offset}")
        return blocks

    def _evidence(
        self,
        request: Request,
        evidence: Evidence,
        inputs: Any,
        image_pos: list[int],
        video_pos: list[int],
    ) -> tuple[int, ...]:
        images = request.visual_inputs()
        if isinstance(evidence, TubeEvidence):
            return self._tube(request, evidence, inputs, video_pos)
        if isinstance(evidence, BoxEvidence):
            boxes_on = {evidence.image_index: (evidence.box,)}
        elif isinstance(evidence, PageEvidence):
            base = len(request.images)
            for page in evidence.pages:
                if not 0 <= page < len(request.pages):
                    raise EvidenceError(f"page {page} outside the {len(request.pages)} pages")
            boxes_on = {base + p: tuple(evidence.boxes.get(p, ())) for p in evidence.pages}
        else:
            raise EvidenceError(f"unsupported evidence type {type(evidence).__name__}")
        blocks = self._image_blocks(inputs, image_pos)
        patch, merge = self._patch_merge(video=False)
        out: set[int] = set()
        for index, boxes in boxes_on.items():
            if not 0 <= index < len(images):
                raise EvidenceError(f"image {index} outside the request's {len(images)} images")
            positions, rw, rh = blocks[index]
            for box in boxes or (None,):  # None: the whole page
                cells = box_cells(box, images[index].size, (rw, rh), patch * merge)
                out.update(positions[c] for c in cells)
        return tuple(sorted(out))

    def _tube(
        self, request: Request, tube: TubeEvidence, inputs: Any, video_pos: list[int]
    ) -> tuple[int, ...]:
        video = request.video
        if video is None:
            raise EvidenceError("tube evidence on a request without video")
        patch, merge = self._patch_merge(video=True)
        tps = int(self.processor.video_processor.temporal_patch_size)
        gt, gh, gw = inputs["video_grid_thw"][0].tolist()
        per_group = gh * gw // merge**2
        if gt * per_group != len(video_pos):
            raise RuntimeError(f"{len(video_pos)} video tokens but the grid gives {gt * per_group}")
        for frame in tube.boxes:
            if not 0 <= frame < len(video.frames):
                raise EvidenceError(f"frame {frame} outside the {len(video.frames)} frames")
        out: set[int] = set()
        for frame, box in tube_inside(tube.boxes, lambda f: video.frames[f].size).items():
            group = video_pos[(frame // tps) * per_group : (frame // tps + 1) * per_group]
            cells = box_cells(
                box, video.frames[frame].size, (gw * patch, gh * patch), patch * merge
            )
            out.update(group[c] for c in cells)
        return tuple(sorted(out))


@model_family("qwen2_vl")
class Qwen2VLAdapter(QwenVLAdapter):
    """Qwen2-VL (``Qwen2VLForConditionalGeneration``); boxes in [0, 1000) relative units."""

    box_convention = "normalized_1000"
    default_pretrained = "Qwen/Qwen2-VL-7B-Instruct"
    model_class = "Qwen2VLForConditionalGeneration"
