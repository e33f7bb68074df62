"""Qwen2.5-VL adapter (``Qwen2_5_VLForConditionalGeneration``).

Visual tokens as Qwen2-VL (28-px merged cells, frame pairs; see :mod:`harness.models.qwen2_vl`).
The vision tower's window attention reorders patches internally but restores the order
before the merger, so tokens stay row-major over cells.

Answer coordinates: Qwen2.5-VL grounds in absolute pixels of the *resized* input it saw
(``pixels_resized``), so :meth:`Qwen2_5_VLAdapter.parse_box` recomputes that size from the
image processor's own ``smart_resize`` and its configured min/max pixels. A box on a *video
frame* is in pixels of the frame as the **video** processor resized it (its own budget, and a
per-frame cap that depends on the frame count when ``cap_pixels_per_frame`` is on):
:meth:`Qwen2_5_VLAdapter.parse_video_box` uses that rule (:mod:`harness.models.qwen_resize`).

Video time: M-RoPE's temporal positions use ``second_per_grid_ts``; HF derives it from the
video metadata's ``sampled_fps``, which only approximates the rate of frames sampled from a
span, so it is set exactly to ``temporal_patch_size · frame gap / fps`` when fps is known.
"""

from __future__ import annotations

from typing import Any

from harness.api.model import parse_box_text
from harness.api.payloads import Box, Request
from harness.api.registry import model_family
from harness.models.layouts.grid_thw import GridTHW
from harness.models.offline.qwen import qwen_recipe
from harness.models.qwen2_vl import QWEN_CHAT, QwenVLAdapter
from harness.models.unit import FamilyUnit

__all__ = ["Qwen2_5_VLAdapter"]


@model_family("qwen2_5_vl")
class Qwen2_5_VLAdapter(QwenVLAdapter):
    """Qwen2.5-VL; boxes in absolute pixels of the resized image."""

    unit = FamilyUnit(
        model_class="Qwen2_5_VLForConditionalGeneration",
        layout=GridTHW(),
        box_convention="pixels_resized",
        box_source=(
            "absolute pixels of the smart_resize'd input: QwenLM/Qwen2.5-VL "
            "cookbooks/spatial_understanding.ipynb draws the boxes on the resized size, and "
            "Alibaba Model Studio's Qwen2.5-VL grounding guide states coordinates are absolute "
            "pixels of the scaled image"
        ),
        default_pretrained="Qwen/Qwen2.5-VL-7B-Instruct",
        visual_tokens=("image_token_id", "video_token_id"),
        chat=QWEN_CHAT
        + "; default system prompt 'You are a helpful assistant.'; second_per_grid_ts set "
        "exactly from the frame gap and fps",
        sap_priors=("complexity",),
        tiny=qwen_recipe("qwen2_5_vl"),
    )

    def encode(self, requests: list[Request]) -> Any:
        """Processor output with the exact seconds per temporal grid step of each video."""
        import torch

        inputs = super().encode(requests)
        if "second_per_grid_ts" not in inputs:
            return inputs
        tps = int(self.processor.video_processor.temporal_patch_size)
        seconds = inputs["second_per_grid_ts"].tolist()
        videos = [r.video for r in requests if r.video is not None]
        for i, video in enumerate(videos):
            idx = video.frame_indices
            if video.fps and len(idx) > 1:
                gap = (idx[-1] - idx[0]) / (len(idx) - 1)
                seconds[i] = tps * gap / video.fps
        inputs["second_per_grid_ts"] = torch.tensor(seconds, dtype=torch.float32)
        return inputs

    def parse_box(self, text: str, image_size: tuple[int, int]) -> Box | None:
        """Parse ``[x1, y1, x2, y2]`` in resized-image pixels into an original-image box."""
        return parse_box_text(
            text, image_size, "pixels_resized", resized_size=self.resized_size(image_size)
        )

    def parse_video_box(
        self, text: str, frame_size: tuple[int, int], num_frames: int
    ) -> Box | None:
        """Parse a box in pixels of a frame as the video processor resized it (``num_frames``)."""
        resized = self.video_resized_size(frame_size, num_frames)
        return parse_box_text(text, frame_size, "pixels_resized", resized_size=resized)
