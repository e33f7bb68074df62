"""PaliGemma's ``<locNNNN>`` boxes (``paligemma_loc``), read as big_vision's evaluator reads them.

Reference: google-research/big_vision @ 0127fb6,
``big_vision/evaluators/proj/paligemma/transfers/segmentation.py::Evaluator.run``: the first
four tokens minus ``<loc0000>`` are y1 x1 y2 x2; valid when each is in [0, 1023] and y2 > y1,
x2 > x1; ``bbox = tokens / 1023`` (fractions), pixels ``y · h``, ``x · w``. Expected values
below are that arithmetic written out for a 640×480 image.
"""

from __future__ import annotations

import pytest

from harness.api.model import loc_box, parse_box_text

SIZE = (640, 480)


def official(y1: int, x1: int, y2: int, x2: int) -> tuple[float, float, float, float]:
    """(x1, y1, x2, y2) pixels of the evaluator's ``tokens / 1023`` box on a 640×480 image."""
    return (x1 / 1023 * 640, y1 / 1023 * 480, x2 / 1023 * 640, y2 / 1023 * 480)


TWO = "detect cat\n<loc0010><loc0020><loc0030><loc0040> cat ; <loc0500><loc0500><loc0900><loc0900>"
CASES = [
    ("<loc0256><loc0128><loc0768><loc0896> cat", official(256, 128, 768, 896)),
    ("<loc0000><loc0000><loc1023><loc1023>", (0.0, 0.0, 640.0, 480.0)),  # the whole image
    (TWO, official(10, 20, 30, 40)),  # the first of two detections
    ("<loc0010> <loc0020> <loc0030> <loc0040>", official(10, 20, 30, 40)),  # spaced tokens
    ("<loc0768><loc0128><loc0256><loc0896> cat", None),  # y2 < y1: invalid, not swapped
    ("<loc0100><loc0100><loc0100><loc0200>", None),  # y2 == y1
    ("<loc0100><loc0200><loc0300><loc0200>", None),  # x2 == x1
    ("<loc1024><loc0000><loc0100><loc0100>", None),  # index outside [0, 1023]
    ("<loc0001><loc0002><loc0003> cat", None),  # three tokens
    ("[0.1, 0.2, 0.3, 0.4]", None),  # no loc tokens
]


@pytest.mark.parametrize(("text", "want"), CASES)
def test_loc_boxes_follow_the_official_evaluator(text, want):
    box = loc_box(text, SIZE)
    assert parse_box_text(text, SIZE, "paligemma_loc") == box
    if want is None:
        assert box is None
    else:
        assert box is not None and box.as_tuple() == pytest.approx(want, abs=1e-9)


def test_adapter_and_rescore_read_loc_boxes_alike():
    from harness.cli.rescore import _parse_box
    from harness.models.paligemma import PaliGemmaAdapter

    adapter = PaliGemmaAdapter.__new__(PaliGemmaAdapter)  # parse_box reads no model state
    recorded = _parse_box({"family": "paligemma", "box_convention": "paligemma_loc"})
    assert PaliGemmaAdapter.box_convention == "paligemma_loc"
    for text, _ in CASES:
        assert adapter.parse_box(text, SIZE) == recorded(text, SIZE) == loc_box(text, SIZE)
