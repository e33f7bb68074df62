"""Qwen2-VL adapter, and the Qwen base shared by the Qwen2.5-VL and Qwen3-VL adapters.

Visual tokens: layout kind ``grid_thw`` (:mod:`harness.models.layouts.grid_thw`): each image is
resized (aspect kept) to multiples of ``cell = patch · merge`` (28 px for Qwen2/2.5-VL, 32 px
for Qwen3-VL); each merged token covers one ``cell × cell`` square, row-major, between
``<|vision_start|>``/``<|vision_end|>``; a video's frames are grouped in pairs
(``temporal_patch_size`` 2; an odd last frame is repeated), one grid per group. Grids are read
from the processor output (``image_grid_thw``/``video_grid_thw``), never guessed. Forwards
need ``mm_token_type_ids`` with the grids; the processor returns them.

Answer coordinates: Qwen2-VL writes boxes as integers in [0, 1000) relative to the image
(``normalized_1000``).

Registered model args (``ModelSpec.args``) go to ``AutoProcessor.from_pretrained``, e.g.
``{"min_pixels": 3136, "max_pixels": 1003520}``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from harness.api.payloads import Request, Video
from harness.api.registry import model_family
from harness.models import qwen_resize
from harness.models.hf import HFAdapter
from harness.models.layouts.grid_thw import GridTHW, box_cells
from harness.models.offline.qwen import qwen_recipe
from harness.models.unit import FamilyUnit

__all__ = ["QWEN_CHAT", "QwenVLAdapter", "Qwen2VLAdapter", "box_cells", "video_metadata"]

QWEN_CHAT = (
    "ChatML; each image / video is <|vision_start|><|image_pad|> (<|video_pad|>)<|vision_end|> "
    "before the text; the real frame indices and fps go to the processor as video metadata "
    "with do_sample_frames=False, so pre-sampled frames are never resampled; forwards need "
    "mm_token_type_ids with the grids (the processor returns them)"
)


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


class QwenVLAdapter(HFAdapter):
    """Shared Qwen-VL logic: video metadata, recorded resizes, resized sizes."""

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


@model_family("qwen2_vl")
class Qwen2VLAdapter(QwenVLAdapter):
    """Qwen2-VL (``Qwen2VLForConditionalGeneration``); boxes in [0, 1000) relative units."""

    unit = FamilyUnit(
        model_class="Qwen2VLForConditionalGeneration",
        layout=GridTHW(),
        box_convention="normalized_1000",
        box_source=(
            "Qwen-VL's (x1,y1),(x2,y2) on a [0, 1000) grid, which Qwen2-VL keeps: QwenLM/Qwen-VL "
            "@ aa00ed0 eval_mm/evaluate_grounding.py (tasks/refcocog/official.py replays it)"
        ),
        default_pretrained="Qwen/Qwen2-VL-7B-Instruct",
        visual_tokens=("image_token_id", "video_token_id"),
        chat=QWEN_CHAT + "; default system prompt 'You are a helpful assistant.'",
        sap_priors=("complexity",),
        tiny=qwen_recipe("qwen2_vl"),
    )
