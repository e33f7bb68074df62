"""Visual tokens of a request: where each one looks in the original media, and the evidence rule.

A :class:`Layout` lists, in feature order (the order features are scattered into the
``input_ids`` image/video positions), the source of each visual token (image ``i``, or video
frame ``f`` as ``FRAME + f``; ``NO_SOURCE`` for tokens that cover nothing, e.g. a video's
trailing newline) and its footprint: the rectangle of original-image pixels whose content
reaches the token (NaN for tokens without a footprint, such as row newlines). Ω(V*) is then
the set of tokens that :func:`overlapping` (the one evidence rule) selects
(:func:`select_tokens`); :class:`Footprints` pairs a layout with the tokens' positions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.api.payloads import Box, BoxEvidence, EvidenceError, PageEvidence, TubeEvidence

if TYPE_CHECKING:
    import numpy as np

    from harness.api.payloads import Evidence, Request

__all__ = [
    "EVIDENCE_RULE",
    "FRAME",
    "Footprints",
    "Layout",
    "NO_SOURCE",
    "OVERLAP_TOL",
    "overlapping",
    "pages_inside",
    "select_tokens",
    "tube_inside",
]

FRAME = 1 << 20
"""Source id offset of video frames: frame ``f`` of ``Request.video`` has source ``FRAME + f``."""
NO_SOURCE = -1


OVERLAP_TOL = 1e-6
"""Overlaps of at most this many original pixels count as touching, not overlapping. Float
round-off of footprint edges (100 · (196 / 700) / 28 = 1.0000000000000002) stays far below it."""


EVIDENCE_RULE = "footprint overlap > 0, half-open [x1, x2) x [y1, y2), tol 1e-6 px (v2)"
"""Recorded in every adapter's settings: RAM rankings made under another rule (v1: float
rectangles, nominal cell sizes, whole-image pages) are not comparable and must not merge."""


def overlapping(rects: Any, box: Box, size: tuple[int, int]) -> Any:
    """THE evidence rule, used by every family: which token footprints the evidence covers.

    A footprint is the rectangle of original pixels whose content reaches a token (NaN rows:
    none). It covers ``box`` when it shares positive area with the part of the box inside the
    ``size`` image: rectangles are half-open ``[x1, x2) × [y1, y2)`` (x2/y2 exclusive) and the
    overlap must exceed :data:`OVERLAP_TOL` on both axes. A box edge on a token boundary takes
    no extra row or column; a 1-px box takes the tokens that see that pixel; tokens that see
    only padding or the part of a crop the model cuts away are never taken.

    Args:
        rects: (N, 4) ``x1, y1, x2, y2`` footprints in original pixels.
        box: Evidence box in original pixels.
        size: (width, height) of the medium.

    Returns:
        (N,) bool mask.

    Raises:
        EvidenceError: the box lies outside the image.
    """
    import numpy as np

    clipped = box.clip(*size)
    if clipped is None:
        raise EvidenceError(f"box {box.as_tuple()} lies outside the {size[0]}×{size[1]} image")
    r = np.asarray(rects, dtype=np.float64).reshape(-1, 4)
    with np.errstate(invalid="ignore"):
        ix = np.minimum(r[:, 2], clipped.x2) - np.maximum(r[:, 0], clipped.x1)
        iy = np.minimum(r[:, 3], clipped.y2) - np.maximum(r[:, 1], clipped.y1)
        return (ix > OVERLAP_TOL) & (iy > OVERLAP_TOL)


@dataclass
class Layout:
    """Footprints of a request's visual tokens, in feature order.

    Attributes:
        source: (N,) int source of each token (image index, ``FRAME + f``, or ``NO_SOURCE``).
        rects: (N, 4) float original-pixel footprints (NaN where a token covers nothing).
        sizes: ``{source: (width, height)}`` of each medium.
    """

    source: np.ndarray
    rects: np.ndarray
    sizes: dict[int, tuple[int, int]]

    @classmethod
    def empty(cls) -> Layout:
        """A layout with no tokens."""
        import numpy as np

        return cls(np.zeros(0, dtype=np.int64), np.zeros((0, 4)), {})

    def add(self, source: int, rects: np.ndarray, size: tuple[int, int] | None = None) -> Layout:
        """Append tokens of ``source`` (``rects`` may contain NaN rows); returns self."""
        import numpy as np

        rects = np.asarray(rects, dtype=np.float64).reshape(-1, 4)
        self.source = np.concatenate([self.source, np.full(len(rects), source, dtype=np.int64)])
        self.rects = np.concatenate([self.rects, rects])
        if size is not None:
            self.sizes[source] = (int(size[0]), int(size[1]))
        return self

    def add_blank(self, source: int, count: int = 1) -> Layout:
        """Append ``count`` tokens without footprint (newline / CLS tokens)."""
        import numpy as np

        return self.add(source, np.full((count, 4), np.nan))

    def __len__(self) -> int:
        return len(self.source)

    def covering(
        self, source: int, box: Box | None = None, tokens_of: int | None = None
    ) -> np.ndarray:
        """Indices of the tokens of ``source`` that :func:`overlapping` selects for ``box``.

        ``box=None`` stands for the whole medium (every token that sees any of its pixels:
        not the row newlines, not the tokens that see only padding). ``tokens_of``: the
        source whose tokens see ``source`` (a temporal group's first frame; default itself).
        """
        import numpy as np

        if source not in self.sizes:
            raise EvidenceError(f"evidence refers to a medium the request does not show ({source})")
        width, height = self.sizes[source]
        box = Box(0, 0, width, height) if box is None else box
        mine = np.flatnonzero(self.source == (source if tokens_of is None else tokens_of))
        return mine[overlapping(self.rects[mine], box, (width, height))]


def tube_inside(boxes: dict[int, Box], size_of: Callable[[int], Any]) -> dict[int, Box]:
    """The frames of a tube whose box overlaps its frame; the others are dropped.

    A tube box that lies wholly outside its frame (an annotation drawn past the frame edge)
    says nothing about that frame, as VidSTG's loader also reads it (``tasks/vidstg/data.py``
    refuses only a tube with no box inside its frame): the frame is left out of Ω(V*) and the
    other frames still count.

    Args:
        boxes: ``{frame position: Box}`` of the tube.
        size_of: ``frame position → (width, height)`` of that frame, or None when the request
            does not show it (the frame is kept: the caller reports it).

    Raises:
        EvidenceError: every box lies wholly outside its frame.
    """
    kept = {}
    for frame, box in boxes.items():
        size = size_of(frame)
        if size is None or box.clip(*size) is not None:
            kept[frame] = box
    if boxes and not kept:
        raise EvidenceError(f"every box of the tube lies wholly outside its frame ({boxes})")
    return kept


def pages_inside(evidence: PageEvidence, size_of: Callable[[int], Any]) -> dict[int, tuple]:
    """The evidence pages and their boxes, without the boxes wholly outside their page.

    The page form of :func:`tube_inside`: such a box says nothing about its page and is left
    out; a page all of whose boxes lie outside is dropped from Ω(V*), the other pages still
    count; a page without boxes stands for the whole page (``()``).

    Args:
        evidence: The page evidence.
        size_of: ``page → (width, height)`` of that (shown) page.

    Raises:
        EvidenceError: every page had boxes and each lies wholly outside its page.
    """
    kept: dict[int, tuple[Box, ...]] = {}
    for page in evidence.pages:
        boxes = tuple(evidence.boxes.get(page, ()))
        inside = tuple(b for b in boxes if b.clip(*size_of(page)) is not None)
        if inside or not boxes:
            kept[page] = inside
    if not kept:
        raise EvidenceError(
            f"every box of the page evidence lies wholly outside its page {evidence}"
        )
    return kept


@dataclass
class Footprints:
    """Each visual token of a request: its input position and footprint (the evidence inverse).

    Attributes:
        positions: (N,) int positions in the unpadded input, ascending.
        layout: The tokens' sources and footprints, in the order of ``positions``.
        frames_per_token: Video frames one token covers (Qwen's temporal patches: 2; the
            token's source is the group's first frame), 1 otherwise.
    """

    positions: np.ndarray
    layout: Layout
    frames_per_token: int = 1

    @staticmethod
    def frame_source(frame: int) -> int:
        """The layout's source id of video frame ``frame`` (:data:`FRAME` + ``frame``)."""
        return FRAME + frame

    @classmethod
    def of(cls, positions: list[int], layout: Layout, frames_per_token: int = 1) -> Footprints:
        """Footprints of tokens at ``positions`` (the layout's order), sorted by position."""
        import numpy as np

        if len(positions) != len(layout):
            raise RuntimeError(
                f"{len(positions)} visual tokens in the input but the layout predicts "
                f"{len(layout)} (processor settings not supported?)"
            )
        order = np.argsort(np.asarray(positions, dtype=np.int64), kind="stable")
        ordered = Layout(layout.source[order], layout.rects[order], dict(layout.sizes))
        return cls(np.asarray(positions, dtype=np.int64)[order], ordered, frames_per_token)


