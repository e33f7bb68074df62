"""Layout kinds for the families still to come, held to their processors' own outputs.

The row-break grid (Pixtral / Mistral3; the ``mistral3`` unit now brings its model-level oracle)
and the Idefics3 tile canvas (Idefics3, SmolVLM, no registered family yet); until their units
bring the model-level oracle
(``test_evidence_conformance.py`` runs on every unit with a tiny recipe), their geometry is
checked against transformers' own PIL image processors, which run without torchvision:

- the replayed resizes EQUAL the sizes the processor produces (``image_sizes``; every resize
  the Idefics3 processor performs, recorded as it runs);
- a processor-level trace: under :func:`harness.testing.trace.exact_overlap_resize` a white
  box on a black image lights exactly the token cells (of each tile, and of the global image)
  whose footprints the evidence rule selects. This covers the processor's resizes, tiling and
  order; what the tower does inside a cell (patches, merge / pixel shuffle) is the model-level
  oracle's part.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("transformers")
from PIL import Image  # noqa: E402

from harness.api.payloads import Box  # noqa: E402
from harness.models.layouts.geometry import Axis, Chain, View, patch_spans  # noqa: E402
from harness.models.layouts.row_break import resized_size  # noqa: E402
from harness.models.layouts.tiles import idefics3_rects, idefics3_sizes  # noqa: E402
from harness.models.layouts.tokens import overlapping  # noqa: E402
from harness.testing.trace import draw_box, exact_overlap_resize  # noqa: E402

SIZES = [
    (640, 480),
    (436, 300),
    (460, 1000),
    (1228, 700),
    (2000, 300),
    (90, 2500),
    (364, 364),
    (100, 80),
    (1537, 1536),
    (4100, 50),
]


def _pixtral(longest: int):
    from transformers.models.pixtral.image_processing_pil_pixtral import PixtralImageProcessorPil

    return PixtralImageProcessorPil(size={"longest_edge": longest})


def _idefics3(longest: int = 4 * 364, tile: int = 364):
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    return Idefics3ImageProcessorPil(
        size={"longest_edge": longest}, max_image_size={"longest_edge": tile}
    )


@pytest.mark.parametrize("longest", [1024, 1540])
def test_pixtral_resize_equals_the_image_processor(longest):
    proc = _pixtral(longest)
    for width, height in SIZES:
        out = proc(Image.new("RGB", (width, height)), patch_size={"height": 32, "width": 32})
        got = tuple(int(v) for v in np.asarray(out["image_sizes"])[0])
        assert resized_size(width, height, longest, 32) == (got[1], got[0]), (width, height)


def _recorded_resizes(proc, image):
    seen = []
    original = type(proc).resize

    def record(self, image, size, *args, **kwargs):
        out = original(self, image, size, *args, **kwargs)
        seen.append((out.shape[-1], out.shape[-2]))
        return out

    type(proc).resize = record
    try:
        out = proc(image, return_row_col_info=True)
    finally:
        type(proc).resize = original
    return seen, out


def test_idefics3_resizes_equal_the_image_processor():
    proc = _idefics3()
    for width, height in SIZES:
        seen, out = _recorded_resizes(proc, Image.new("RGB", (width, height)))
        first, second = idefics3_sizes(width, height, longest_edge=4 * 364, tile=364)
        assert seen[:2] == [first, second], (width, height)
        rows, cols = out["rows"][0][0], out["cols"][0][0]
        tiled = second[0] > 364 or second[1] > 364
        assert (rows, cols) == ((second[1] // 364, second[0] // 364) if tiled else (0, 0))
        assert seen[2:] == ([(364, 364)] if tiled else [])  # the global image


def _lit_cells(pixel_values: np.ndarray, blank: np.ndarray, cell: int) -> list[set[int]]:
    """Per frame, the row-major cells of ``cell`` px where any pixel differs."""
    out = []
    for lit, base in zip(pixel_values, blank):
        diff = (lit != base).any(axis=0)
        h, w = diff.shape
        cells = diff[: h // cell * cell, : w // cell * cell]
        cells = cells.reshape(h // cell, cell, w // cell, cell).any(axis=(1, 3))
        out.append(set(np.flatnonzero(cells).tolist()))
    return out


def _boxes(rng: random.Random, width: int, height: int, n: int) -> list[Box]:
    out = [Box(0, 0, 1, 1), Box(width - 1, height - 1, width, height)]
    while len(out) < n:
        x1, y1 = rng.randrange(width), rng.randrange(height)
        x2 = rng.randrange(x1 + 1, min(width, x1 + max(2, width // 4)) + 1)
        y2 = rng.randrange(y1 + 1, min(height, y1 + max(2, height // 4)) + 1)
        out.append(Box(x1, y1, x2, y2))
    return out


@pytest.mark.parametrize("size", [(640, 480), (436, 300), (460, 1000), (1228, 700), (300, 200)])
def test_idefics3_footprints_equal_a_processor_trace(size):
    """Idefics3 at its released geometry (1456 / 364, 28-px cells after pixel shuffle)."""
    proc, (width, height) = _idefics3(), size
    rects = idefics3_rects(width, height, longest_edge=4 * 364, tile=364, cell=28)
    per_frame = 13 * 13
    with exact_overlap_resize():
        blank = np.asarray(proc(Image.new("RGB", size))["pixel_values"])[0]
        for box in _boxes(random.Random(size[0]), width, height, 4):
            pixels = proc(draw_box(Image.new("RGB", size), box))["pixel_values"]
            lit = _lit_cells(np.asarray(pixels)[0], blank, 28)
            traced = {f * per_frame + c for f, cells in enumerate(lit) for c in cells}
            chosen = set(np.flatnonzero(overlapping(rects, box, size)).tolist())
            assert len(rects) == len(blank) * per_frame
            assert chosen == traced, (size, box, sorted(chosen ^ traced)[:8])


@pytest.mark.parametrize("longest", [1024, 1540])
@pytest.mark.parametrize("size", [(640, 480), (2000, 300), (333, 777), (100, 80)])
def test_row_break_footprints_equal_a_processor_trace(size, longest):
    """Pixtral: every 32-px cell of the resized image (one resize from the original)."""
    proc, (width, height) = _pixtral(longest), size
    w, h = resized_size(width, height, longest, 32)
    rects = View.squash(width, height, w, h).grid(patch_spans(1, h, 32), patch_spans(1, w, 32))
    kwargs = {"patch_size": {"height": 32, "width": 32}, "return_tensors": "np"}
    with exact_overlap_resize():
        blank = proc(Image.new("RGB", size), **kwargs)["pixel_values"][0]
        for box in _boxes(random.Random(size[1]), width, height, 6):
            pixels = proc(draw_box(Image.new("RGB", size), box), **kwargs)["pixel_values"]
            traced = _lit_cells(pixels[0][None, :, :h, :w], blank[None, :, :h, :w], 32)[0]
            assert set(np.flatnonzero(overlapping(rects, box, size)).tolist()) == traced


def test_a_chain_of_resizes_is_not_one_ratio():
    """436×300 rows: 300 → 1002 (stage 1) → 1092 (stage 2); one ratio gives other edges."""
    chained = Chain((Axis(300, 1002), Axis(1002, 1092)))
    one_ratio = Axis(300, 1092)
    spans = patch_spans(3, 364, 28)[:, 1]
    lower = chained.to_original(spans, upper=True)
    assert not np.array_equal(lower, one_ratio.to_original(spans))
    assert (lower >= one_ratio.to_original(spans)).all()
