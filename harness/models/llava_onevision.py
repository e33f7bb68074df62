"""LLaVA-OneVision adapter (``LlavaOnevisionForConditionalGeneration``).

Visual tokens: layout kind ``anyres`` (:mod:`harness.models.layouts.anyres`), in feature order:

- one image in the request: as LLaVA-NeXT (base view, then the unpadded anyres grid with a
  newline per row) on a SigLIP tower without CLS (384/14 → 27×27 per crop: 27 patches of
  14 px cover pixels 0–377 of a crop, the last 6 px are never seen); when the unpadded
  grid exceeds ``anyres_max_9`` (nine crops' worth of tokens, by a factor > 1.1) it is shrunk
  bilinearly, so each token covers the cells it interpolates;
- several images: each padded to a centred square, resized to one crop, 27×27 tokens + one
  newline (``multi_image="square"``);
- a video: every frame squashed to one crop, its 27×27 features pooled bilinearly to 14×14
  (196 tokens per frame), then a single newline token for the whole video (``video="pooled"``).

Video goes through the processor's own video processor, which needs torchvision (without it
transformers cannot build ``LlavaOnevisionProcessor`` at all; the CPU tests use a PIL stand-in
from :mod:`harness.models.offline.video`). Frames are pre-sampled: never resampled here.

Boxes are written normalised to [0, 1] (``normalized``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from harness.api.payloads import Request
from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.layouts.anyres import Anyres
from harness.models.llava import LLAVA_BOXES
from harness.models.offline.llava import llava_config, llava_onevision_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["LlavaOnevisionAdapter"]


@model_family("llava_onevision")
class LlavaOnevisionAdapter(HFAdapter):
    """LLaVA-OneVision (``llava-hf/llava-onevision-*-hf``); boxes normalised to [0, 1]."""

    unit = FamilyUnit(
        model_class="LlavaOnevisionForConditionalGeneration",
        layout=Anyres(multi_image="square", video="pooled", max_from_config=True),
        box_convention="normalized",
        box_source=LLAVA_BOXES + "; LLaVA-VL/LLaVA-NeXT @ 6802a4a README names lmms-eval",
        default_pretrained="llava-hf/llava-onevision-qwen2-7b-ov-hf",
        visual_tokens=("image_token_id", "video_token_id"),
        chat="ChatML; images passed nested per request (a lone image gets anyres)",
        tiny=TinyRecipe(
            config=partial(llava_config, "llava_onevision"), processor=llava_onevision_processor
        ),
    )

    def encode(self, requests: list[Request]) -> Any:
        """Processor output; images nested per request (a lone image gets anyres)."""
        texts = [self.render(r) for r in requests]
        kwargs: dict[str, Any] = {}
        if any(r.visual_inputs() for r in requests):
            kwargs["images"] = [list(r.visual_inputs()) for r in requests]
        clips = [list(r.video.frames) for r in requests if r.video is not None]
        if clips:
            kwargs["videos"] = clips
        return self.processor(text=texts, padding=True, return_tensors="pt", **kwargs)
