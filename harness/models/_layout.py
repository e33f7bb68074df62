"""Visual-token layouts: where each visual token of a request looks in the original media.

A :class:`Layout` lists, in feature order (the order features are scattered into the
``input_ids`` image/video positions), the source of each visual token (image ``i``, or video
frame ``f`` as ``FRAME + f``; ``NO_SOURCE`` for tokens that cover nothing, e.g. a video's
trailing newline) and its footprint: the rectangle of original-image pixels whose content
reaches the token (NaN for tokens without a footprint, such as row newlines).

The geometry helpers below replay the preprocessing of the LLaVA, LLaVA-NeXT, LLaVA-OneVision
and InternVL processors (resize, pad, crop, tile, unpad, bilinear pooling) as affine maps
between original pixels and vision-tower pixels; they are checked against the real processor
and vision tower by the token-local test in ``tests/integration/test_evidence_llava.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.api.payloads import Box, BoxEvidence, EvidenceError, PageEvidence, TubeEvidence

if TYPE_CHECKING:
    import numpy as np

    from harness.api.payloads import Evidence, Request

__all__ = ["Layout", "View", "FRAME", "NO_SOURCE", "select_tokens"]

FRAME = 1 << 20
"""Source id offset of video frames: frame ``f`` of ``Request.video`` has source ``FRAME + f``."""
NO_SOURCE = -1


@dataclass(frozen=True)
class View:
    """An axis-aligned affine map from original pixels to a vision-tower canvas.

    ``u = x * sx + ox`` and ``v = y * sy + oy`` (PIL resizes map output pixel ``u`` to
    input ``[u / sx, (u + 1) / sx)``, so pixel edges map exactly).
    """

    sx: float
    sy: float
    ox: float = 0.0
    oy: float = 0.0

    def then(self, sx: float = 1.0, sy: float = 1.0, ox: float = 0.0, oy: float = 0.0) -> View:
        """Compose: this view, then another scale/offset step."""
        return View(self.sx * sx, self.sy * sy, self.ox * sx + ox, self.oy * sy + oy)

    def cells(self, rows: np.ndarray, cols: np.ndarray, cell_h: float, cell_w: float) -> np.ndarray:
        """Original-pixel rectangles of canvas cells spanning ``rows``×``cols`` index ranges.

        Args:
            rows: (N, 2) first and last (inclusive) canvas cell row of each token.
            cols: (N, 2) first and last (inclusive) canvas cell column of each token.
            cell_h: Cell height in canvas pixels.
            cell_w: Cell width in canvas pixels.

        Returns:
            (N, 4) ``x1, y1, x2, y2`` in original pixels.
        """
        import numpy as np

        x1 = (cols[:, 0] * cell_w - self.ox) / self.sx
        x2 = ((cols[:, 1] + 1) * cell_w - self.ox) / self.sx
        y1 = (rows[:, 0] * cell_h - self.oy) / self.sy
        y2 = ((rows[:, 1] + 1) * cell_h - self.oy) / self.sy
        return np.stack([x1, y1, x2, y2], axis=1)

    def grid(self, n_rows: int, n_cols: int, cell_h: float, cell_w: float) -> np.ndarray:
        """Rectangles of a row-major ``n_rows``×``n_cols`` grid of single cells."""
        import numpy as np

        r, c = np.divmod(np.arange(n_rows * n_cols), n_cols)
        return self.cells(np.stack([r, r], 1), np.stack([c, c], 1), cell_h, cell_w)


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

    def covering(self, source: int, box: Box) -> np.ndarray:
        """Indices of the tokens of ``source`` whose footprint overlaps ``box`` (clipped)."""
        import numpy as np

        if source not in self.sizes:
            raise EvidenceError(f"evidence refers to a medium the request does not show ({source})")
        width, height = self.sizes[source]
        clipped = box.clip(width, height)
        if clipped is None:
            raise EvidenceError(f"box {box.as_tuple()} lies outside the {width}×{height} image")
        r = self.rects
        with np.errstate(invalid="ignore"):
            ix = np.minimum(r[:, 2], clipped.x2) - np.maximum(r[:, 0], clipped.x1)
            iy = np.minimum(r[:, 3], clipped.y2) - np.maximum(r[:, 1], clipped.y1)
            hit = (self.source == source) & (ix > 0) & (iy > 0)
        return np.flatnonzero(hit)


def bilinear_sources(n_in: int, n_out: int) -> np.ndarray:
    """Input index range (first, last) feeding each output of a bilinear resize.

    Replays ``torch.nn.functional.interpolate(mode="bilinear", align_corners=False)``
    along one axis: output ``i`` reads ``floor(s)`` and ``floor(s) + 1`` at
    ``s = max((i + 0.5) · n_in / n_out − 0.5, 0)``; a zero weight drops the second.
    """
    import numpy as np

    out = np.zeros((n_out, 2), dtype=np.int64)
    scale = n_in / n_out
    for i in range(n_out):
        src = max(scale * (i + 0.5) - 0.5, 0.0)
        lo = min(int(math.floor(src)), n_in - 1)
        hi = lo + 1 if (lo < n_in - 1 and src - lo > 0) else lo
        out[i] = (lo, hi)
    return out


def select_tokens(layout: Layout, request: Request, evidence: Evidence) -> np.ndarray:
    """Indices (into ``layout``) of the visual tokens covering ``evidence``.

    Raises:
        EvidenceError: the evidence is empty, degenerate, refers to media the request does
            not show, or covers no visual token (e.g. a box in the part of the image that
            LLaVA-1.5's center crop removes).
    """
    import numpy as np

    parts: list[np.ndarray] = []
    n_images = len(request.images)
    if isinstance(evidence, BoxEvidence):
        parts.append(layout.covering(evidence.image_index, evidence.box))
    elif isinstance(evidence, TubeEvidence):
        for frame, box in evidence.boxes.items():
            parts.append(layout.covering(FRAME + frame, box))
    elif isinstance(evidence, PageEvidence):
        for page in evidence.pages:
            source = n_images + page
            if source not in layout.sizes:
                raise EvidenceError(f"page {page} is not shown in the request")
            boxes = evidence.boxes.get(page, ())
            if boxes:
                parts.extend(layout.covering(source, box) for box in boxes)
            else:
                parts.append(np.flatnonzero(layout.source == source))
    else:
        raise EvidenceError(f"unsupported evidence type {type(evidence).__name__}")
    chosen = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    if chosen.size == 0:
        raise EvidenceError("the evidence covers no visual token the model sees")
    return chosen
