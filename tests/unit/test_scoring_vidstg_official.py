"""VidSTG official scoring: TubeDETR's evaluator on the shown frames.

Hand-derived cases of ``tubedetr_scores`` first, then every reply of
tests/data/scoring/modes_vidstg.json through ``VidSTG(scoring="official").score`` and
``aggregate``, equal to what TubeDETR's own evaluator computed for it.

Provenance: antoyang/TubeDETR@d70c0ee datasets/vidstg_eval.py::VidSTGiouEvaluator.evaluate
(tIoU from the frame numbers of [start, end) spans; vIoU = Σ IoU over the gt-tube frames in
both spans / the frames in their hull, at least 1) and models/postprocessors.py (predicted
span = [frame_id[start], frame_id[end] + 1)). Each comment is the arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api.model import parse_box_text
from harness.api.payloads import Box, Generation
from harness.api.task import ScoringContext
from tasks.vidstg.data import SENTENCE_TYPES, VidSTGSample, tube_scores, tubedetr_scores
from tasks.vidstg.task import VidSTG

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


# -- data-driven: every reply through VidSTG(scoring="official").score, equal to TubeDETR -------
# tests/data/scoring/modes_vidstg.json: expected values from running TubeDETR's own
# VidSTGEvaluator (tests/data/scoring/regen_vidstg_official.py; provenance in the file).
DATA = json.loads(
    (Path(__file__).parents[1] / "data" / "scoring" / "modes_vidstg.json").read_text("utf-8")
)


def _context(convention):
    resized = tuple(DATA["resized_size"]) if convention == "pixels_resized" else None

    def parse(text, size, _n=None):
        return parse_box_text(text, size, convention, resized_size=resized)

    return ScoringContext(parse_box=parse, parse_video_box=parse)


def _score(task, case):
    setup = DATA["setups"][case["setup"]]
    span = tuple(setup["span"])
    sample = VidSTGSample(
        doc_id=f"v{case['setup']}:0:d0", vid=f"v{case['setup']}", sentence="s",
        sentence_type=case["sentence_type"], target_id=1, target_category="adult",
        segment=tuple(setup["segment"]), span=span,
        tube={int(f): Box(*b) for f, b in setup["tube"].items()},
        width=setup["size"][0], height=setup["size"][1], fps=float(setup["video_fps"]),
    )  # fmt: skip
    assert list(task.shown_frames(sample)) == setup["shown"]  # = TubeDETR's frame ids there
    return task.score(sample, Generation(case["output"]), _context(case["convention"]))


def _task(setup):
    return VidSTG(num_frames=DATA["setups"][setup]["num_frames"], scoring="official")


def test_enough_cases_of_every_kind():
    kinds = {c["kind"] for c in DATA["cases"]}
    assert len(DATA["cases"]) >= 40
    assert {"empty", "cot", "markdown", "other_language", "box_first", "between_shown"} <= kinds
    assert {c["sentence_type"] for c in DATA["cases"]} == {"declarative", "interrogative"}


@pytest.mark.parametrize(
    "case", DATA["cases"], ids=[f"{i}-{c['kind']}" for i, c in enumerate(DATA["cases"])]
)
def test_official_score_equals_tubedetr(case):
    row = _score(_task(case["setup"]), case)
    reading = case["reading"]
    assert row["pred_positions"] == reading["positions"]  # the hand reading, before scoring
    if reading["box"] is None:
        assert row["pred_box"] is None
    else:
        assert row["pred_box"] == pytest.approx(reading["box"], abs=1e-9)
    assert row["counted"] is True
    want = case["expected"]
    assert row["tIoU"] == pytest.approx(want["tIoU"], abs=1e-12, rel=0)
    assert row["vIoU"] == pytest.approx(want["vIoU"], abs=1e-12, rel=0)
    assert float(row["vIoU"] > 0.3) == want["vIoU@0.3"]
    assert float(row["vIoU"] > 0.5) == want["vIoU@0.5"]


def test_official_aggregate_equals_tubedetr_summarize():
    rows = [_score(_task(c["setup"]), c) for c in DATA["cases"]]
    got = {m.name: m for m in _task("A").aggregate(rows)}
    names = {"m_tIoU": "tiou", "m_vIoU": "viou", "vIoU@0.3": "viou@0.3", "vIoU@0.5": "viou@0.5"}
    sources = [("", "all", DATA["aggregate"]["overall"])]
    sources += [(f"_{t}", t, DATA["aggregate"]["by_sentence_type"]) for t in SENTENCE_TYPES]
    for suffix, qtype, summary in sources:
        n = sum(qtype in ("all", c["sentence_type"]) for c in DATA["cases"])
        for ours, theirs in names.items():
            metric = got[ours + suffix]
            assert metric.n == n
            assert metric.value == pytest.approx(summary[f"{qtype}_{theirs}"], abs=1e-12, rel=0)
