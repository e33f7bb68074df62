"""LLaVA-NeXT adapter (``LlavaNextForConditionalGeneration``, LLaVA-1.6).

Visual tokens: layout kind ``anyres`` (:mod:`harness.models.layouts.anyres`), in feature order:

1. the base view: the whole image squashed to the crop size (336²) → 24×24 tokens;
2. the "anyres" view: the image resized into the best grid pinpoint (aspect kept, transformers'
   ``select_best_resolution``), padded centred, cut into 336² crops; the crops' feature maps are
   stitched into one grid, the rows (or columns) that only saw padding are dropped
   (``unpad_image``), and every remaining row ends with a newline token (no footprint).

Video frames are shown as consecutive images (LLaVA-NeXT has no video input; LLaVA-NeXT-Video
is another class). Boxes are written normalised to [0, 1] (``normalized``).
"""

from __future__ import annotations

from functools import partial

from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.layouts.anyres import Anyres, anyres_rects, patch_output_size
from harness.models.llava import LLAVA_BOXES
from harness.models.offline.llava import llava_config, llava_next_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["LlavaNextAdapter", "anyres_rects", "patch_output_size"]


@model_family("llava_next")
class LlavaNextAdapter(HFAdapter):
    """LLaVA-NeXT (``llava-hf/llava-v1.6-*-hf``); boxes normalised to [0, 1]."""

    unit = FamilyUnit(
        model_class="LlavaNextForConditionalGeneration",
        layout=Anyres(multi_image="anyres", video="frames"),
        box_convention="normalized",
        box_source=LLAVA_BOXES + "; LLaVA-VL/LLaVA-NeXT @ 6802a4a README names lmms-eval",
        default_pretrained="llava-hf/llava-v1.6-mistral-7b-hf",
        video_as="images",
        chat="Mistral '[INST] <image>\\n… [/INST]'; video frames shown as images",
        tiny=TinyRecipe(config=partial(llava_config, "llava_next"), processor=llava_next_processor),
    )
