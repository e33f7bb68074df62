"""LLaVA-1.5 adapter (``LlavaForConditionalGeneration``).

Visual tokens: layout kind ``fixed_grid`` (:mod:`harness.models.layouts.fixed_grid`): each
``<image>`` expands to one token per vision-tower patch, row-major, in feature order. The image
processor resizes the short side to ``size["shortest_edge"]`` (336) and center-crops
``crop_size`` (336²), so parts of a non-square image are cut off and have no token: a box
partly outside the crop maps only to the tokens that exist, a box entirely outside raises
:class:`~harness.api.payloads.EvidenceError`. With ``do_pad`` the image is first padded to a
square (nothing is cut). CLIP's CLS token is dropped (``default`` strategy): 24×24 = 576
tokens (8×8 in the tiny test model). LLaVA-1.5 has no video input: video frames are shown as
consecutive images.

Answer coordinates: LLaVA models write boxes as ``[x1, y1, x2, y2]`` in [0, 1] relative to
the image (``normalized``); that is how LLaVA-1.5 was trained on RefCOCO-style data.
"""

from __future__ import annotations

from functools import partial

from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.layouts.fixed_grid import FixedGrid, crop_view
from harness.models.layouts.tokens import FRAME
from harness.models.offline.llava import llava_config, llava_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["FRAME", "LLAVA_BOXES", "LlavaAdapter", "crop_view"]

LLAVA_BOXES = (
    "[x1, y1, x2, y2] as fractions of the image in [0, 1] (two decimals): the RefCOCO "
    "conversations of LLaVA-1.5's instruction data (haotian-liu/LLaVA, "
    "llava_v1_5_mix665k.json), the form lmms-eval's RefCOCO task parses"
)


@model_family("llava")
class LlavaAdapter(HFAdapter):
    """LLaVA-1.5 (``llava-hf/llava-1.5-*-hf``); boxes normalised to [0, 1]."""

    unit = FamilyUnit(
        model_class="LlavaForConditionalGeneration",
        layout=FixedGrid(),
        box_convention="normalized",
        box_source=LLAVA_BOXES,
        default_pretrained="llava-hf/llava-1.5-7b-hf",
        video_as="images",
        chat="'USER: <image>\\n… ASSISTANT:' (Vicuna); video frames shown as images",
        sap_priors=("complexity", "vision"),
        tiny=TinyRecipe(config=partial(llava_config, "llava"), processor=llava_processor),
    )
