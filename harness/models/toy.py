"""The bundled ``toy`` model: a small LLaVA trained on :mod:`harness.toy.scenes` mini tasks.

It is a ``LlavaForConditionalGeneration`` with its processor, shipped in
``harness/assets/toy/`` (the default of ``--model toy``), so the whole harness runs offline
on a CPU in seconds. Token layout and evidence mapping are LLaVA-1.5's (``fixed_grid``; the
scenes are square, so the center crop keeps everything); video frames are shown as
consecutive images.

Answer coordinates: the toy model writes ``[x1, y1, x2, y2]`` normalised to [0, 1]
(``normalized``); its word-level tokenizer may decode with spaces around the brackets and
commas, which :func:`~harness.api.model.parse_box_text` tolerates.
"""

from __future__ import annotations

from pathlib import Path

from harness.api.registry import model_family
from harness.models.layouts.fixed_grid import FixedGrid
from harness.models.llava import LlavaAdapter
from harness.models.unit import FamilyUnit

__all__ = ["ToyAdapter", "TOY_DIR"]

TOY_DIR = Path(__file__).resolve().parent.parent / "assets" / "toy"
"""Directory of the bundled toy model (config, weights, processor files)."""


@model_family("toy")
class ToyAdapter(LlavaAdapter):
    """The bundled toy LLaVA (``harness/assets/toy``); boxes normalised to [0, 1]."""

    unit = FamilyUnit(
        model_class="LlavaForConditionalGeneration",
        layout=FixedGrid(),
        box_convention="normalized",
        box_source="trained here on harness.toy.scenes answers written as [0, 1] fractions",
        default_pretrained=str(TOY_DIR),
        video_as="images",
        chat="its own word-level template (harness/assets/toy); video frames shown as images",
    )
