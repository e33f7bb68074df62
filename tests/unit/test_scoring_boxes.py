"""Box forms and each family's coordinate convention (tests/data/scoring/boxes.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api.model import box_numbers, parse_box_text
from harness.api.payloads import Generation
from harness.api.task import ScoringContext
from harness.models.internvl import InternVLAdapter
from tasks.refcocog.task import RefCOCOg, RefSample, iou_scores, parse_bbox_xywh

DATA = json.loads((Path(__file__).resolve().parents[1] / "data/scoring/boxes.json").read_text())
SIZE = tuple(DATA["image_size"])
GOLD = parse_bbox_xywh(DATA["target"], "boxes.json")


CONVENTIONS = {
    "internvl": "normalized_1000_auto",
    "qwen2_vl": "normalized_1000",
    "llava": "normalized",
}


def parser(family: str):
    return lambda text, size: parse_box_text(text, size, CONVENTIONS[family])


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: f"{c['family']}:{c['output']}")
def test_internvl_adapter_and_rescore_read_boxes_alike(case):
    """The adapter's parse_box and rescore's parser (from the recorded settings) agree."""
    from harness.cli.rescore import _parse_box

    adapter = InternVLAdapter.__new__(InternVLAdapter)  # parse_box reads no model state
    recorded = _parse_box({"family": "internvl", "box_convention": InternVLAdapter.box_convention})
    assert adapter.parse_box(case["output"], SIZE) == recorded(case["output"], SIZE)
    old = _parse_box({"family": "internvl", "box_convention": "normalized_1000"})  # before the name
    assert old(case["output"], SIZE) == recorded(case["output"], SIZE)


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: f"{c['family']}:{c['output']}")
def test_box_cases(case, monkeypatch):
    parse = parser(case["family"])
    box = parse(case["output"], SIZE)
    if case["box"] is None:
        assert box is None
    else:
        assert box is not None and box.as_tuple() == pytest.approx(tuple(case["box"]))
    assert iou_scores(box, GOLD, SIZE)["miou"] == pytest.approx(case["iou"], abs=1e-9)
    import tasks.refcocog.task as ref

    monkeypatch.setattr(ref, "image_size", lambda src, where: SIZE)  # no image file needed
    sample = RefSample("d", "the dog", GOLD, None)
    task = RefCOCOg(scoring="lenient")  # the lenient rule: the family's convention, clipping
    row = task.score(sample, Generation(case["output"]), ScoringContext(parse, 0))
    assert row["swapped_rate"] == case["swapped"]
    assert row["acc@0.5"] == float(case["iou"] >= 0.5)


def test_box_numbers_takes_the_first_box_in_any_form():
    assert box_numbers("(1,2),(3,4) then [5, 6, 7, 8]") == (1, 2, 3, 4)
    assert box_numbers("[5, 6, 7, 8] then (1,2),(3,4)") == (5, 6, 7, 8)
    assert box_numbers("[1, 2, 3]") is None and box_numbers("[inf, 1, 2, 3]") is None


LMMS_REPLIES = [
    "[0.1, 0.2, 0.5, 0.8]",
    "[0.12, 0.2,0.5, 0.78] is the box",
    "[0.5, 0.8, 0.1, 0.2]",
    "[[0.1, 0.2, 0.5, 0.8]]",
    "[100, 200, 500, 800]",
    "(0.1,0.2),(0.5,0.8)",
    "[.1, .2, .5, .8]",
    "no box",
    "",
    "[0.0, 0.0, 1.0, 1.0]",
    "[-0.1, 0.2, 0.3, 0.9]",
    "The region is [0.15, 0.25, 0.45, 0.75].",
    "[0.25, 0.0, 1.0, 0.3]",
]


def test_refcocog_lmms_eval_equality_with_its_own_functions(monkeypatch):
    pytest.importorskip("lmms_eval")
    ref = pytest.importorskip("lmms_eval.tasks.refcocog.utils_rec")
    import tasks.refcocog.task as rc

    monkeypatch.setattr(rc, "image_size", lambda src, where: SIZE)
    task = RefCOCOg(scoring="lmms_eval")
    w, h = SIZE
    gold = [GOLD.x1 / w, GOLD.y1 / h, GOLD.x2 / w, GOLD.y2 / h]  # its preprocess_dataset
    theirs, rows = [], []
    for reply in LMMS_REPLIES:
        got = ref.refcoco_bbox_rec_process_result(
            {"answer": "x", "question_id": 1, "bbox": gold}, [reply]
        )
        theirs.append(got["refcoco_IoU"])
        rows.append(
            task.score(
                RefSample("d", "the dog", GOLD, None), Generation(reply), ScoringContext(None, 0)
            )
        )
    ours = {m.name: m.value for m in task.aggregate(rows)}
    for name, metric in (
        ("miou", "IoU"),
        ("acc@0.5", "ACC@0.5"),
        ("acc@0.3", "ACC@0.3"),
        ("acc@0.7", "ACC@0.7"),
        ("center_acc", "Center_ACC"),
    ):
        assert ours[name] == pytest.approx(
            ref.refcoco_bbox_rec_aggregation_result(theirs, metric)
        ), name
    for row, got in zip(rows, theirs):
        assert row["miou"] == pytest.approx(ref.compute_iou(got["bbox"], got["pred"]))
