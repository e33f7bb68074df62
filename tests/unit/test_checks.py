"""The typed validation layer, result files (types, JSON validity, file mode) and the seed."""

from __future__ import annotations

import json
import math
import os
import stat
from typing import Any, Literal

import pytest

from harness.api.checks import TypeMismatch, check_value, matches
from harness.api.intervention import InterventionError, build_intervention
from harness.api.payloads import Box, EvidenceError
from harness.api.specs import InterventionSpec, RunSpec, SpecError, TaskSpec
from harness.schema.results import ResultsError, RunResults, write_json_atomic
from harness.schema.samples import SampleLog

# (value, hint, accepted)
TYPE_CASES = [
    (1, int, True), (True, int, False), (2.5, int, False), ("1", int, False),
    (1, float, True), (0.5, float, True), (math.inf, float, False), (math.nan, float, False),
    (True, float, False), (True, bool, True), ("no", bool, False), (0, bool, False),
    ("x", str, True), (None, str, False), (None, str | None, True), (3, int | None, True),
    ({"a": 1}, dict[str, Any], True), ([1, 2], dict[str, Any], False),
    ("k=1", dict[str, Any], False), ({1: "a"}, dict[str, Any], False),
    ([1, 2], tuple[int, ...], True), ((1, "a"), tuple[int, ...], False),
    ("ab", list[str], False), (["a"], list[str], True), ("top", Literal["top", "bottom"], True),
    ("TOP", Literal["top", "bottom"], False), (1, Literal["1"], False), (object(), Any, True),
]  # fmt: skip


@pytest.mark.parametrize(("value", "hint", "ok"), TYPE_CASES)
def test_matches_is_strict_about_json_values(value, hint, ok):
    assert matches(value, hint) is ok


def test_check_value_names_the_field_and_the_type():
    with pytest.raises(
        TypeMismatch, match=r"run file: seed must be an integer, got 'zero' \(str\)"
    ):
        check_value("zero", int, "run file: seed")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"tasks": ["pope"], "seed": "zero"}, "seed must be an integer"),
        ({"tasks": ["pope"], "seed": 1.0}, "seed must be an integer"),
        ({"tasks": ["pope"], "skip_bad_docs": "no"}, "skip_bad_docs must be true/false"),
        ({"tasks": ["pope"], "output": 7}, "output must be a string"),
        ({"tasks": [{"name": "pope", "limit": True}]}, "tasks[0]: limit"),
        ({"tasks": [{"name": "pope", "split": ["val"]}]}, "tasks[0]: split"),
        ({"tasks": [{"name": ""}]}, "task name is empty"),
        ({"tasks": ["pope"], "model": {"device": 0}}, "model: device must be a string"),
        ({"tasks": ["pope"], "model": {"args": "x"}}, "model: args must be a mapping"),
        ({"tasks": ["pope"], "interventions": [{"name": "ablate", "args": None}]}, "args"),
        ({"tasks": ["pope"], "interventions": [{"name": 3}]}, "name must be a string"),
        ({"tasks": ["pope"], "seed": -1}, "seed must be an integer ≥ 0"),
        ({"tasks": [{"name": "pope"}, {"name": "pope"}]}, "listed twice"),
    ],
)
def test_run_spec_types_are_checked_with_the_field_named(data, message):
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("]", r"\]")):
        RunSpec.from_dict(data)


def test_specs_built_in_code_are_checked_too():
    with pytest.raises(SpecError, match="limit"):
        TaskSpec("pope", limit=2.5)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="args"):
        InterventionSpec("ablate", args="k=1")  # type: ignore[arg-type]


def test_run_seed_drives_interventions_that_do_not_set_their_own():
    spec = InterventionSpec("ablate", {"select": "random", "k": 2})
    assert build_intervention(spec, default_seed=7).seed == 7
    assert build_intervention(spec).seed == 0
    own = InterventionSpec("ablate", {"select": "random", "k": 2, "seed": 3})
    assert build_intervention(own, default_seed=7).seed == 3
    assert build_intervention(InterventionSpec("none"), default_seed=7).args() == {}
    with pytest.raises(InterventionError, match="seed must be an integer"):
        build_intervention(InterventionSpec("ablate", {"select": "random", "seed": "x"}))


def test_seed_changes_random_draws_end_to_end(tmp_path):
    from harness.run.evaluator import run_grid

    heads = []
    for seed in (0, 1):
        spec = RunSpec(
            tasks=(TaskSpec("pope_mini", args={"n": 1}),),
            interventions=(InterventionSpec("ablate", {"select": "random", "k": 3}),),
            seed=seed,
            output=str(tmp_path / f"s{seed}"),
        )
        entry = run_grid(spec).entries[0]
        assert entry.intervention_resolved["seed"] == seed
        heads.append(entry.intervention_resolved["heads"])
    assert heads[0] != heads[1]


def test_box_refuses_non_finite_coordinates():
    with pytest.raises(EvidenceError, match="non-finite"):
        Box(0, 0, math.inf, 4)
    with pytest.raises(EvidenceError, match="non-finite"):
        Box(math.nan, 0, 1, 4)


