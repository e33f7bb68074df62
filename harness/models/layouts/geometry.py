"""Pixel geometry of the processors: pad, resize, crop and tile as exact maps to the original.

The helpers replay the processors' preprocessing as exact integer affine maps per axis
(:class:`Axis`; several resizes in a row: :class:`Chain`) and the vision towers' patch grids as
pixel spans (:func:`patch_spans`); model-side pooling (``nn.functional.interpolate``) is read
from torch itself (:func:`bilinear_sources`). A :class:`View` turns canvas pixel spans into
footprints in original pixels. The layout kinds build their tokens' footprints with them
(:mod:`harness.models.layouts.tokens` holds the tokens and the evidence rule); they are held to
equality with the models' own token-local tracing by
``tests/integration/test_evidence_conformance.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Axis", "Chain", "View", "bilinear_sources", "patch_spans"]


@dataclass(frozen=True)
class Axis:
    """One axis of a preprocessing chain: pad by ``pre``, resize ``old`` → ``new``, shift ``post``.

    A canvas pixel edge ``u`` lies at original ``x = (u - post) · old / new - pre``. PIL's
    resize maps output pixel ``u`` to input ``[u · old / new, (u + 1) · old / new)``, so pixel
    edges map exactly; every term is an integer, so an edge that falls on an integer pixel
    boundary is computed exactly (one correctly rounded division), never as 99.99999999999999.
    """

    old: int
    new: int
    pre: int = 0
    post: int = 0

    def to_original(self, u: np.ndarray, upper: bool = False) -> np.ndarray:
        """Original-pixel coordinate of canvas pixel edges ``u`` (``upper``: unused here)."""
        return (u - self.post) * self.old / self.new - self.pre


@dataclass(frozen=True)
class Chain:
    """Several resizes in a row (original → stage 1 → … → canvas), e.g. Idefics3's two.

    Going back from the canvas, every intermediate stage is a whole-pixel image: a span of
    canvas pixels reaches the intermediate pixels that share positive area with it (the lower
    edge floored, the upper edge ceiled, in integers), and only the last step back to the
    original keeps :class:`Axis`'s exact edges. One ratio from canvas to original would be
    wrong wherever a resize is not a whole-number ratio (436 → 728, 1228 → 1536).

    Attributes:
        stages: The resizes in processing order (the first reads the original).
    """

    stages: tuple[Axis, ...]

    def to_original(self, u: np.ndarray, upper: bool = False) -> np.ndarray:
        """Original-pixel coordinate of canvas pixel edges ``u`` (lower or ``upper`` edges)."""
        import numpy as np

        u = np.asarray(u, dtype=np.int64)
        for stage in reversed(self.stages[1:]):
            scaled = (u - stage.post) * stage.old
            u = (-((-scaled) // stage.new) if upper else scaled // stage.new) - stage.pre
        return self.stages[0].to_original(u)


@dataclass(frozen=True)
class View:
    """The two axes of a preprocessing chain (original image → one vision-tower canvas)."""

    x: Axis | Chain
    y: Axis | Chain

    @classmethod
    def squash(cls, width: int, height: int, new_w: int, new_h: int) -> View:
        """A plain resize of the whole image to ``new_w`` × ``new_h`` (aspect not kept)."""
        return cls(Axis(width, new_w), Axis(height, new_h))

    def rects(self, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
        """Original-pixel footprints of tokens spanning canvas rows ``ys`` and columns ``xs``.

        Args:
            ys: (N, 2) ``[start, end)`` canvas pixel rows of each token.
            xs: (N, 2) ``[start, end)`` canvas pixel columns of each token.

        Returns:
            (N, 4) ``x1, y1, x2, y2`` in original pixels (x2/y2 exclusive).
        """
        import numpy as np

        x1, x2 = self.x.to_original(xs[:, 0]), self.x.to_original(xs[:, 1], upper=True)
        y1, y2 = self.y.to_original(ys[:, 0]), self.y.to_original(ys[:, 1], upper=True)
        return np.stack([x1, y1, x2, y2], axis=1).astype(np.float64)

    def grid(self, row_spans: np.ndarray, col_spans: np.ndarray) -> np.ndarray:
        """Footprints of the row-major grid ``row_spans`` × ``col_spans``, one token per cell."""
        import numpy as np

        r, c = np.divmod(np.arange(len(row_spans) * len(col_spans)), len(col_spans))
        return self.rects(row_spans[r], col_spans[c])


def patch_spans(n_crops: int, tile: int, patch: int) -> np.ndarray:
    """Canvas pixel span ``[start, end)`` of each feature index along one axis.

    The canvas is ``n_crops`` crops of ``tile`` px side by side; in each crop the vision tower's
    patch embedding (a convolution with kernel = stride = ``patch``, no padding) makes
    ``tile // patch`` features, feature ``k`` seeing ``[k · patch, (k + 1) · patch)``. The last
    ``tile % patch`` px of a crop are never seen (SigLIP 384/14: 27 patches cover 0–377).

    Returns:
        (n_crops · (tile // patch), 2) int spans.
    """
    import numpy as np

    grid = tile // patch
    crop, k = np.divmod(np.arange(n_crops * grid), grid)
    start = crop * tile + k * patch
    return np.stack([start, start + patch], axis=1)


@lru_cache(maxsize=512)
def bilinear_sources(n_in: int, n_out: int) -> np.ndarray:
    """Input index range (first, last) feeding each output of a bilinear resize, as torch does it.

    The model calls ``nn.functional.interpolate(mode="bilinear", align_corners=False)``
    (OneVision's ``pack_image_features`` for ``anyres_max_N`` and ``apply_pooling`` for video).
    Its source index ``(i + 0.5) · n_in / n_out − 0.5`` is computed in float32 with fused
    multiply-adds, so where exact arithmetic gives an integer torch may give a tiny weight to
    the neighbour (104 → 40, output 12 reads inputs 31 and 32, not 32 alone). The pattern is
    therefore read from torch itself: interpolate the identity along one axis (float32, CPU)
    and keep the inputs with a non-zero weight.

    Returns:
        (n_out, 2) int array of (first, last) input index.
    """
    import numpy as np
    import torch

    eye = torch.eye(n_in, dtype=torch.float32).reshape(1, n_in, n_in, 1)
    weights = torch.nn.functional.interpolate(eye, size=(n_out, 1), mode="bilinear")[0, :, :, 0]
    used = (weights != 0).numpy()  # (n_in, n_out)
    first = used.argmax(axis=0)
    last = n_in - 1 - used[::-1].argmax(axis=0)
    out = np.stack([first, last], axis=1)
    out.flags.writeable = False
    return out
