"""Qwen3-VL adapter (``Qwen3VLForConditionalGeneration``).

Visual tokens: patch 16, merge 2 → 32-px merged cells, row-major (see
:mod:`harness.models.qwen2_vl`). Each temporal group of two video frames is its own
``<|vision_start|> … <|vision_end|>`` block preceded by a ``<t seconds>`` timestamp (computed by
the processor from the real frame indices and fps we pass); token spans read the video tokens
in order, so groups stay contiguous runs. DeepStack adds visual features to the hidden states
of the first decoder layers at the visual positions (capture states inside the layers).

Answer coordinates — decision: ``normalized_1000``. Qwen2.5-VL used absolute pixels of the
resized image, but Qwen3-VL switched back to relative coordinates in [0, 1000]: the official
Qwen3-VL 2D-grounding cookbook and the maintainers' notes say so ("Qwen3-VL's default coordinate
system has been changed from the absolute coordinates used in Qwen2.5-VL to relative
coordinates ranging from 0 to 1000", quoted in QwenLM/Qwen3-VL issue #1741; issue #1486 and
ms-swift PR #6178 agree). transformers itself does not parse boxes, so the cookbook is the
reference. Boxes on video frames are in the same [0, 1000] units, so no resize is needed to
read them; the video resize (Qwen3-VL's own 3-D ``smart_resize`` over the clip) is still
recorded in the settings (``video_resize``).
"""

from __future__ import annotations

from harness.api.registry import model_family
from harness.models import qwen_resize
from harness.models.layouts.grid_thw import GridTHW
from harness.models.offline.qwen import qwen_recipe
from harness.models.qwen2_vl import QWEN_CHAT, QwenVLAdapter
from harness.models.unit import FamilyUnit

__all__ = ["Qwen3VLAdapter"]


@model_family("qwen3_vl")
class Qwen3VLAdapter(QwenVLAdapter):
    """Qwen3-VL; boxes in [0, 1000] relative units."""

    unit = FamilyUnit(
        model_class="Qwen3VLForConditionalGeneration",
        layout=GridTHW(),
        box_convention="normalized_1000",
        box_source=(
            "relative [0, 1000]: the official Qwen3-VL 2D-grounding cookbook; the maintainers' "
            "note quoted in QwenLM/Qwen3-VL issue #1741 (also #1486, ms-swift PR #6178)"
        ),
        default_pretrained="Qwen/Qwen3-VL-4B-Instruct",
        visual_tokens=("image_token_id", "video_token_id"),
        chat=QWEN_CHAT
        + "; no default system prompt; each video time group is its own vision block after "
        "a <t seconds> timestamp; DeepStack adds visual features in the first decoder layers",
        sap_priors=("complexity",),
        tiny=qwen_recipe("qwen3_vl"),
    )
    video_resize_rule = qwen_resize.VIDEO_RESIZE_QWEN3