def _results(value: Any) -> dict[str, Any]:
    return {
        "schema": "headscope.results",
        "schema_version": 1,
        "spec_passed": {},
        "spec_resolved": {},
        "headscope_version": "0",
        "git": {},
        "environment": {},
        "model": {},
        "settings": {},
        "metric_defs": {"t": [{"name": "acc", "higher_is_better": True}]},
        "entries": [
            {
                "task": "t",
                "task_args": {},
                "split": None,
                "task_settings": {},
                "intervention": "none",
                "intervention_spec": {},
                "intervention_resolved": {},
                "metrics": [{"name": "acc", "value": value, "stderr": None, "n": 3}],
                "n_samples": 3,
            }
        ],
    }


def test_results_file_values_are_type_checked():
    assert RunResults.from_dict(_results(0.5)).entries[0].metrics[0].value == 0.5
    assert RunResults.from_dict(_results(None)).entries[0].metrics[0].value is None
    for bad in ("0.5", [0.5], True):
        with pytest.raises(ResultsError, match=r"entries\[0\] \(t/none\) metric 0: value"):
            RunResults.from_dict(_results(bad), where="x.json")
    broken = _results(0.5)
    broken["entries"][0]["metrics"] = "acc=0.5"
    with pytest.raises(ResultsError, match="metrics: expected a list"):
        RunResults.from_dict(broken)


def test_non_finite_numbers_are_written_as_json_null(tmp_path):
    log = SampleLog(tmp_path / "s.jsonl")
    log.append({"doc_id": "a", "scores": {"w": math.inf, "x": math.nan, "y": [1.0, -math.inf]}})
    text = (tmp_path / "s.jsonl").read_text()
    assert json.loads(text, parse_constant=lambda c: pytest.fail(c)) == {
        "doc_id": "a",
        "scores": {"w": None, "x": None, "y": [1.0, None]},
    }
    write_json_atomic(tmp_path / "r.json", {"v": math.nan})
    assert json.loads((tmp_path / "r.json").read_text()) == {"v": None}
    with pytest.raises(ValueError):
        write_json_atomic(tmp_path / "strict.json", {"v": math.nan}, allow_nan=False)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_result_files_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        write_json_atomic(tmp_path / "r.json", {"a": 1})
        log = SampleLog(tmp_path / "s.jsonl")
        log.append({"doc_id": "a"})
        log.rewrite([{"doc_id": "b"}])
    finally:
        os.umask(old)
    for name in ("r.json", "s.jsonl"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask


def test_sample_log_reports_damage_instead_of_truncating_it(tmp_path):
    path = tmp_path / "s.jsonl"
    good = '{"doc_id": "a"}\n{"doc_id": "b"}\n'
    path.write_text(good + '{"doc_id": "c", "out')  # torn tail of a crash: dropped
    assert [r["doc_id"] for r in SampleLog(path).read()] == ["a", "b"]
    assert path.read_text() == good
    path.write_text('{"doc_id": "a"}\nnot json\n{"doc_id": "b"}\n')
    with pytest.raises(ResultsError, match=r"s\.jsonl: line 2 is not valid JSON"):
        SampleLog(path).read()
    path.write_text('{"doc_id": "a"}\n[1, 2]\n{"doc_id": "b"}\n')
    with pytest.raises(ResultsError, match=r"line 2 is not a sample row"):
        SampleLog(path).read()
    assert path.read_text().count("\n") == 3  # nothing truncated away


def test_oversized_video_frames_are_refused_before_decoding():
    from pathlib import Path
    from types import SimpleNamespace

    from harness.api.task import SampleError
    from harness.media.video import _check_frame_size

    _check_frame_size(SimpleNamespace(width=1920, height=1080), Path("ok.mp4"))
    with pytest.raises(SampleError, match=r"big\.mp4.*30000×30000 frames.*too large"):
        _check_frame_size(SimpleNamespace(width=30000, height=30000), Path("big.mp4"))


def test_oversized_pdf_pages_are_refused_before_rendering(tmp_path):
    pytest.importorskip("pymupdf")
    from harness.api.task import SampleError
    from harness.media.pdf import render_pages
    from tests.fixtures.make_image_doc_fixtures import make_pdf

    make_pdf(tmp_path / "huge.pdf", 1, size=(14400, 14400))  # 200 × 200 inches
    with pytest.raises(SampleError, match=r"huge\.pdf.*page 0 would render to 28800×28800"):
        render_pages(tmp_path / "huge.pdf", dpi=144)
    assert render_pages(tmp_path / "huge.pdf", dpi=1)[0].size == (200, 200)


def test_unwritable_output_is_named_without_writing(tmp_path, monkeypatch):
    from harness.schema.writes import OutputDirError, check_writable

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: str(path) != str(tmp_path / "ro"))
    with pytest.raises(OutputDirError, match=r"ro/new/run' is not writable \(its parent .*ro'"):
        check_writable(tmp_path / "ro" / "new" / "run")
    with pytest.raises(OutputDirError, match=r"ro' is not writable$"):
        check_writable(tmp_path / "ro")
    assert not (tmp_path / "ro" / "new").exists()
    check_writable(tmp_path / "ok" / "run")  # a missing path under a writable folder is fine


def test_a_near_miss_of_a_literal_string_gets_a_did_you_mean():
    hint = Literal["official", "lmms_eval", "lenient"] | None
    with pytest.raises(TypeMismatch, match=r"got 'offical' \(str\); did you mean 'official'\?"):
        check_value("offical", hint, "scoring")
    with pytest.raises(TypeMismatch) as far:
        check_value("zzz", hint, "scoring")
    assert "did you mean" not in str(far.value)