def select_tokens(
    layout: Layout, request: Request, evidence: Evidence, frames_per_token: int = 1
) -> np.ndarray:
    """Indices (into ``layout``) of the visual tokens covering ``evidence``.

    Args:
        layout: The request's layout.
        request: The request.
        evidence: A box on an image, a tube on the video, or pages (with optional boxes).
        frames_per_token: Video frames one token covers (:attr:`Footprints.frames_per_token`):
            a box on frame ``f`` selects the tokens of its group's first frame.

    Raises:
        EvidenceError: the evidence is empty, degenerate, refers to media the request does
            not show, or covers no visual token (e.g. a box in the part of the image that
            LLaVA-1.5's center crop removes).
    """
    import numpy as np

    parts: list[np.ndarray] = []
    n_images = len(request.images)
    if isinstance(evidence, BoxEvidence):
        shown = len(request.visual_inputs())  # images, then pages
        if not 0 <= evidence.image_index < shown:
            raise EvidenceError(
                f"image {evidence.image_index} outside the request's {shown} images"
            )
        parts.append(layout.covering(evidence.image_index, evidence.box))
    elif isinstance(evidence, TubeEvidence):
        if request.video is None:
            raise EvidenceError("tube evidence on a request without video")
        n_frames = len(request.video.frames)
        for frame in evidence.boxes:
            if not 0 <= frame < n_frames:
                raise EvidenceError(f"frame {frame} outside the {n_frames} frames")
        inside = tube_inside(evidence.boxes, lambda f: layout.sizes.get(FRAME + f))
        for frame, box in inside.items():
            group = FRAME + frame - frame % frames_per_token
            parts.append(layout.covering(FRAME + frame, box, tokens_of=group))
    elif isinstance(evidence, PageEvidence):
        for page in evidence.pages:
            if not 0 <= page < len(request.pages) or n_images + page not in layout.sizes:
                raise EvidenceError(f"page {page} outside the {len(request.pages)} pages")
        inside = pages_inside(evidence, lambda p: layout.sizes[n_images + p])
        for page, boxes in inside.items():
            parts.extend(layout.covering(n_images + page, box) for box in boxes or (None,))
    else:
        raise EvidenceError(f"unsupported evidence type {type(evidence).__name__}")
    chosen = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    if chosen.size == 0:
        raise EvidenceError("the evidence covers no visual token the model sees")
    return chosen
