"""Typed payloads shared by every task and model adapter.

Tasks normalise their dataset's conventions once, into these types:
boxes are xyxy absolute pixels, pages are 0-based, frame indices are explicit
(exclusive ends turned into the list of frames), tubes are per-frame boxes.
Model adapters turn a :class:`Request` into model inputs and map an
:class:`Evidence` onto token positions.

Images are carried as PIL images (``PIL.Image.Image``); PIL is light enough to
import lazily by the task that builds them, so this module imports nothing heavy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Box",
    "Video",
    "Request",
    "BoxEvidence",
    "TubeEvidence",
    "PageEvidence",
    "Evidence",
    "Generation",
    "EvidenceError",
]


class EvidenceError(ValueError):
    """Raised for an empty, degenerate or out-of-range evidence region."""


@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box in absolute pixels, xyxy (x2/y2 exclusive edges)."""

    x1: float
    y1: float
    x2: float
    y2: float

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) for v in self.as_tuple()):
            raise EvidenceError(f"box {self.as_tuple()} has a non-finite coordinate")
        if not (self.x2 > self.x1 and self.y2 > self.y1):
            raise EvidenceError(f"degenerate box {self.as_tuple()}: needs x2 > x1 and y2 > y1")

    @classmethod
    def from_xywh(cls, x: float, y: float, w: float, h: float) -> Box:
        """Build from COCO-style ``[x, y, w, h]``."""
        return cls(float(x), float(y), float(x) + float(w), float(y) + float(h))

    def as_tuple(self) -> tuple[float, float, float, float]:
        """``(x1, y1, x2, y2)``."""
        return (self.x1, self.y1, self.x2, self.y2)

    @property
    def area(self) -> float:
        """Area in square pixels."""
        return (self.x2 - self.x1) * (self.y2 - self.y1)

    def iou(self, other: Box) -> float:
        """Intersection over union with ``other``."""
        ix = max(0.0, min(self.x2, other.x2) - max(self.x1, other.x1))
        iy = max(0.0, min(self.y2, other.y2) - max(self.y1, other.y1))
        inter = ix * iy
        union = self.area + other.area - inter
        return inter / union if union > 0 else 0.0

    def clip(self, width: float, height: float) -> Box | None:
        """The part of the box inside a ``width`` × ``height`` image, or None."""
        x1, y1 = max(0.0, self.x1), max(0.0, self.y1)
        x2, y2 = min(float(width), self.x2), min(float(height), self.y2)
        if x2 <= x1 or y2 <= y1:
            return None
        return Box(x1, y1, x2, y2)

    def grow(self, pixels: float) -> Box:
        """The box grown (positive) or shrunk (negative) by ``pixels`` on each side."""
        return Box(self.x1 - pixels, self.y1 - pixels, self.x2 + pixels, self.y2 + pixels)


@dataclass(frozen=True, slots=True)
class Video:
    """Sampled frames of a video clip.

    Attributes:
        frames: The decoded frames (PIL images), in temporal order.
        frame_indices: Index of each frame in the source video (0-based).
        fps: Source frame rate, if known.
        path: Source file, for logs.
    """

    frames: tuple[Any, ...]
    frame_indices: tuple[int, ...]
    fps: float | None = None
    path: str | None = None

    def __post_init__(self) -> None:
        if len(self.frames) != len(self.frame_indices):
            raise ValueError("Video.frames and Video.frame_indices differ in length")


@dataclass(frozen=True, slots=True)
class Request:
    """What a task asks of a model: media + an instruction.

    Exactly one media kind is normally used: ``images`` (one or more images),
    ``video`` (sampled frames) or ``pages`` (document pages, as images).
    The adapter applies the family's chat template; ``text`` is the
    instruction whose tokens are the query rows of RAM.

    Attributes:
        text: The instruction / question text, verbatim from the benchmark prompt.
        images: Images shown before the text.
        video: A sampled video clip.
        pages: Document pages (0-based order as given).
        max_new_tokens: Generation budget.
        kind: "generate" (free text) — the only kind used by the evaluator today.
    """

    text: str
    images: tuple[Any, ...] = ()
    video: Video | None = None
    pages: tuple[Any, ...] = ()
    max_new_tokens: int = 32
    kind: Literal["generate"] = "generate"

    def visual_inputs(self) -> tuple[Any, ...]:
        """All still images in display order (images, then pages)."""
        return tuple(self.images) + tuple(self.pages)


@dataclass(frozen=True, slots=True)
class BoxEvidence:
    """A box on one image of the request (``image_index`` into ``images``/``pages``)."""

    box: Box
    image_index: int = 0


@dataclass(frozen=True, slots=True)
class TubeEvidence:
    """A spatio-temporal tube: a box for each sampled frame that lies in the span.

    Attributes:
        boxes: ``{position in Request.video.frames: Box}`` for the covered frames.
    """

    boxes: dict[int, Box]

    def __post_init__(self) -> None:
        if not self.boxes:
            raise EvidenceError("empty tube: no sampled frame lies inside the temporal span")


@dataclass(frozen=True, slots=True)
class PageEvidence:
    """Evidence pages (0-based positions in ``Request.pages``), optionally boxes on them."""

    pages: tuple[int, ...]
    boxes: dict[int, tuple[Box, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.pages:
            raise EvidenceError("empty page evidence")


Evidence = BoxEvidence | TubeEvidence | PageEvidence


@dataclass(frozen=True, slots=True)
class Generation:
    """One model answer.

    Attributes:
        text: Decoded output (special tokens stripped).
        prompt_tokens: Number of prompt tokens (incl. visual tokens).
        output_tokens: Number of generated tokens.
        prefill_ms: Wall time of the prefill forward if measured separately.
        total_ms: Wall time of the whole generate call for this sample's batch share.
    """

    text: str
    prompt_tokens: int = 0
    output_tokens: int = 0
    prefill_ms: float | None = None
    total_ms: float | None = None
