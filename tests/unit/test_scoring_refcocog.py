"""RefCOCOg ``official``: each family's released grounding evaluator, held to equality.

Cases: ``tests/data/scoring/modes_refcocog.json`` (≥ 40 replies per family rule; every
expected value comes from running the released code — InternVL's and Qwen-VL's
``evaluate_grounding.py`` scoring loops on torch, lmms-eval 0.7.3's own functions — see
``regen_modes_refcocog.py`` there for the commits and how torchvision's ``box_area`` is
supplied).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from harness.api.model import parse_box_text
from harness.api.payloads import Box, Generation
from harness.api.task import ScoringContext, build_task
from tasks.refcocog import official
from tasks.refcocog.task import RefCOCOg, RefSample

DATA = json.loads(
    (Path(__file__).resolve().parents[1] / "data/scoring/modes_refcocog.json").read_text(
        encoding="utf-8"
    )
)
CASES = DATA["cases"]
KINDS = {"short", "swapped", "outside", "no_box", "empty", "several", "markdown", "cot"}
KINDS |= {"other_language", "exponent", "leading_dot", "boundary", "lowercase"}


def score(mode: str, reply: str, xywh, size, family, parse_box=None, monkeypatch=None) -> dict:
    import tasks.refcocog.task as rc

    monkeypatch.setattr(rc, "image_size", lambda src, where: tuple(size))  # no image file
    sample = RefSample("d", "the brown dog", Box.from_xywh(*xywh), None)
    ctx = ScoringContext(parse_box or (lambda text, sz: None), 0, family=family)
    return RefCOCOg(scoring=mode).score(sample, Generation(reply), ctx)


@pytest.mark.parametrize("rule", ["internvl", "qwen_vl", "lmms_eval"])
def test_each_family_rule_has_forty_replies_with_provenance(rule):
    cases = [c for c in CASES if c["rule"] == rule]
    assert len(cases) >= 40
    assert KINDS <= {c["kind"] for c in cases}
    assert all(c["provenance"] == DATA["provenance"][rule] for c in cases)
    assert all(official.official_rule(c["family"]) == rule for c in cases)
    hits = Counter(c["expected"]["acc@0.5"] for c in cases)
    assert hits[0.0] >= 10 and hits[1.0] >= 10  # both outcomes, not a one-sided set


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c['rule']}-{i}-{c['kind']}" for i, c in enumerate(CASES)]
)
def test_official_equals_the_released_evaluator(case, monkeypatch):
    want = case["expected"]
    row = score("official", case["output"], case["target"], case["size"], case["family"],
                monkeypatch=monkeypatch)  # fmt: skip
    iou = 0.0 if math.isnan(want["iou"]) else want["iou"]  # NaN: reported as 0, fails 0.5
    assert row["miou"] == pytest.approx(iou, abs=1e-9)
    assert row["acc@0.5"] == want["acc@0.5"]
    assert row["acc@0.5"] == float(want["iou"] >= 0.5)
    assert row["center_acc"] == want["center_acc"]
    assert row["parse_rate"] == want["parse_rate"]


def test_float32_decides_at_the_threshold_as_the_released_code_does(monkeypatch):
    # The same 0.5 box: InternVL's float32 tensors give IoU 0.5 exactly (correct), lmms-eval's
    # float64 arithmetic 0.49999999999999994 (wrong).
    by = {(c["rule"], c["output"]): c["expected"] for c in CASES}
    assert by[("internvl", "[[100, 100, 500, 300]]")]["acc@0.5"] == 1.0
    assert by[("lmms_eval", "[0.1, 0.1, 0.5, 0.3]")]["acc@0.5"] == 0.0
    assert official.box_iou_f32((100.0, 100.0, 500.0, 300.0), (100, 100, 500, 500)) == 0.5
    assert official.box_iou_f32((0.0, 0.0, 0.0, 0.0), (0, 0, 0, 0)) != 0.0  # 0/0 is NaN


GENERIC = [
    "[0.2, 0.225, 0.6, 0.676]",
    "[[201, 225, 601, 676]]",
    "(201,225),(601,676)",
    "[0.6, 0.676, 0.2, 0.225]",
    "no box",
    "",
]


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl", "llava", "toy", "mock", None])
@pytest.mark.parametrize("reply", GENERIC)
def test_families_without_a_released_evaluator_score_as_lenient(family, reply, monkeypatch):
    assert official.official_rule(family) == "standard"
    size, xywh = (640, 427), [128.4, 96.2, 256.0, 192.5]

    def parse(text, sz):
        return parse_box_text(text, sz, "normalized")

    got = score("official", reply, xywh, size, family, parse, monkeypatch)
    assert got == score("lenient", reply, xywh, size, family, parse, monkeypatch)


@pytest.mark.parametrize("family", ["llava_next", "llava_onevision"])
@pytest.mark.parametrize("reply", GENERIC)
def test_llava_next_and_onevision_score_as_lmms_eval(family, reply, monkeypatch):
    size, xywh = (640, 427), [128.4, 96.2, 256.0, 192.5]
    got = score("official", reply, xywh, size, family, monkeypatch=monkeypatch)
    assert got == score("lmms_eval", reply, xywh, size, family, monkeypatch=monkeypatch)


def test_family_rule_names_are_registered_model_families():
    from harness.api.registry import MODEL_FAMILIES

    MODEL_FAMILIES.discover()
    assert set(official.FAMILY_RULES) <= set(MODEL_FAMILIES.names())


@pytest.mark.parametrize("name", ["refcocog", "refcocog_mini"])
def test_official_is_the_default_and_records_its_rule_table(name):
    task = build_task(name, {})
    assert task.scoring == "official"
    assert task.settings()["official_rules"] == official.OFFICIAL_RULES
    assert "internvl: internvl" in official.OFFICIAL_RULES
    assert "other: standard" in official.OFFICIAL_RULES
    for mode in ("lenient", "lmms_eval"):
        settings = build_task(name, {"scoring": mode}).settings()
        assert settings["scoring"] == mode and "official_rules" not in settings


@pytest.mark.parametrize(("family", "score_"), [("internvl", 0.0), ("mock", 1.0)])
def test_diagnose_scores_answers_under_the_adapters_family(family, score_):
    from harness.probes.diagnose import _correctness
    from harness.testing.mock import ScriptedAdapter

    task = build_task("refcocog_mini", {})
    doc = task.load(limit=1)[0]
    request = task.request(doc)
    w, h = request.images[0].size
    b = doc.box
    x1, y1, x2, y2 = (round(v * 1000) for v in (b.x1 / w, b.y1 / h, b.x2 / w, b.y2 / h))

    class Scripted(ScriptedAdapter):
        registry_name = family

    # Qwen2-VL's "(x1,y1),(x2,y2)": InternVL's evaluator cannot read it, the lenient rule can.
    adapter = Scripted(lambda r: f"({x1},{y1}),({x2},{y2})", box_convention="normalized_1000")
    got = _correctness(adapter, task, doc, request, seed=0, threshold=0.5)
    assert got["metric"] == "acc@0.5" and got["score"] == score_


LMMS_CASES = [c for c in CASES if c["rule"] == "lmms_eval"]


@pytest.mark.parametrize("case", LMMS_CASES, ids=[c["output"][:40] for c in LMMS_CASES])
def test_lmms_eval_mode_equals_lmms_evals_own_functions_on_every_case(case, monkeypatch):
    """Where lmms-eval is installed: its refcoco process_result on each reply, live."""
    pytest.importorskip("lmms_eval")
    ref = pytest.importorskip("lmms_eval.tasks.refcocog.utils_rec")
    w, h = case["size"]
    x, y, bw, bh = case["target"]
    gold = [x / w, y / h, (x + bw) / w, (y + bh) / h]  # its preprocess_dataset, from [x, y, w, h]
    doc = {"answer": "x", "question_id": 1, "bbox": gold}
    theirs = ref.refcoco_bbox_rec_process_result(doc, [case["output"]])
    row = score("lmms_eval", case["output"], case["target"], case["size"], case["family"],
                monkeypatch=monkeypatch)  # fmt: skip
    for name, metric in (("miou", "IoU"), ("acc@0.5", "ACC@0.5"), ("center_acc", "Center_ACC")):
        # its aggregation over this one document is the document's own value
        want = ref.refcoco_bbox_rec_aggregation_result([theirs[f"refcoco_{metric}"]], metric)
        assert row[name] == pytest.approx(want, abs=1e-12), name
