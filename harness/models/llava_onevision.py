"""LLaVA-OneVision adapter (``LlavaOnevisionForConditionalGeneration``).

Visual tokens, in feature order:

- one image in the request: as LLaVA-NeXT (base view, then the unpadded anyres grid with a
  newline per row) on a SigLIP tower without CLS (384/14 → 27×27 per crop: 27 patches of
  14 px cover pixels 0–377 of a crop, the last 6 px are never seen); when the unpadded
  grid exceeds ``anyres_max_9`` (nine crops' worth of tokens, by a factor > 1.1) it is shrunk
  bilinearly, so each token covers the cells it interpolates;
- several images: each padded to a centred square, resized to one crop, 27×27 tokens + one
  newline;
- a video: every frame squashed to one crop, its 27×27 features pooled bilinearly to 14×14
  (196 tokens per frame), then a single newline token for the whole video.

Video goes through the processor's own video processor, which needs torchvision (without it
transformers cannot build ``LlavaOnevisionProcessor`` at all; the CPU tests use a PIL stand-in
from :mod:`harness.models.offline.video`). Frames are pre-sampled: never resampled here.

Boxes are written normalised to [0, 1] (``normalized``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from harness.api.payloads import Request
from harness.api.registry import model_family
from harness.models._layout import (
    FRAME,
    NO_SOURCE,
    Layout,
    View,
    bilinear_sources,
    patch_spans,
)
from harness.models.llava import crop_view
from harness.models.llava_next import LlavaNextAdapter

__all__ = ["LlavaOnevisionAdapter"]


@model_family("llava_onevision")
class LlavaOnevisionAdapter(LlavaNextAdapter):
    """LLaVA-OneVision (``llava-hf/llava-onevision-*-hf``); boxes normalised to [0, 1]."""

    default_pretrained = "llava-hf/llava-onevision-qwen2-7b-ov-hf"
    model_class: ClassVar[str] = "LlavaOnevisionForConditionalGeneration"
    video_as = "video"

    def visual_token_ids(self) -> tuple[int, ...]:
        """Image and video placeholder ids."""
        return (int(self.processor.image_token_id), int(self.processor.video_token_id))

    def max_patches(self) -> int | None:
        """N of the model's ``vision_aspect_ratio`` ``anyres_max_N`` (None otherwise)."""
        ratio = str(getattr(self.model.config, "vision_aspect_ratio", "") or "")
        return int(ratio.removeprefix("anyres_max_")) if ratio.startswith("anyres_max_") else None

    # -- geometry --------------------------------------------------------------------------
    def add_image(self, layout: Layout, source: int, size: tuple[int, int], shown: int) -> None:
        """Anyres for a lone image; pad-to-square base view + newline for several images."""
        if shown == 1:
            super().add_image(layout, source, size, shown)
            return
        tile, patch = self.tile_patch()
        # _preprocess without patching: pad_to_square (mean colour), then resize to the crop
        view, _, _ = crop_view(
            size[0], size[1], size={"height": tile, "width": tile}, crop=None, pad_to_square=True
        )
        spans = patch_spans(1, tile, patch)
        layout.add(source, view.grid(spans, spans), size)
        layout.add_blank(source)

    def video_tile(self) -> int:
        """Side of the square every frame is resized to (the video processor's ``size``)."""
        size = dict(self.processor.video_processor.size)
        if size.get("height") != size.get("width"):
            raise NotImplementedError(f"video size {size} is not square")
        return int(size["height"])

    def add_video(self, layout: Layout, frames: tuple[Any, ...], shown: int) -> None:
        """Per frame the pooled grid (tokens cover the cells they interpolate), then a newline."""
        import numpy as np

        tile, patch = self.video_tile(), self.tile_patch()[1]
        spans = patch_spans(1, tile, patch)
        src = bilinear_sources(len(spans), math.ceil(len(spans) / 2))  # apply_pooling
        pooled = np.stack([spans[src[:, 0], 0], spans[src[:, 1], 1]], 1)
        for position, frame in enumerate(frames):
            view = View.squash(frame.size[0], frame.size[1], tile, tile)
            layout.add(FRAME + position, view.grid(pooled, pooled), frame.size)
        layout.add_blank(NO_SOURCE)

    # -- inputs ------------------------------------------------------------------------------
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
