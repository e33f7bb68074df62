"""Scoring modes (official / lmms_eval / lenient) held to their references case by case.

Cases: ``tests/data/scoring/modes_*.json`` (≥ 40 replies per benchmark, provenance per case;
``official`` expectations come from running the released evaluation code, ``lmms_eval`` ones
from lmms-eval 0.7.3's functions; see ``regen_modes.py`` there). Where lmms-eval is
importable, its own ``process_results`` and aggregation run on every case here too and must
agree with headscope's ``lmms_eval`` mode.
"""

from __future__ import annotations

import json
import math
import random
import sys
import types
from pathlib import Path

import pytest

from harness.api.payloads import Generation
from harness.api.scoring import SCORING_MODES, check_scoring, seeded_letter
from harness.api.task import ScoringContext, build_task
from tasks.mlvu.task import MLVU, MLVUSample
from tasks.mmmu.task import MMMU, MMMUSample
from tasks.pope.task import Pope, PopeSample
from tasks.videomme.task import VideoMME, VideoMMESample

DATA = Path(__file__).resolve().parents[1] / "data" / "scoring"
CTX = ScoringContext(parse_box=lambda text, size: None, seed=7)
MLVU_TYPES = ("anomaly_reco", "count", "ego", "needle", "order")  # ego..: two types absent


def load(name: str) -> list[dict]:
    data = json.loads((DATA / f"modes_{name}.json").read_text(encoding="utf-8"))
    assert set(data["provenance"]) == set(SCORING_MODES)
    cases = data["cases"]
    for case in cases:
        assert set(case["expected"]) == set(case["provenance"]) == set(SCORING_MODES)
    return cases


def params(name: str) -> list:
    return [
        pytest.param(mode, case, id=f"{mode}-{i}-{case['kind']}")
        for i, case in enumerate(load(name))
        for mode in SCORING_MODES
    ]


def lmms(module: str):
    """lmms-eval's task module, or skip (it is installed without its dependencies)."""
    pytest.importorskip("lmms_eval")
    stubbed = False
    if module.endswith("videomme.utils") and "cv2" not in sys.modules:
        try:
            import cv2  # noqa: F401
        except ImportError:  # its scoring functions never touch cv2
            sys.modules["cv2"] = types.ModuleType("cv2")
            stubbed = True
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as exc:
        pytest.skip(f"lmms-eval module {module} not importable: {exc}")
    finally:
        # The stub must not outlive the import: transformers asks importlib whether cv2
        # exists, and a spec-less module in sys.modules makes that question raise.
        if stubbed:
            sys.modules.pop("cv2", None)


@pytest.mark.parametrize("name", ["pope", "mmmu", "videomme", "mlvu"])
def test_each_benchmark_has_forty_replies_of_every_kind(name):
    cases = load(name)
    kinds = {c["kind"] for c in cases}
    assert len(cases) >= 40
    assert {"short", "cot", "lowercase", "markdown", "empty", "other_language"} <= kinds
    assert kinds & {"brackets", "inside_word", "text"}


# -- POPE ---------------------------------------------------------------------------------------
def pope_row(mode: str, case: dict, i: int = 0) -> dict:
    sample = PopeSample(f"random/{i}", "Is there a dog in the image?", case["target"], None, "x")
    return Pope(scoring=mode).score(sample, Generation(case["output"]), CTX)


@pytest.mark.parametrize(("mode", "case"), params("pope"))
def test_pope_modes(mode, case):
    want = case["expected"][mode]
    row = pope_row(mode, case)
    assert row["accuracy"] == want["correct"]
    assert row["pred"] == (want["pred"] if want["pred"] is not None else "no")


