"""Idefics3 adapter (``Idefics3ForConditionalGeneration``, HuggingFaceM4/Idefics3-8B-Llama3).

Visual tokens: layout kind ``tiles`` with the ``idefics3`` canvas
(:mod:`harness.models.layouts.tiles`). ``Idefics3ImageProcessor`` resizes twice — the longer
side to ``size["longest_edge"]`` (1456 = 4·364, aspect kept, the other side made even), then
each side up to a multiple of the 364-px tile — cuts the tiles row-major and appends the
global image (that twice-resized image squashed to one tile). SigLIP cuts each tile into
26×26 patches of 14 px, the connector pixel-shuffles 2×2 of them into one token: 13×13 = 169
``<image>`` tokens a tile, each run opened by ``<fake_token_around_image>`` and a
``<row_i_col_j>`` marker (``<global-img>`` for the global image); markers are text, only
``<image>`` carries features. Footprints are carried back through both resizes
(:class:`~harness.models.layouts.geometry.Chain`).

Boxes: Idefics3 releases no grounding output format (the HuggingFaceM4/Idefics3-8B-Llama3
model card and the Idefics3 report, arXiv 2408.12637, define no box syntax or grounding
evaluator), so the unit declares no ``boxes`` capability; replies are read as the
``[x1, y1, x2, y2]`` fractions the grounded prompts ask for. The processor has no video
path: video frames are shown as consecutive images.
"""

from __future__ import annotations

from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.layouts.tiles import Tiles
from harness.models.offline.idefics3 import idefics3_config, idefics3_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["Idefics3Adapter", "NO_BOX_FORMAT"]

NO_BOX_FORMAT = (
    "none released: the model card and report define no box syntax or grounding evaluator, "
    "so no 'boxes' capability; replies are read as the [x1, y1, x2, y2] fractions the "
    "grounded prompts ask for"
)


@model_family("idefics3")
class Idefics3Adapter(HFAdapter):
    """Idefics3 (``HuggingFaceM4/Idefics3-8B-Llama3``); no released box format."""

    unit = FamilyUnit(
        model_class="Idefics3ForConditionalGeneration",
        layout=Tiles(canvas="idefics3", downsample="scale_factor"),
        box_convention="normalized",
        box_source="HuggingFaceM4/Idefics3-8B-Llama3 model card, arXiv 2408.12637: "
        + NO_BOX_FORMAT,
        default_pretrained="HuggingFaceM4/Idefics3-8B-Llama3",
        capabilities=frozenset({"image", "video", "pages"}),
        video_as="images",
        chat=(
            "<|begin_of_text|>User:<image>…<end_of_utterance>\\nAssistant:; each <image> "
            "expands to <fake_token_around_image><row_i_col_j> + 169 <image> per tile, the "
            "global image last (<global-img>); video frames shown as images"
        ),
        tiny=TinyRecipe(config=idefics3_config, processor=idefics3_processor),
    )
