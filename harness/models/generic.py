"""The generic family ``hf``: a transformers VLM that has no family module.

``--model hf --model-args pretrained=DIR`` loads the checkpoint with
``AutoModelForImageTextToText`` and ``AutoProcessor``, puts its text decoder on headscope's
dispatch and renders requests with the checkpoint's own chat template (images first, then the
text; video frames shown as images). Every intervention and every task without gold
evidence runs: they need the decoder's heads and the positions of the visual tokens (the
processor's ``image_token_id``, else the config's ``image_token_id`` / ``image_token_index``),
never a footprint.

Grounded ranking (``rank``, maps, ``diagnose``: evidence → tokens) needs each visual token's
footprint, i.e. a layout kind. It is detected from the processor's outputs where they name
it — ``image_grid_thw`` → :class:`~harness.models.layouts.grid_thw.GridTHW` (Qwen2/2.5/3-VL,
GLM-4.1V, PaddleOCR-VL, ...) — on the first request with an image; anything else is one
:class:`~harness.api.errors.UsageError` naming what to declare: a family module in a plugin
(``--include-path``) whose ``FamilyUnit`` gives the layout kind (docs/adding_a_family.md).
Boxes are read as ``[0, 1]`` fractions (no convention is known for an unknown family).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.api.errors import UsageError
from harness.api.registry import model_family
from harness.models.hf import HFAdapter, instruction_positions
from harness.models.loading import is_tiny

if TYPE_CHECKING:
    from harness.api.model import TokenSpans
    from harness.api.payloads import Evidence, Request
    from harness.api.specs import ModelSpec
    from harness.models.layouts.base import LayoutKind
    from harness.models.layouts.tokens import Footprints
    from harness.models.unit import FamilyUnit

__all__ = ["GenericAdapter", "detect_layout"]

DETECTABLE = "image_grid_thw / video_grid_thw → grid_thw"
"""The processor outputs the generic family reads a layout kind from."""


def detect_layout(inputs: Any) -> LayoutKind | None:
    """The layout kind the processor's outputs name (None: they name none)."""
    from harness.models.layouts.grid_thw import GridTHW

    if "image_grid_thw" in inputs:
        return GridTHW()
    return None


@model_family("hf")
class GenericAdapter(HFAdapter):
    """Any ``AutoModelForImageTextToText`` checkpoint (``pretrained=DIR`` required)."""

    unit = None  # declared: none; a detected layout kind sets one per instance
    model_class = "AutoModelForImageTextToText"
    video_as = "images"
    _probed = False

    def __init__(self, spec: ModelSpec) -> None:
        if is_tiny(spec):
            raise UsageError(
                "model 'hf' has no tiny recipe: tiny=true builds a family's random instance",
                hint="pass pretrained=DIR, or a family with a recipe (headscope list models)",
            )
        super().__init__(spec)

    # -- the layout kind, detected --------------------------------------------------------
    def detected_unit(self, request: Request) -> FamilyUnit | None:
        """The unit of the layout kind read from ``request``'s processor outputs, if any."""
        if self.unit is None and not self._probed and request.visual_inputs():
            self._probed = True
            kind = detect_layout(self.encode([request]))
            if kind is not None:
                from harness.models.unit import FamilyUnit

                self.unit = FamilyUnit(
                    model_class=type(self.model).__name__,
                    layout=kind,
                    box_convention="normalized",
                    box_source="generic family 'hf': no convention declared ([0, 1] fractions)",
                    default_pretrained=str(self.spec.pretrained or ""),
                    capabilities=frozenset({"image", "pages"}),
                    video_as="images",
                )
        return self.unit

    def no_layout(self) -> UsageError:
        """The usage error of grounded work without a layout kind."""
        cls = type(self.model).__name__
        return UsageError(
            f"model 'hf' ({cls}): evidence maps need the layout of its visual tokens, and its "
            f"processor's outputs name none headscope detects ({DETECTABLE})",
            hint=(
                f"declare a family for {cls} in a plugin (--include-path DIR): an HFAdapter "
                "subclass with @model_family('name') and unit = FamilyUnit(model_class="
                f"'{cls}', layout=FixedGrid(...) / Tiles(...) / ..., ...), "
                "docs/adding_a_family.md"
            ),
        )

    # -- evidence maps ----------------------------------------------------------------------
    def visual_token_ids(self) -> tuple[int, ...]:
        """The processor's ``image_token_id``, else the config's image token id."""
        value = getattr(self.processor, "image_token_id", None)
        for attr in ("image_token_id", "image_token_index"):
            value = getattr(self.model.config, attr, None) if value is None else value
        if not isinstance(value, int):
            raise UsageError(f"model 'hf' ({type(self.model).__name__}): no image token id found")
        return (value,)

    def token_footprints(self, request: Request) -> Footprints:
        """The detected layout kind's footprints (a usage error without one)."""
        if self.detected_unit(request) is None:
            raise self.no_layout()
        return super().token_footprints(request)

    def token_spans(self, request: Request, evidence: Evidence | None = None) -> TokenSpans:
        """Instruction and visual positions always; Ω(V*) only with a layout kind."""
        if self.detected_unit(request) is not None:
            return super().token_spans(request, evidence)
        if evidence is not None:
            raise self.no_layout()
        from harness.api.model import TokenSpans

        ids = self.encode([request])["input_ids"][0].tolist()
        wanted = set(self.visual_token_ids())
        visual = tuple(i for i, t in enumerate(ids) if t in wanted)
        instruction = instruction_positions(self.tokenizer, self.render(request), request.text, ids)
        return TokenSpans(evidence=(), instruction=instruction, visual=visual, seq_len=len(ids))

    def settings(self) -> dict[str, Any]:
        """Base settings with the loaded class (not the Auto class)."""
        out = super().settings()
        if self.model is not None:
            out["model_class"] = type(self.model).__name__
        return out
