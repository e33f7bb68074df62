"""Video task scoring, row normalisation and frame-index arithmetic (no decoding)."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.api.model import parse_box_text
from harness.api.payloads import Box, Generation
from harness.api.task import MetricValue, SampleError, ScoringContext
from harness.media.video import frame_positions_in_span, uniform_indices
from tasks.mlvu.task import MLVUSample, macro_average
from tasks.mlvu.task import normalise_row as mlvu_row
from tasks.videomme.task import normalise_row as videomme_row
from tasks.vidstg.data import VidSTGSample, normalise_entry, parse_span, tube_scores, vidor_box
from tests.fixtures.make_video_fixtures import mlvu_rows, videomme_rows

DATA = Path(__file__).resolve().parents[1] / "data" / "scoring"
VIDSTG = json.loads((DATA / "video_vidstg.json").read_text(encoding="utf-8"))
CHOICE = json.loads((DATA / "video_choice.json").read_text(encoding="utf-8"))
PIXELS = ScoringContext(parse_box=lambda text, size: parse_box_text(text, size, "pixels"))


def _tube(raw):
    return {int(f): Box(*b) for f, b in raw.items()}


# -- VidSTG ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", VIDSTG["tube_scores"], ids=lambda c: c["name"])
def test_tube_scores_cases(case):
    box = Box(*case["pred_box"]) if case["pred_box"] else None
    pos = tuple(case["pred_positions"]) if case["pred_positions"] else None
    got = tube_scores(case["shown"], tuple(case["span"]), _tube(case["tube"]), pos, box)
    if case["expected"] is None:
        assert got is None
    else:
        assert got == pytest.approx(tuple(case["expected"]), abs=VIDSTG["tolerance"])


@pytest.mark.parametrize("case", VIDSTG["score_text"], ids=lambda c: c["name"])
def test_vidstg_score_from_text(case):
    from tasks.vidstg.task import VidSTG

    spec = VIDSTG["score_text_sample"]
    task = VidSTG(scoring="lenient")
    task.shown_frames = lambda sample: tuple(spec["shown"])  # the frames a request showed
    sample = VidSTGSample(
        doc_id="v:0:d0", vid="v", sentence="s", sentence_type="declarative", target_id=0,
        target_category="c", segment=(0, 40), span=tuple(spec["span"]), tube=_tube(spec["tube"]),
        width=spec["width"], height=spec["height"], fps=10.0,
    )  # fmt: skip
    row = task.score(sample, Generation(case["text"]), PIXELS)
    assert row["evaluable"] is True
    assert (row["tIoU"], row["vIoU"]) == pytest.approx(tuple(case["expected"]), abs=1e-9)


@pytest.mark.parametrize("case", VIDSTG["parse_span"], ids=lambda c: c["text"])
def test_parse_span_cases(case):
    expected = tuple(case["expected"]) if case["expected"] else None
    assert parse_span(case["text"]) == expected


def test_vidstg_aggregate_by_sentence_type_and_evaluable():
    from tasks.vidstg.task import VidSTG

    rows = [
        {"sentence_type": "declarative", "evaluable": True, "tIoU": 1.0, "vIoU": 0.6},
        {"sentence_type": "declarative", "evaluable": True, "tIoU": 0.5, "vIoU": 0.3},
        {"sentence_type": "interrogative", "evaluable": True, "tIoU": 0.0, "vIoU": 0.0},
        {"sentence_type": "interrogative", "evaluable": False, "tIoU": None, "vIoU": None},
    ]
    got = {m.name: m for m in VidSTG(scoring="lenient").aggregate(rows)}
    assert {m.name for m in VidSTG.metrics} == set(got)
    assert got["m_tIoU"].value == pytest.approx(0.5) and got["m_tIoU"].n == 3
    assert got["m_vIoU"].value == pytest.approx(0.3)
    assert got["vIoU@0.3"].value == pytest.approx(1 / 3)  # strictly greater: 0.3 is not > 0.3
    assert got["vIoU@0.5"].value == pytest.approx(1 / 3)
    assert got["m_tIoU_declarative"].value == pytest.approx(0.75)
    assert got["m_tIoU_interrogative"].n == 1
    assert got["evaluable"].value == pytest.approx(0.75) and got["evaluable"].n == 4


def _entry(**over):
    entry = {
        "vid": "v1", "fps": 10.0, "frame_count": 20, "width": 64, "height": 48,
        "subject/objects": [{"tid": 0, "category": "dog"}, {"tid": 1, "category": "ball"}],
        "used_segment": {"begin_fid": 2, "end_fid": 18},
        "used_relation": {"subject_tid": 0, "object_tid": 1, "predicate": "chase"},
        "temporal_gt": {"begin_fid": 5, "end_fid": 9},
        "captions": [{"description": "a dog chases a ball.", "type": "dog", "target_id": 0}],
        "questions": [{"description": "what chases the ball?", "type": "dog", "target_id": 0}],
    }  # fmt: skip
    entry.update(over)
    return entry


def _traj(n=20, tid=0):
    bbox = {"xmin": 1, "ymin": 2, "xmax": 11, "ymax": 22}
    return [[{"tid": tid, "bbox": dict(bbox, xmin=f), "generated": 0}] for f in range(n)]


def test_normalise_entry_conventions():
    samples = normalise_entry(_entry(), _traj(), "e0", entry_index=3)
    assert [s.doc_id for s in samples] == ["v1:3:d0", "v1:3:i0"]
    s = samples[0]
    assert s.segment == (2, 18) and s.span == (5, 9)  # end exclusive, kept as-is
    assert sorted(s.tube) == [5, 6, 7, 8]  # frame 9 is outside the exclusive end
    assert s.tube[7] == Box(7, 2, 11, 22)  # VidOR xmin.. → xyxy pixels
    assert (s.sentence_type, samples[1].sentence_type) == ("declarative", "interrogative")
    assert s.target_category == "dog"


@pytest.mark.parametrize(
    "over, match",
    [
        ({"temporal_gt": {"begin_fid": 9, "end_fid": 5}}, "not after start frame"),
        ({"temporal_gt": {"begin_fid": 5, "end_fid": 5}}, "not after start frame"),
        ({"temporal_gt": {"begin_fid": 0, "end_fid": 9}}, "outside used_segment"),
        ({"captions": [{"description": "x", "target_id": 7}]}, "target_id 7"),
        ({"questions": None}, "missing field"),
        ({"used_segment": {"begin": 0}}, "begin_fid"),
    ],
)
def test_normalise_entry_malformed_rows_name_the_row(over, match):
    with pytest.raises(SampleError, match=match) as err:
        normalise_entry(_entry(**over), _traj(), "vidstg val entry 4")
    assert "vidstg val entry 4" in str(err.value)


def test_missing_or_degenerate_gt_boxes_are_errors():
    traj = _traj()
    traj[6] = []
    with pytest.raises(SampleError, match="no box in frame 6"):
        normalise_entry(_entry(), traj, "row")
    with pytest.raises(SampleError, match="bad box"):
        vidor_box({"xmin": 5, "ymin": 5, "xmax": 5, "ymax": 9}, "row")


_JUNK = st.one_of(
    st.none(), st.integers(-5, 50), st.text(max_size=4), st.lists(st.integers(-2, 30), max_size=3),
    st.dictionaries(st.sampled_from(["begin_fid", "end_fid", "tid"]), st.integers(-3, 30)),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(sorted(_entry())), value=_JUNK, drop=st.booleans())
def test_fuzz_vidstg_normaliser_only_raises_sample_error(key, value, drop):
    entry = _entry()
    if drop:
        del entry[key]
    else:
        entry[key] = value
    try:
        samples = normalise_entry(entry, _traj(), "fuzz")
    except SampleError as exc:
        assert "fuzz" in str(exc)
        return
    for s in samples:  # whatever got through is consistent
        assert s.segment[0] <= s.span[0] < s.span[1] <= s.segment[1]
        assert sorted(s.tube) == list(range(*s.span))


@settings(max_examples=60, deadline=None)
@given(
    begin=st.integers(0, 40), length=st.integers(1, 40), n=st.integers(1, 20), a=st.integers(0, 80)
)
def test_uniform_indices_properties(begin, length, n, a):
    idx = uniform_indices(begin, begin + length, n)
    assert len(idx) == min(n, length)
    assert all(begin <= i < begin + length for i in idx)
    assert list(idx) == sorted(set(idx))  # strictly increasing, no duplicate frames
    pos = frame_positions_in_span(idx, a, a + 10)
    assert pos == [p for p, f in enumerate(idx) if a <= f < a + 10]


def test_uniform_indices_values():
    assert uniform_indices(0, 48, 4) == (6, 18, 30, 42)  # centres of 12-frame segments
    assert uniform_indices(20, 44, 4) == (23, 29, 35, 41)
    assert uniform_indices(0, 3, 8) == (0, 1, 2)  # capped: every frame once
    with pytest.raises(ValueError):
        uniform_indices(5, 5, 2)


# -- MLVU / Video-MME -----------------------------------------------------------------------
def _mv(triple, i):
    value, err, n = triple
    return MetricValue(f"t{i}", float("nan") if value is None else value, err, n)


@pytest.mark.parametrize("case", CHOICE["macro_average"], ids=lambda c: c["name"])
def test_mlvu_macro_average_cases(case):
    got = macro_average([_mv(t, i) for i, t in enumerate(case["per_type"])])
    value, err, n = case["expected"]
    assert got.n == n
    if value is None:
        assert math.isnan(got.value)
    else:
        assert got.value == pytest.approx(value, abs=CHOICE["tolerance"])
    assert (got.stderr is None) == (err is None)
    if err is not None:
        assert got.stderr == pytest.approx(err, abs=CHOICE["tolerance"])


@pytest.mark.parametrize("case", CHOICE["letters"], ids=lambda c: c["output"])
def test_choice_scoring_cases(case):
    from tasks.mlvu.task import MLVU

    sample = MLVUSample("q1", "q?", tuple(CHOICE["options"]), CHOICE["answer"], "count")
    row = MLVU(scoring="lenient").score(sample, Generation(case["output"]), PIXELS)
    assert row["pred"] == case["pred"]
    assert row["accuracy"] == case["accuracy"]
    assert row["task_type"] == "count"


def test_random_fallback_is_seeded_and_deterministic():
    from tasks.videomme.task import VideoMME

    sample = MLVUSample("q1", "q?", tuple(CHOICE["options"]), "A", "count")
    task = VideoMME(random_fallback=True, scoring="lenient")
    preds = {task.score(sample, Generation("no idea"), PIXELS)["pred"] for _ in range(3)}
    assert len(preds) == 1 and preds <= set("ABCD")


def test_mlvu_rows_normalise_answer_text_to_letter():
    samples = [mlvu_row(r, f"row {i}") for i, r in enumerate(mlvu_rows())]
    assert [s.answer for s in samples] == ["A", "B", "B", "A", "A", "A", "A"]
    assert samples[0].options == ("red", "green", "blue", "yellow")
    row = dict(mlvu_rows()[0], candidates=str(mlvu_rows()[0]["candidates"]))  # string repr
    assert mlvu_row(row, "r").options == samples[0].options


@pytest.mark.parametrize(
    "over, match",
    [
        ({"answer": "purple"}, "not one of the candidates"),
        ({"candidates": "red, green"}, "not a list"),
        ({"candidates": ["only"]}, "candidates"),
        ({"question": None}, "missing field"),
    ],
)
def test_mlvu_malformed_rows(over, match):
    with pytest.raises(SampleError, match=match) as err:
        mlvu_row(dict(mlvu_rows()[0], **over), "mlvu row 0 (question_id='plotQA_0')")
    assert "mlvu row 0" in str(err.value)


def test_videomme_rows_split_option_letters():
    s = videomme_row(videomme_rows()[1], "row 1")
    assert s.options == ("0", "1", "2", "3") and s.answer == "B" and s.duration == "short"
    assert s.doc_id == "001-2" and s.video_name == "fixture1"


@pytest.mark.parametrize(
    "over, match",
    [
        ({"options": ["red", "green", "blue", "black"]}, "options are not"),
        ({"options": ["A. red", "C. green", "B. blue", "D. black"]}, "options are not"),
        ({"options": ["A. red", "B. green", "C. blue"]}, "options are not"),
        ({"answer": "E"}, "not a letter"),
        ({"duration": "huge"}, "duration"),
        ({"videoID": None}, "missing field"),
    ],
)
def test_videomme_malformed_rows(over, match):
    with pytest.raises(SampleError, match=match) as err:
        videomme_row(dict(videomme_rows()[0], **over), "videomme row 0 (question_id='001-1')")
    assert "videomme row 0" in str(err.value)


_ROW_JUNK = st.one_of(
    st.none(), st.integers(-3, 9), st.text(max_size=6), st.lists(st.text(max_size=5), max_size=5)
)


@settings(max_examples=60, deadline=None)
@given(which=st.sampled_from(["mlvu", "videomme"]), k=st.integers(0, 50),
       value=_ROW_JUNK, drop=st.booleans())  # fmt: skip
def test_fuzz_choice_normalisers_only_raise_sample_error(which, k, value, drop):
    base = (mlvu_rows() if which == "mlvu" else videomme_rows())[0]
    key = sorted(base)[k % len(base)]
    row = dict(base)
    if drop:
        del row[key]
    else:
        row[key] = value
    fn = mlvu_row if which == "mlvu" else videomme_row
    try:
        sample = fn(row, "fuzz row")
    except SampleError as exc:
        assert "fuzz row" in str(exc)
        return
    assert sample.answer in "ABCDEFGHIJ"[: len(sample.options)]


def test_missing_pyav_gives_the_install_hint(monkeypatch, tmp_path):
    import sys

    from harness.media.video import sample_frames

    monkeypatch.setitem(sys.modules, "av", None)  # makes `import av` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'headscope\[video\]'"):
        sample_frames(tmp_path / "x.mp4", 4)


MLVU_GOLD = json.loads((DATA / "mlvu_gold_letter.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", MLVU_GOLD["cases"], ids=lambda c: c["kind"])
def test_mlvu_gold_letter_equals_the_release_qa_template(case):
    # Expected letters come from running JUNJIE99/MLVU's choice_bench.py MLVU.qa_template
    # (regen_modes.py): the LAST candidate equal to the answer.
    row = dict(mlvu_rows()[0], candidates=case["candidates"], answer=case["answer"])
    assert mlvu_row(row, "r").answer == case["letter"]