def test_pope_lmms_eval_equality_with_its_own_functions():
    ref = lmms("lmms_eval.tasks.pope.utils")
    cases = load("pope")
    theirs = [
        ref.pope_process_results({"question_id": i, "answer": c["target"]}, [c["output"]])
        for i, c in enumerate(cases)
    ]
    rows = [pope_row("lmms_eval", c, i) for i, c in enumerate(cases)]
    for row, got in zip(rows, theirs):
        assert row["pred"] == got["pope_accuracy"]["prediction"]
        assert row["accuracy"] == got["pope_accuracy"]["score"]
    ours = {m.name: m.value for m in Pope(scoring="lmms_eval").aggregate(rows)}
    for name, fn in (
        ("accuracy", ref.pope_aggregate_accuracy),
        ("precision", ref.pope_aggregate_precision),
        ("recall", ref.pope_aggregate_recall),
        ("f1_score", ref.pope_aggregate_f1_score),
        ("yes_ratio", ref.pope_aggregate_yes_ratio),
    ):
        want = fn([g[f"pope_{name}"] for g in theirs])
        assert ours[name.removesuffix("_score")] == pytest.approx(want, abs=1e-12)


def test_pope_official_aggregate_counts_unparsed_as_yes():
    rows = [
        pope_row("official", {"target": t, "output": o})
        for t, o in [("no", "I cannot tell."), ("yes", ""), ("no", "No."), ("yes", "no")]
    ]
    got = {m.name: m.value for m in Pope(scoring="official").aggregate(rows)}
    # preds yes, yes, no, no → TP 1, FP 1, TN 1, FN 1
    assert got["accuracy"] == 0.5 and got["precision"] == 0.5 and got["recall"] == 0.5
    assert got["yes_ratio"] == 0.5 and got["unparsed_rate"] == 0.5


# -- MMMU ---------------------------------------------------------------------------------------
def mmmu_sample(case: dict, i: int) -> MMMUSample:
    mc = case["question_type"] == "multiple-choice"
    return MMMUSample(
        doc_id=f"validation_Art_{i}",
        question="q",
        options=tuple(case["options"]) if mc else (),
        answer=case["target"] if mc else case["target"][0],
        golds=(case["target"],) if mc else tuple(case["target"]),
        question_type=case["question_type"],
        images=(),
        raw_answer=case["target"] if mc else case["raw_answer"],
    )


@pytest.mark.parametrize(("mode", "case"), params("mmmu"))
def test_mmmu_modes(mode, case):
    i = 3
    sample = mmmu_sample(case, i)
    row = MMMU(scoring=mode).score(sample, Generation(case["output"]), CTX)
    want = case["expected"][mode]
    if case["question_type"] == "open":
        assert row["accuracy"] == float(want)
        return
    letters = "ABCDEFGHIJ"[: len(case["options"])]
    if want is None:  # the seeded fallback, recorded
        assert row["fallback_rate"] == 1.0
        assert row["parsed"] == seeded_letter(letters, CTX.seed, sample.doc_id)
    else:
        assert row["fallback_rate"] == 0.0 and row["parsed"] == want
    assert row["accuracy"] == float(row["parsed"] == case["target"])


def test_mmmu_fallback_is_seeded_and_order_free():
    letters = "ABCD"
    draws = {seeded_letter(letters, 1, f"doc{i}") for i in range(40)}
    assert draws == set(letters)  # really random over documents
    assert [seeded_letter(letters, 1, "d") for _ in range(3)] == [
        seeded_letter(letters, 1, "d")
    ] * 3
    assert any(seeded_letter(letters, s, "d") != seeded_letter(letters, 0, "d") for s in range(9))
    assert "fallback" in MMMU().settings() and MMMU().settings()["scoring"] == "official"


