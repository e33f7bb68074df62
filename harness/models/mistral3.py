"""Mistral3 adapter (``Mistral3ForConditionalGeneration``, Mistral-Small-3.1 with a Pixtral tower).

Visual tokens: layout kind ``row_break`` (:mod:`harness.models.layouts.row_break`): each image
is scaled down (aspect kept) to fit 1540², its sides rounded up to multiples of 28 px (patch
14 · merge 2) and squashed to that size (the processor's ``image_sizes``); each ``[IMG]`` token
covers one 28-px cell, row-major, with ``[IMG_BREAK]`` after each row and ``[IMG_END]`` last
(markers, not visual tokens). A 640×480 image: 644×504, 23 × 18 = 414 ``[IMG]``. Video frames
are shown as consecutive images.

Boxes: Mistral-Small-3.1 releases no grounding format (mistralai/Mistral-Small-3.1-24B-
Instruct-2503 model card; the Pixtral paper, arXiv 2410.07073, names no box syntax), so the
unit does not declare the ``boxes`` capability; replies are read as ``[x1, y1, x2, y2]``
fractions, what the grounded prompts ask for.
"""

from __future__ import annotations

from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.layouts.row_break import RowBreak
from harness.models.offline.mistral3 import mistral3_config, mistral3_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["Mistral3Adapter"]


@model_family("mistral3")
class Mistral3Adapter(HFAdapter):
    """Mistral3 (``mistralai/Mistral-Small-3.1-24B-Instruct-2503``); no released box format."""

    unit = FamilyUnit(
        model_class="Mistral3ForConditionalGeneration",
        layout=RowBreak(),
        box_convention="normalized",
        box_source=(
            "none released: the mistralai/Mistral-Small-3.1-24B-Instruct-2503 model card and "
            "the Pixtral paper (arXiv 2410.07073) define no box syntax or grounding evaluator, "
            "so no 'boxes' capability; replies are read as [x1, y1, x2, y2] fractions"
        ),
        default_pretrained="mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        capabilities=frozenset({"image", "video", "pages"}),
        video_as="images",
        chat=(
            "<s>[INST] each image as [IMG] (expanded to rows of [IMG] + [IMG_BREAK], "
            "[IMG_END] last), the text, [/INST]; video frames shown as images"
        ),
        sap_priors=("complexity",),
        tiny=TinyRecipe(config=mistral3_config, processor=mistral3_processor),
    )
