"""PaliGemma adapter (``PaliGemmaForConditionalGeneration``, google/paligemma-3b-mix-224).

Visual tokens: layout kind ``fixed_grid`` (:mod:`harness.models.layouts.fixed_grid`): the
SigLIP image processor squashes each image to 224² (no crop, no pad), 14-px patches → 16×16 =
256 ``<image>`` tokens, row-major, first in the sequence.

Prompt: PaliGemma has no chat template. Its processor writes ``<image>``×256 ``<bos>``
prompt newline (google-research/big_vision's PaliGemma README, "prefix" / "suffix"); the adapter
gives it ``<image>``… + the instruction and :meth:`PaliGemmaAdapter.render` returns the full
prefix. The prefix is attended both ways (prefix-LM, ``token_type_ids`` 0), the mask the model
builds and headscope's dispatch honours (docs/attention_semantics.md).

Boxes: PaliGemma writes a detection as four ``<locNNNN>`` tokens, y1 x1 y2 x2, each index / 1023
a fraction of the image height or width (``paligemma_loc``, :func:`harness.api.model.loc_box`:
the rule of big_vision's own PaliGemma evaluator). Its detection prompt is ``detect {things}``
(big_vision configs/proj/paligemma/README.md); headscope's grounded tasks ask in words, so a
checkpoint may answer in another form. Video frames are shown as consecutive images (as for
LLaVA-1.5; PaliGemma has no video path).
"""

from __future__ import annotations

from typing import Any

from harness.api.payloads import Request
from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.layouts.fixed_grid import FixedGrid
from harness.models.offline.gemma import paligemma_config, paligemma_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["PaliGemmaAdapter"]


def _shown(request: Request) -> int:
    """Images the processor is given: stills and pages, then the video's frames."""
    frames = len(request.video.frames) if request.video is not None else 0
    return len(request.visual_inputs()) + frames


@model_family("paligemma")
class PaliGemmaAdapter(HFAdapter):
    """PaliGemma (``google/paligemma-3b-mix-224``); prefix-LM prompt, <loc> boxes."""

    nest_images = True
    unit = FamilyUnit(
        model_class="PaliGemmaForConditionalGeneration",
        layout=FixedGrid(),
        box_convention="paligemma_loc",
        box_source=(
            "four <locNNNN> tokens y1 x1 y2 x2, index / 1023 of the image height / width, valid "
            "when in [0, 1023] with y2 > y1 and x2 > x1: google-research/big_vision @ 0127fb6 "
            "big_vision/evaluators/proj/paligemma/transfers/segmentation.py::Evaluator.run"
        ),
        default_pretrained="google/paligemma-3b-mix-224",
        capabilities=frozenset({"image", "video", "pages", "boxes"}),
        video_as="images",
        chat=(
            "no chat template: '<image>'×n '<bos>' prompt '\\n' (the processor's), prefix-LM; "
            "video frames shown as images"
        ),
        sap_priors=("complexity",),
        tiny=TinyRecipe(config=paligemma_config, processor=paligemma_processor),
    )

    def processor_text(self, request: Request) -> str:
        """``<image>`` per image, then the instruction (the processor adds ``<bos>``, newline)."""
        return self.processor.image_token * _shown(request) + request.text

    def encode(self, requests: list[Request]) -> Any:
        """Processor output without the training ``labels`` PaliGemma's processor adds."""
        inputs = super().encode(requests)
        inputs.pop("labels", None)
        return inputs

    def render(self, request: Request) -> str:
        """The prompt the model is given: images, ``<bos>``, the instruction, a newline."""
        text = self.processor_text(request)
        cut = len(self.processor.image_token) * _shown(request)
        return text[:cut] + self.tokenizer.bos_token + text[cut:] + "\n"