def test_mmmu_lmms_eval_equality_with_its_own_functions(monkeypatch):
    ref = lmms("lmms_eval.tasks.mmmu.utils")
    monkeypatch.setattr(random, "choice", lambda seq: "<random>")
    task, results, rows = MMMU(scoring="lmms_eval"), [], []
    for i, case in enumerate(load("mmmu")):
        sample = mmmu_sample(case, i)
        doc = {
            "id": sample.doc_id,
            "question_type": case["question_type"],
            "options": repr(list(sample.options)),
            "answer": sample.raw_answer,
        }
        got = ref.mmmu_process_results(doc, [case["output"]])["mmmu_acc"]
        row = task.score(sample, Generation(case["output"]), CTX)
        if case["question_type"] == "multiple-choice":
            their = got["parsed_pred"][0]
            assert (their == "<random>") == bool(row["fallback_rate"])
            if their == "<random>":
                continue  # both fall back: lmms-eval unseeded, headscope seeded
            assert row["parsed"] == their
        _, metric = ref.evaluate_mmmu([got])
        assert row["accuracy"] == metric["acc"]
        results.append(got)
        rows.append(row)
    monkeypatch.undo()
    mean = sum(r["accuracy"] for r in rows) / len(rows)
    assert ref.mmmu_aggregate_results(results) == pytest.approx(round(mean, 5))


# -- Video-MME ----------------------------------------------------------------------------------
def vmme_sample(case: dict, i: int, duration: str = "short") -> VideoMMESample:
    return VideoMMESample(
        doc_id=f"{i:03d}-1",
        question="What fruit?",
        options=tuple(case["options"]),
        answer=case["target"],
        duration=duration,
        task_type="Counting Problem",
        domain="Knowledge",
        sub_category="Law",
    )


@pytest.mark.parametrize(("mode", "case"), params("videomme"))
def test_videomme_modes(mode, case):
    row = VideoMME(scoring=mode).score(vmme_sample(case, 0), Generation(case["output"]), CTX)
    want = case["expected"][mode] or None
    assert row["pred"] == want
    assert row["answered"] == float(want is not None)
    assert row["accuracy"] == float(want == case["target"])


def test_videomme_official_denominator_and_all_samples():
    task = VideoMME(scoring="official")
    replies = [("A", "A"), ("B", "C"), ("", "A"), ("I do not know.", "B")]
    rows = [
        task.score(
            vmme_sample({"options": ["a", "b", "c", "d"], "target": t}, i), Generation(o), CTX
        )
        for i, (o, t) in enumerate(replies)
    ]
    got = {m.name: (m.value, m.n) for m in task.aggregate(rows)}
    assert got["accuracy"] == (0.5, 2)  # 1 correct of 2 answered (no letter in "I do not know.")
    assert got["accuracy_all"] == (0.25, 4) and got["answered_rate"] == (0.5, 4)
    assert got["accuracy_short"] == (0.5, 2) and math.isnan(got["accuracy_long"][0])


def test_videomme_lmms_eval_equality_with_its_own_functions():
    ref = lmms("lmms_eval.tasks.videomme.utils")
    task, theirs, rows = VideoMME(scoring="lmms_eval"), [], []
    for i, case in enumerate(load("videomme")):
        duration = ("short", "medium", "long")[i % 3]
        sample = vmme_sample(case, i, duration)
        doc = {
            "question_id": sample.doc_id,
            "duration": duration,
            "domain": "Knowledge",
            "sub_category": "Law",
            "task_type": "Counting Problem",
            "answer": case["target"],
            "videoID": f"v{i}",
        }
        got = ref.videomme_process_results(doc, [case["output"]])["videomme_perception_score"]
        row = task.score(sample, Generation(case["output"]), CTX)
        assert (row["pred"] or "") == got["pred_answer"] and row["accuracy"] == got["score"]
        theirs.append(got)
        rows.append(row)
    ours = {m.name: m.value for m in task.aggregate(rows)}
    assert ours["accuracy"] * 100 == pytest.approx(ref.videomme_aggregate_results(theirs))


# -- MLVU ---------------------------------------------------------------------------------------
def mlvu_sample(case: dict, i: int, task_type: str = "count") -> MLVUSample:
    return MLVUSample(
        doc_id=str(i),
        question="Which vehicle?",
        options=tuple(case["options"]),
        answer=case["target"],
        task_type=task_type,
    )


