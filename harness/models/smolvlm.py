"""SmolVLM adapter (``SmolVLMForConditionalGeneration``, HuggingFaceTB/SmolVLM2-*-Instruct).

SmolVLM is Idefics3 with a SmolLM2 decoder (transformers' ``docs/source/en/model_doc/
smolvlm.md``): the same two resizes (longest edge 2048 = 4·512, then each side up to a
multiple of the 512-px tile), row-major tiles and a global image last, the same markers.
SigLIP /16 gives 32×32 patches a tile, pixel-shuffled by ``scale_factor`` 4: 8×8 = 64
``<image>`` tokens a tile (layout kind ``tiles``, canvas ``idefics3``; footprints carried
back through both resizes).

Its processor imports ``num2words`` (for video prompts; a dependency) and wants a video
processor, which needs torchvision here: headscope shows video frames as consecutive images
(``video_as="images"``). Boxes: no released grounding format (see
:mod:`harness.models.idefics3`), so no ``boxes`` capability.
"""

from __future__ import annotations

from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.idefics3 import NO_BOX_FORMAT
from harness.models.layouts.tiles import Tiles
from harness.models.offline.idefics3 import smolvlm_config, smolvlm_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["SmolVLMAdapter"]


@model_family("smolvlm")
class SmolVLMAdapter(HFAdapter):
    """SmolVLM2 (``HuggingFaceTB/SmolVLM2-256M-Video-Instruct``); no released box format."""

    nest_images = True  # SmolVLMProcessor counts <image> tokens against images per sample
    unit = FamilyUnit(
        model_class="SmolVLMForConditionalGeneration",
        layout=Tiles(canvas="idefics3", downsample="scale_factor"),
        box_convention="normalized",
        box_source="HuggingFaceTB/SmolVLM2-256M-Video-Instruct model card, arXiv 2504.05299: "
        + NO_BOX_FORMAT,
        default_pretrained="HuggingFaceTB/SmolVLM2-256M-Video-Instruct",
        capabilities=frozenset({"image", "video", "pages"}),
        video_as="images",
        chat=(
            "<|im_start|>User:<image>…<end_of_utterance>\\nAssistant:; each <image> expands "
            "to <fake_token_around_image><row_i_col_j> + 64 <image> per tile, the global image "
            "last (<global-img>); video frames shown as images"
        ),
        tiny=TinyRecipe(config=smolvlm_config, processor=smolvlm_processor),
    )
