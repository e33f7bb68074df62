"""Gemma 3 adapter (``Gemma3ForConditionalGeneration``, google/gemma-3-*-it).

Visual tokens: layout kind ``fixed_grid`` (:mod:`harness.models.layouts.fixed_grid`) with
``pool="mm_tokens_per_image"``: the image processor squashes each image to 896² (no crop, no
pad; pan-and-scan off, the released default), SigLIP cuts it into 64×64 patches of 14 px and
the projector average-pools 4×4 patches into one token: 16×16 = 256 ``<image_soft_token>``
tokens, row-major, between ``<start_of_image>`` and ``<end_of_image>``. The processor's own
``image_token_id`` is the ``<start_of_image>`` placeholder it expands, so the visual tokens
are read from ``tokenizer.image_token_id``.

Attention: the image block is bidirectional (the mask Gemma 3 builds from ``token_type_ids``,
which the processor returns) and the decoder mixes sliding (window 1024) and global layers
5:1; both are handled by headscope's dispatch (docs/attention_semantics.md).

Boxes: Gemma 3 releases no grounding output format (google/gemma-3-4b-it model card; the
Gemma 3 Technical Report names no box syntax or evaluator), so the unit does not declare the
``boxes`` capability; replies are read as ``[x1, y1, x2, y2]`` fractions (``normalized``),
what the grounded tasks' prompts ask for. Video frames are shown as consecutive images (the
processor has no video path).
"""

from __future__ import annotations

from harness.api.registry import model_family
from harness.models.hf import HFAdapter
from harness.models.layouts.fixed_grid import FixedGrid
from harness.models.offline.gemma import gemma3_config, gemma3_finish, gemma3_processor
from harness.models.unit import FamilyUnit, TinyRecipe

__all__ = ["Gemma3Adapter"]


@model_family("gemma3")
class Gemma3Adapter(HFAdapter):
    """Gemma 3 (``google/gemma-3-4b-it``); no released box format (read as [0, 1] fractions)."""

    nest_images = True
    unit = FamilyUnit(
        model_class="Gemma3ForConditionalGeneration",
        layout=FixedGrid(pool="mm_tokens_per_image"),
        box_convention="normalized",
        box_source=(
            "none released: the google/gemma-3-4b-it model card and the Gemma 3 Technical "
            "Report define no box syntax or grounding evaluator, so no 'boxes' capability; "
            "replies are read as the [x1, y1, x2, y2] fractions the grounded prompts ask for"
        ),
        default_pretrained="google/gemma-3-4b-it",
        capabilities=frozenset({"image", "video", "pages"}),
        video_as="images",
        visual_tokens=("tokenizer.image_token_id",),
        chat=(
            "<bos><start_of_turn>user / model turns; each image a <start_of_image> the "
            "processor expands to 256 soft tokens; a system message joins the first user "
            "turn; video frames shown as images"
        ),
        sap_priors=("complexity",),
        tiny=TinyRecipe(config=gemma3_config, processor=gemma3_processor, finish=gemma3_finish),
    )
