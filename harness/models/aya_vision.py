"""AyaVision adapter (``AyaVisionForConditionalGeneration``, CohereForAI/aya-vision-8b).

Visual tokens: layout kind ``tiles`` with the ``got_ocr2`` canvas
(:mod:`harness.models.layouts.tiles`), as InternVL: ``GotOcr2ImageProcessor`` squashes the
image onto the best ``cols × rows`` grid of 364² tiles (at most 12, ``crop_to_patches``) and
appends the whole image squashed to one tile (more than one tile). SigLIP cuts a tile into
26×26 patches of 14 px; the projector pixel-shuffles 2×2 of them (``downsample_factor``):
13×13 = 169 ``<|IMG_PATCH|>`` a tile. The processor writes ``<|START_OF_IMG|>``, then
``TILE_k`` before each tile's run and ``TILE_GLOBAL`` before the global one, then
``<|END_OF_IMG|>``: markers are text, only ``<|IMG_PATCH|>`` carries features.

Attention: a Cohere2 decoder mixing sliding-window (4096) and full layers, handled by the
dispatch (docs/attention_semantics.md); the model passes an ``image_sizes`` kwarg through to
the attention function.

Boxes: Aya Vision releases no grounding output format (the CohereForAI/aya-vision-8b model
card and the Aya Vision report, arXiv 2505.08751, define no box syntax or grounding
evaluator), so no ``boxes`` capability; replies are read as the ``[x1, y1, x2, y2]``
fractions the grounded prompts ask for. No video path: frames are shown as images.
"""

from __future__ import annotations

from typing import Any

from harness.api.payloads import Request
from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.idefics3 import NO_BOX_FORMAT
from harness.models.layouts.tiles import Tiles
from harness.models.offline.aya_vision import aya_vision_config, aya_vision_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["AyaVisionAdapter"]


@model_family("aya_vision")
class AyaVisionAdapter(HFAdapter):
    """Aya Vision (``CohereForAI/aya-vision-8b``); no released box format."""

    unit = FamilyUnit(
        model_class="AyaVisionForConditionalGeneration",
        layout=Tiles(canvas="got_ocr2", downsample="downsample_factor", crop_to_patches=True),
        box_convention="normalized",
        box_source="CohereForAI/aya-vision-8b model card, arXiv 2505.08751: " + NO_BOX_FORMAT,
        default_pretrained="CohereForAI/aya-vision-8b",
        capabilities=frozenset({"image", "video", "pages"}),
        video_as="images",
        chat=(
            "Command-R turns (<|START_OF_TURN_TOKEN|><|USER_TOKEN|>…<|END_OF_TURN_TOKEN|>); "
            "each <image> expands to <|START_OF_IMG|>, TILE_k + 169 <|IMG_PATCH|> per tile, "
            "TILE_GLOBAL + 169, <|END_OF_IMG|>; video frames shown as images"
        ),
        tiny=TinyRecipe(config=aya_vision_config, processor=aya_vision_processor),
    )

    def processor_kwargs(self, requests: list[Request]) -> dict[str, Any]:
        """Tile still images explicitly, so the layout kind and the processor agree."""
        return {"crop_to_patches": bool(self.unit.layout.crop_to_patches)}
