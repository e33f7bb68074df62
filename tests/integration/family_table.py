"""The family test table: per family, one row of what its tests cannot derive from its unit.

Everything else the tests need comes from the registry (:func:`harness.models.unit.unit_names`,
:func:`harness.models.tiny.tiny_adapter`); ``test_family_units.py`` checks that every family
with a tiny recipe has exactly one row here. Adding a family of a known layout kind means its
module, one row below and the README's model-table row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ROWS", "Row", "conformance_adapter"]

Boxes = list[tuple[tuple[int, int], list[tuple[int, int, int, int]]]]


@dataclass(frozen=True)
class Row:
    """What a family's tests know that its unit cannot say.

    Attributes:
        tokens_640x480: Visual tokens the released processor makes for one 640×480 image (at
            the recipe's ``geometry="real"``): held against the layout kind's footprints.
        trace_cases: Extra hard cases for the conformance oracle (image size, boxes): boxes
            where the evidence map once differed from the trace.
        trace_processor: Options of the real-geometry processor the conformance tests use
            (e.g. Qwen's pixel budget), beside ``geometry="real"``.
    """

    tokens_640x480: int
    trace_cases: Boxes = field(default_factory=list)
    trace_processor: dict[str, Any] = field(default_factory=dict)


QWEN_TRACE = {"image_tokens": (4, 1280), "video_tokens": (128, 768)}
"""Qwen2/2.5-VL ``Qwen2VLImageProcessor`` defaults (56², 28²·1280 px) and the video processors'
default budget (128 to 768 cells): a smaller image budget than the checkpoints' keeps the
trace fast while every resize rule still runs."""

ROWS: dict[str, Row] = {
    "llava": Row(
        576,  # short side 336, centre crop 336², CLIP /14: 24×24
        [((800, 600), [(600, 200, 750, 250), (250, 100, 300, 200), (192, 168, 200, 172)])],
    ),
    "llava_next": Row(
        2340,  # base 24×24 + pinpoint 672²: 672×504 → unpadded 36 rows × (48 + newline)
        [((500, 375), [(409, 128, 478, 219), (350, 35, 364, 42), (260, 250, 288, 289)])],
    ),
    "llava_onevision": Row(
        2929,  # base 27×27 + pinpoint 768²: 54×54 unpadded to 40 rows × (54 + newline)
        [
            ((500, 375), [(432, 197, 486, 203), (50, 373, 69, 375), (144, 71, 169, 151)]),
            ((818, 1582), [(392, 0, 406, 14), (700, 1000, 800, 1400)]),
        ],
    ),
    "internvl": Row(
        3328,  # 4:3 → 4×3 tiles of 448² + thumbnail, 16×16 each: 13 × 256
        [((600, 400), [(88, 247, 282, 300), (296, 372, 300, 376), (500, 50, 525, 100)])],
    ),
    "qwen2_vl": Row(
        391,  # smart_resize to 644×476: 23×17 cells of 28 px
        [((100, 700), [(25, 300, 50, 350), (0, 200, 50, 250), (3, 639, 25, 649)])],
        QWEN_TRACE,
    ),
    "qwen2_5_vl": Row(
        391,  # as Qwen2-VL
        [((100, 700), [(50, 600, 75, 650), (0, 575, 50, 650), (22, 618, 25, 648)])],
        QWEN_TRACE,
    ),
    "qwen3_vl": Row(
        300,  # 640×480 is already a multiple of 32: 20×15 cells
        [((100, 700), [(25, 300, 50, 350), (0, 0, 64, 64), (99, 699, 100, 700)])],
        {"image_tokens": (64, 16384), "video_tokens": (128, 768)},
    ),
    "gemma3": Row(
        256,  # squash to 896², SigLIP /14: 64×64 patches avg-pooled 4×4 → 16×16
        # a token is 56 canvas px = 40 × 30 px of 640×480: boxes across its edges
        [((640, 480), [(39, 29, 41, 31), (40, 30, 80, 60), (600, 450, 601, 451)])],
    ),
    "paligemma": Row(
        256,  # squash to 224², SigLIP /14: 16×16
        [((640, 480), [(39, 29, 41, 31), (40, 30, 80, 60), (600, 450, 601, 451)])],
    ),
    "glm4v": Row(
        391,  # sides rounded to multiples of 28 within the budget: 644×476, 23×17 cells
        [((100, 700), [(25, 300, 50, 350), (0, 200, 50, 250), (3, 639, 25, 649)])],
        {"image_tokens": (4, 1280)},
    ),
    "mistral3": Row(
        414,  # fits 1540²: kept; sides rounded up to 28 px: 644×504, 23×18 [IMG] (+ 18 breaks)
        # 640/644 and 480/504 are not whole ratios: boxes across the first cell edges and at
        # the far corner; a size shrunk to fit 1540 then rounded up (2000×1000 → 1540×770)
        [
            ((640, 480), [(26, 25, 29, 28), (27, 26, 28, 27), (639, 479, 640, 480)]),
            ((2000, 1000), [(35, 35, 37, 37), (1990, 990, 2000, 1000)]),
        ],
    ),
    "idefics3": Row(
        2197,  # longest edge 1456: 1456×1092, 4×3 tiles of 364² + global, 13×13 each: 13 × 169
        # 1228×700 → 1456×830 → 1456×1092: neither resize a whole-number ratio
        [((1228, 700), [(306, 0, 308, 2), (600, 400, 700, 500), (1227, 699, 1228, 700)])],
    ),
    "smolvlm": Row(
        832,  # longest edge 2048: 2048×1536, 4×3 tiles of 512² + global, 8×8 each: 13 × 64
        [((1228, 700), [(306, 0, 308, 2), (600, 400, 700, 500), (1227, 699, 1228, 700)])],
    ),
    "aya_vision": Row(
        2197,  # 4:3 → 4×3 tiles of 364² + global, 26×26 patches shuffled by 2: 13 × 169
        # 28-px cells of 364² tiles on a 4×3 canvas: 600 px → 1456, a cell ≈ 11.5 px
        [((600, 400), [(88, 247, 282, 300), (149, 99, 151, 101), (500, 50, 525, 100)])],
    ),
}


def conformance_adapter(family: str) -> Any:
    """The family's tiny adapter at real geometry with its row's trace processor options."""
    from harness.models.tiny import tiny_adapter

    return tiny_adapter(family, geometry="real", **ROWS[family].trace_processor)
