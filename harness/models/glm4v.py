"""GLM-4.1V adapter (``Glm4vForConditionalGeneration``, zai-org/GLM-4.1V-9B-Thinking).

Visual tokens: layout kind ``grid_thw`` (:mod:`harness.models.layouts.grid_thw`), as Qwen2-VL:
each image is resized (aspect kept) to multiples of 28 px (patch 14 · merge 2) within the
image processor's pixel budget, and each merged ``<|image|>`` token covers one 28-px square,
row-major, between ``<|begin_of_image|>`` / ``<|end_of_image|>``; grids are read from the
processor's ``image_grid_thw``. Images and pages only: GLM-4.1V's video processor needs
torchvision (not installable here), so the unit declares no ``video`` capability.

Boxes: ``[x1, y1, x2, y2]`` with each value normalised by the image width (x) or height (y)
and scaled by 1000, between ``<|begin_of_box|>`` / ``<|end_of_box|>`` (``normalized_1000``).
"""

from __future__ import annotations

from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.layouts.grid_thw import GridTHW
from harness.models.offline.glm4v import glm4v_config, glm4v_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["Glm4vAdapter"]


@model_family("glm4v")
class Glm4vAdapter(HFAdapter):
    """GLM-4.1V (``zai-org/GLM-4.1V-9B-Thinking``); boxes in [0, 1000) relative units."""

    unit = FamilyUnit(
        model_class="Glm4vForConditionalGeneration",
        layout=GridTHW(),
        box_convention="normalized_1000",
        box_source=(
            "[x1, y1, x2, y2], each value normalised by the image width (x) or height (y) and "
            "scaled by 1000, inside <|begin_of_box|>…<|end_of_box|>: zai-org/GLM-V @ 8fc9756 "
            "README.md, 'Grounding'"
        ),
        default_pretrained="zai-org/GLM-4.1V-9B-Thinking",
        capabilities=frozenset({"image", "pages", "boxes"}),
        chat=(
            "[gMASK]<sop><|user|> turn, each image <|begin_of_image|><|image|><|end_of_image|> "
            "before the text, <|assistant|>; no video (its video processor needs torchvision)"
        ),
        sap_priors=("complexity",),
        tiny=TinyRecipe(config=glm4v_config, processor=glm4v_processor),
    )
