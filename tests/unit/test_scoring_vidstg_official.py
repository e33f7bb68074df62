"""VidSTG official scoring: TubeDETR's evaluator on the shown frames (hand-derived cases).

Provenance: antoyang/TubeDETR@d70c0ee datasets/vidstg_eval.py::VidSTGiouEvaluator.evaluate
(tIoU from the frame numbers of [start, end) spans; vIoU = Σ IoU over the gt-tube frames in
both spans / the frames in their hull, at least 1) and models/postprocessors.py (predicted
span = [frame_id[start], frame_id[end] + 1)). Each comment is the arithmetic.
"""

from __future__ import annotations

import pytest

from harness.api.payloads import Box
from tasks._vidstg_data import tube_scores, tubedetr_scores

GOLD = Box(0, 0, 10, 10)
HALF = Box(0, 0, 10, 5)  # IoU 0.5 with GOLD
SHOWN = (0, 10, 20, 30)


def tube(frames):
    return {f: GOLD for f in frames}


CASES = [
    # pred positions (1, 2) → frames [10, 21); gt [10, 30): inter 11, union 20 + 11 − 11 = 20;
    # hull [10, 30) holds shown 10, 20; both in the overlap, IoU 1 each → vIoU 2 / 2.
    ("partial_span", SHOWN, (10, 30), (1, 2), GOLD, (11 / 20, 1.0)),
    # pred (0, 3) → [0, 31): inter 20, union 20 + 31 − 20 = 31; hull holds 4 shown frames,
    # gt frames 10, 20 in the overlap at IoU 0.5 → vIoU 1.0 / 4.
    ("wide_span_half_box", SHOWN, (10, 30), (0, 3), HALF, (20 / 31, 0.25)),
    # gt [12, 18) holds no shown frame; pred (1, 1) → [10, 11): no overlap → tIoU 0; hull
    # [10, 18) holds shown 10; no gt frame shown → vIoU 0 / 1. Counted (lenient leaves it out).
    ("gt_between_shown", (0, 10, 20), (12, 18), (1, 1), GOLD, (0.0, 0.0)),
    # exact: pred (1, 2) → [10, 21) vs gt [10, 21): tIoU 1; vIoU 2 / 2.
    ("exact", SHOWN, (10, 21), (1, 2), GOLD, (1.0, 1.0)),
    # reversed and out-of-range positions are sorted and clamped: (9, 2) → (2, 3) → [20, 31)
    # vs gt [20, 31): tIoU 1, vIoU 1.
    ("clamped", SHOWN, (20, 31), (9, 2), GOLD, (1.0, 1.0)),
    ("unparsed_span", SHOWN, (10, 30), None, GOLD, (0.0, 0.0)),
    ("unparsed_box", SHOWN, (10, 30), (1, 2), None, (11 / 20, 0.0)),
]


@pytest.mark.parametrize(("name", "shown", "span", "pos", "box", "want"), CASES)
def test_tubedetr_cases(name, shown, span, pos, box, want):
    got = tubedetr_scores(shown, span, tube(range(span[0], span[1])), pos, box)
    assert got == pytest.approx(want, abs=1e-12)


def test_official_differs_from_lenient_where_documented():
    t = tube(range(10, 30))
    # Lenient: positions {1, 2} both in G = {1, 2} → tIoU 1; official counts frame numbers.
    assert tube_scores(SHOWN, (10, 30), t, (1, 2), GOLD) == (1.0, 1.0)
    assert tubedetr_scores(SHOWN, (10, 30), t, (1, 2), GOLD)[0] == pytest.approx(0.55)
    assert tube_scores((0, 10, 20), (12, 18), tube(range(12, 18)), (1, 1), GOLD) is None