@pytest.mark.parametrize(("mode", "case"), params("mlvu"))
def test_mlvu_modes(mode, case):
    row = MLVU(scoring=mode).score(mlvu_sample(case, 0), Generation(case["output"]), CTX)
    want = case["expected"][mode]
    if mode == "official":
        assert row["accuracy"] == float(want)
    else:
        assert row["pred"] == (want or None)
        assert row["accuracy"] == float(want == case["target"])


def test_mlvu_prompt_ends_with_the_primer():
    case = load("mlvu")[0]
    assert (
        MLVU().prompt(mlvu_sample(case, 0)).endswith("Only give the best option.\nBest option: (")
    )


def test_mlvu_lmms_eval_equality_with_its_own_functions():
    ref = lmms("lmms_eval.tasks.mlvu.utils")
    task, theirs, rows = MLVU(scoring="lmms_eval"), [], []
    for i, case in enumerate(load("mlvu")):
        kind = MLVU_TYPES[i % len(MLVU_TYPES)]
        doc = {"question": f"q{i}", "task_type": kind, "answer": case["target"]}
        got = ref.mlvu_process_results(doc, [case["output"]])["mlvu_percetion_score"]
        row = task.score(mlvu_sample(case, i, kind), Generation(case["output"]), CTX)
        assert (row["pred"] or "") == got["pred_answer"]
        theirs.append(got)
        rows.append(row)
    ours = {m.name: m.value for m in task.aggregate(rows)}
    assert ours["m_avg"] * 100 == pytest.approx(ref.mlvu_aggregate_results_dev(theirs))
    # Official mode averages only the types present.
    official = {m.name: m.value for m in MLVU(scoring="lenient").aggregate(rows)}
    present = [official[f"accuracy_{t}"] for t in MLVU_TYPES]
    assert official["m_avg"] == pytest.approx(sum(present) / len(present))


# -- the mode argument -------------------------------------------------------------------------
def test_unknown_or_unavailable_modes_are_refused_with_a_hint():
    with pytest.raises(ValueError, match="'lmms_eval'"):
        build_task("pope", {"scoring": "lmms-eval"})
    with pytest.raises(ValueError, match="did you mean 'lmms_eval'"):
        check_scoring("pope", "lmms-eval")
    with pytest.raises(ValueError, match="not available"):
        check_scoring("vidstg", "lmms_eval", ("lenient",))
    with pytest.raises(ValueError, match="random_fallback only applies"):
        build_task("mlvu", {"random_fallback": True})


@pytest.mark.parametrize("name", ["pope", "mmmu", "mlvu", "videomme"])
@pytest.mark.parametrize("mode", SCORING_MODES)
def test_mode_is_recorded_in_settings(name, mode):
    assert build_task(name, {"scoring": mode}).settings()["scoring"] == mode
    assert build_task(f"{name}_mini", {"scoring": mode}).settings()["scoring"] == mode


def test_mlvu_official_m_avg_is_the_release_s_avg_over_the_types_seen():
    """JUNJIE99/MLVU@fd060c1 evaluation/multiple_choice_evaluation/choice_bench.py, main():
    ``acc_dict[task_type]`` counts [correct, total] per type met; ``final_res[k] = v[0] / v[1]
    * 100``; ``Avg = sum / idx`` over those types only (two of the seven never occur here)."""
    task, rows, acc = MLVU(), [], {}
    for i, case in enumerate(load("mlvu")):
        kind = MLVU_TYPES[i % len(MLVU_TYPES)]
        row = task.score(mlvu_sample(case, i, kind), Generation(case["output"]), CTX)
        rows.append(row)
        counts = acc.setdefault(kind, [0, 0])
        counts[0] += int(row["accuracy"])
        counts[1] += 1
    total, idx = 0.0, 0
    for correct, seen in acc.values():  # the release's loop
        idx += 1
        total += correct / seen * 100
    ours = {m.name: m.value for m in task.aggregate(rows)}
    assert ours["m_avg"] * 100 == pytest.approx(total / idx, abs=1e-9)
    assert 0 < total / idx < 100 and len(acc) == 5  # mixed outcomes; five of the seven types
