"""InternVL adapter (``InternVLForConditionalGeneration``, InternVL2.5/3 ``-hf`` checkpoints).

Visual tokens: layout kind ``tiles`` (:mod:`harness.models.layouts.tiles`): each
``<IMG_CONTEXT>`` placeholder expands to ``<img>`` + 256 context tokens per tile + ``</img>``.
The image is squashed onto the ``cols``×``rows`` grid of 448² tiles (at most ``max_patches`` =
12) whose aspect ratio is closest to the image's (transformers' ``get_optimal_tiled_canvas``);
tiles are row-major, each a 16×16 grid of tokens (pixel shuffle merges 2×2 patches of 14 px:
28-px cells), and when there is more than one tile a thumbnail (the whole image squashed to one
tile) comes last. Only the context tokens count as visual tokens.

Video: every frame is one squashed tile, written ``Frame1: <img>…</img>`` lines by the
processor's video path, which needs torchvision (``InternVLVideoProcessor``; the CPU tests use
a PIL stand-in). Boxes are written as integers in [0, 1000), read as [0, 1] fractions when
the four numbers sum below 4 (``normalized_1000_auto``, the rule of InternVL's own
``evaluate_grounding.py``).
"""

from __future__ import annotations

from typing import Any

from harness.api.payloads import Request
from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.layouts.tiles import Tiles, tile_rects
from harness.models.offline.internvl import internvl_config, internvl_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["InternVLAdapter", "tile_rects"]


@model_family("internvl")
class InternVLAdapter(HFAdapter):
    """InternVL (``OpenGVLab/InternVL3-*-hf``); boxes as integers in [0, 1000).

    InternVL's own RefCOCO evaluator (OpenGVLab/InternVL ``internvl_chat/eval/refcoco/
    evaluate_grounding.py::evaluate_chat_model``) divides the four numbers by 1000 when they
    sum to 4 or more, else reads them as [0, 1] fractions; :meth:`parse_box` does the same.
    """

    unit = FamilyUnit(
        model_class="InternVLForConditionalGeneration",
        layout=Tiles(canvas="got_ocr2", downsample="downsample_ratio", crop_to_patches=True),
        # A named convention, so rescore reads boxes as the run did.
        box_convention="normalized_1000_auto",
        box_source=(
            "[0, 1000) integers, or [0, 1] fractions when the four sum below 4: OpenGVLab/"
            "InternVL @ 2410d1d internvl_chat/eval/refcoco/evaluate_grounding.py::"
            "evaluate_chat_model"
        ),
        default_pretrained="OpenGVLab/InternVL3-8B-hf",
        chat="ChatML; <img><IMG_CONTEXT>…</img> per tile run; video as 'FrameN: <img>…</img>'",
        tiny=TinyRecipe(config=internvl_config, processor=internvl_processor),
    )

    @property
    def crop_to_patches(self) -> bool:
        """Whether still images are tiled (the layout kind's parameter)."""
        return bool(self.unit.layout.crop_to_patches)

    def settings(self) -> dict[str, Any]:
        """Base settings plus tiling and the video preprocessing path."""
        out = super().settings()
        proc = self.processor.image_processor
        out.update(
            crop_to_patches=self.crop_to_patches,
            max_tiles=int(proc.max_patches),
        )
        return out

    def processor_kwargs(self, requests: list[Request]) -> dict[str, Any]:
        """Tile still images (InternVL's default), explicitly so the layout agrees."""
        return {"crop_to_patches": self.crop_to_patches}
