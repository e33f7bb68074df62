"""The model adapter interface: one thin adapter per VLM family.

An adapter wraps the Hugging Face model and processor (never reimplements a
forward), turns typed :class:`~harness.api.payloads.Request` objects into model
inputs with the family's chat template, generates text, reports the text
decoder's geometry, maps evidence onto token positions, and owns the family's
coordinate convention for grounding answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from harness.api.errors import UsageError
from harness.api.payloads import Box, Evidence, Generation, Request

if TYPE_CHECKING:
    from harness.api.heads import Geometry
    from harness.api.specs import ModelSpec

__all__ = [
    "ModelAdapter",
    "NoHeadsError",
    "TokenSpans",
    "BoxConvention",
    "box_numbers",
    "loc_box",
    "parse_box_text",
    "load_adapter",
]

BoxConvention = Literal[
    "normalized",
    "normalized_1000",
    "normalized_1000_auto",
    "pixels_resized",
    "pixels",
    "paligemma_loc",
]

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"  # 12, 12.5, .1, 1e2
_SEP = r"\s*,\s*"
# "[x1, y1, x2, y2]" (also "[[...]]") and Qwen2-VL's "(x1,y1),(x2,y2)" (inside
# <|box_start|>…<|box_end|> when special tokens are kept, bare when they are skipped).
_BOX_RE = re.compile(rf"\[\s*({_NUM}){_SEP}({_NUM}){_SEP}({_NUM}){_SEP}({_NUM})\s*\]")
_LOC_RE = re.compile(r"<loc(\d{4})>\s*<loc(\d{4})>\s*<loc(\d{4})>\s*<loc(\d{4})>")
_PAIR_RE = re.compile(
    rf"\(\s*({_NUM}){_SEP}({_NUM})\s*\)\s*,?\s*(?:to\s*)?\(\s*({_NUM}){_SEP}({_NUM})\s*\)"
)


def box_numbers(text: str) -> tuple[float, float, float, float] | None:
    """The four numbers of the first box written in ``text``, in the order written.

    Forms: ``[x1, y1, x2, y2]`` and Qwen2-VL's ``(x1,y1),(x2,y2)`` (with or without
    ``<|box_start|>``/``<|box_end|>``); numbers may be ``.1`` or ``1e2``. None when there is
    no box or a number is not finite.
    """
    found = [m for m in (_BOX_RE.search(text), _PAIR_RE.search(text)) if m]
    if not found:
        return None
    match = min(found, key=lambda m: m.start())
    values = tuple(float(g) for g in match.groups())
    if not all(math.isfinite(v) for v in values):
        return None
    return values  # type: ignore[return-value]


class NoHeadsError(UsageError):
    """A family whose adapter holds no transformers model has no heads to act on."""

    hint = (
        "use --interventions none or the plugin's own interventions, or load a transformers "
        "model in the adapter (docs/adding_a_family.md)"
    )


@dataclass(frozen=True, slots=True)
class TokenSpans:
    """Token positions (indices into the unpadded ``input_ids`` of one request).

    Attributes:
        evidence: Ω(V*): positions of the visual tokens covering the evidence.
        instruction: Positions of the instruction (question) tokens.
        visual: Positions of all visual tokens of the request.
        seq_len: Length of the request's unpadded input.
    """

    evidence: tuple[int, ...]
    instruction: tuple[int, ...]
    visual: tuple[int, ...]
    seq_len: int


def loc_box(text: str, image_size: tuple[int, int]) -> Box | None:
    """PaliGemma's first detection, four ``<locNNNN>`` tokens y1 x1 y2 x2, as a pixel box.

    The rule of big_vision's own PaliGemma evaluator (google-research/big_vision @ 0127fb6,
    ``big_vision/evaluators/proj/paligemma/transfers/segmentation.py``, ``Evaluator.run``): a
    prediction is valid when all four indices lie in [0, 1023] and y2 > y1, x2 > x1; the box is
    the indices divided by 1023 (fractions of the image), times the image height (y) and width
    (x). None when no four consecutive loc tokens are found or the prediction is invalid
    (reversed ends are not swapped: the evaluator counts them invalid).
    """
    match = _LOC_RE.search(text)
    if match is None:
        return None
    y1, x1, y2, x2 = (int(g) for g in match.groups())
    if max(y1, x1, y2, x2) > 1023 or y2 <= y1 or x2 <= x1:
        return None
    width, height = image_size
    return Box(x1 / 1023 * width, y1 / 1023 * height, x2 / 1023 * width, y2 / 1023 * height)


def parse_box_text(
    text: str,
    image_size: tuple[int, int],
    convention: BoxConvention,
    resized_size: tuple[int, int] | None = None,
) -> Box | None:
    """Parse the first box in ``text`` (:func:`box_numbers`) into an original-image pixel box.

    Ends written in reverse (x1 > x2 or y1 > y2) are swapped here; tasks count such replies
    (RefCOCOg's ``swapped_rate``) from :func:`box_numbers`.

    Args:
        text: Model output.
        image_size: (width, height) of the original image.
        convention: How the family writes coordinates: ``normalized`` in [0, 1],
            ``normalized_1000`` integers in [0, 1000] (Qwen2-VL), ``normalized_1000_auto``
            [0, 1000) integers, or [0, 1] fractions when the four numbers sum below 4
            (InternVL, as its ``evaluate_grounding.py`` reads them), ``pixels_resized``
            absolute pixels of the resized image the model saw (Qwen2.5-VL),
            ``pixels`` absolute pixels of the original image.
            ``paligemma_loc`` PaliGemma's four ``<locNNNN>`` tokens (:func:`loc_box`).
        resized_size: (width, height) the model saw, for ``pixels_resized``.

    Returns:
        The box, or None if no well-formed, non-degenerate box is found.
    """
    if convention == "paligemma_loc":
        return loc_box(text, image_size)
    numbers = box_numbers(text)
    if numbers is None:
        return None
    x1, y1, x2, y2 = numbers
    width, height = image_size
    if convention == "normalized_1000_auto":
        convention = "normalized" if x1 + y1 + x2 + y2 < 4 else "normalized_1000"
    if convention == "normalized":
        sx, sy = width, height
    elif convention == "normalized_1000":
        sx, sy = width / 1000.0, height / 1000.0
    elif convention == "pixels_resized":
        if resized_size is None:
            raise ValueError("pixels_resized needs the resized image size")
        sx, sy = width / resized_size[0], height / resized_size[1]
    else:
        sx = sy = 1.0
    x1, x2 = sorted((x1 * sx, x2 * sx))
    y1, y2 = sorted((y1 * sy, y2 * sy))
    if x2 <= x1 or y2 <= y1:
        return None
    return Box(x1, y1, x2, y2)


class ModelAdapter:
    """Base class of model adapters; subclasses register with ``@model_family(name)``.

    Attributes:
        spec: The resolved model spec.
        model: The Hugging Face model (eval mode), text decoder on the headscope dispatch.
        processor: The Hugging Face processor.
        gen_kwargs: Generation settings of the run (``RunSpec.gen_kwargs``: max_new_tokens,
            temperature, do_sample, top_p, num_beams), set by the evaluator; empty means each
            request's own budget and greedy decoding.
        gen_seed: Seed of sampled generation (``RunSpec.seed``), set by the evaluator.
    """

    box_convention: ClassVar[BoxConvention] = "normalized"
    default_pretrained: ClassVar[str | None] = None
    registry_name: ClassVar[str] = ""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.model: Any = None
        self.processor: Any = None
        self.gen_kwargs: dict[str, Any] = {}
        self.gen_seed = 0

    # -- geometry & settings -------------------------------------------------------
    @property
    def geometry(self) -> Geometry:
        """Text-decoder geometry (layers, heads, KV heads, head_dim, hidden)."""
        from harness.api.anatomy import geometry_of

        if getattr(self.model, "config", None) is None:  # e.g. a plugin's rule-based model
            raise NoHeadsError(
                f"model family {self.registry_name!r} has no transformers model (its adapter's "
                f"model is {type(self.model).__name__}), so it has no attention heads for "
                "headscope's interventions to act on"
            )
        return geometry_of(self.model)

    def settings(self) -> dict[str, Any]:
        """Settings that change numbers (dtype, attention, resolution...), for results."""
        return {
            "family": self.registry_name,
            "pretrained": self.spec.pretrained or self.default_pretrained,
            "dtype": self.spec.dtype,
            "attn_implementation": self.spec.attn_implementation,
            "box_convention": self.box_convention,
        }

    # -- inputs ----------------------------------------------------------------------
    def prepare(self, requests: list[Request]) -> dict[str, Any]:
        """Model inputs for a batch (left padded), ready for ``model(**inputs)``."""
        raise NotImplementedError

    def token_spans(self, request: Request, evidence: Evidence | None = None) -> TokenSpans:
        """Map ``evidence`` to Ω(V*) and locate the instruction tokens of ``request``.

        Raises:
            harness.api.payloads.EvidenceError: evidence empty, degenerate or outside the input.
        """
        raise NotImplementedError

    def shared_inputs(self, requests: list[Request]) -> Any:
        """Model inputs of a batch that every cell reuses (sample-major runs), or None.

        The evaluator builds them once per batch and passes them to :meth:`generate` for each
        intervention; None (the default) means :meth:`generate` builds its own.
        """
        return None

    @contextmanager
    def reuse_vision(self, check: bool = False) -> Iterator[Any]:
        """A context for one batch inside which vision features may be reused across cells.

        Yields an object with ``using(vision_use, label)`` (a context per cell), or None when
        the adapter has no such reuse (the default).

        Args:
            check: Recompute every pass that would be reused and fail on a difference.
        """
        yield None

    # -- outputs -----------------------------------------------------------------------
    def generate(self, requests: list[Request], inputs: Any = None) -> list[Generation]:
        """Greedy generation for a batch of requests.

        Args:
            requests: The batch.
            inputs: This batch's :meth:`shared_inputs`, when the caller built them.
        """
        raise NotImplementedError

    def parse_box(self, text: str, image_size: tuple[int, int]) -> Box | None:
        """The family's coordinate convention applied to model output."""
        return parse_box_text(text, image_size, self.box_convention)

    def parse_video_box(
        self, text: str, frame_size: tuple[int, int], num_frames: int
    ) -> Box | None:
        """:meth:`parse_box` for a box on a frame of a ``num_frames``-frame video.

        The same as :meth:`parse_box` here; families whose coordinates depend on how the
        video processor resized the frames (Qwen2.5-VL) override it.
        """
        return self.parse_box(text, frame_size)


def load_adapter(spec: ModelSpec) -> ModelAdapter:
    """Instantiate the registered adapter named by ``spec.name``."""
    from harness.api.registry import MODEL_FAMILIES

    cls = MODEL_FAMILIES.get(spec.name)
    return cls(spec)
