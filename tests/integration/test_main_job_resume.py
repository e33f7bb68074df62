"""A main job stopped anywhere resumes, and never reuses a ranking made for something else.

Issue 29: a job stopped in stage 1 resumes (it was refused: only timings.json was there); a
ranking made with other settings is refused, not silently applied; figures a stopped run did
not draw are drawn on resume; a moved main-job directory resumes.
"""

from __future__ import annotations

import json
import shutil

import pytest

from harness.cli import main as cli
from harness.probes import rank as rank_module
from harness.run import evaluator, main_job
from tests.integration._main_job_util import SmallConfig


def _argv(out, *extra):
    return ["run", "--tasks", "refcocog_mini", "--limit", "2", "--output", str(out), *extra]


def _stop(*_a, **_k):
    raise KeyboardInterrupt


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(main_job, "ProtocolConfig", SmallConfig)


def test_stopped_in_stage_1_resumes(tmp_path, small, monkeypatch, capsys):
    """Before: the rerun was refused ("not empty and holds no main-job output")."""
    out = tmp_path / "out"
    with monkeypatch.context() as m:
        m.setattr(rank_module, "run_rank", _stop)
        assert cli.main(_argv(out)) == 130
    assert not (out / "rank" / "ranking.json").exists()
    assert cli.main(_argv(out)) == 0, capsys.readouterr().err
    assert (out / "summary.json").is_file()


def test_a_ranking_made_for_other_settings_is_not_reused(tmp_path, small, monkeypatch, capsys):
    """Before: stopped after stage 1, a rerun with another seed reused the seed-0 ranking."""
    out = tmp_path / "out"
    with monkeypatch.context() as m:
        m.setattr(evaluator, "run_grid", _stop)
        assert cli.main(_argv(out)) == 130
    assert (out / "rank" / "ranking.json").is_file()
    capsys.readouterr()
    assert cli.main(_argv(out, "--seed", "1")) == 2
    err = capsys.readouterr().err
    assert "ranking.json' was made for another main job (it differs in: seed)" in err
    assert "to rank again, or choose a new --output" in err
    assert not (out / "accuracy").exists()


def test_missing_figures_are_drawn_and_a_moved_job_resumes(tmp_path, small, capsys):
    """Before: figures of a stage found done were never drawn; the moved job was refused
    because the ranking's absolute path was part of the accuracy run's identity."""
    first = tmp_path / "a" / "out"
    assert cli.main(_argv(first)) == 0
    figures = [
        first / "rank" / "heatmaps" / "combined.pdf",
        first / "diagnose" / "plots" / "diagnostics_code.png",
    ]
    timings = json.loads((first / "timings.json").read_text())
    for path in figures:
        assert path.is_file()
        path.unlink()
    moved = tmp_path / "b" / "out"
    shutil.move(tmp_path / "a", tmp_path / "b")
    capsys.readouterr()
    assert cli.main(_argv(moved)) == 0, capsys.readouterr().err
    for path in figures:
        assert (moved / path.relative_to(first)).is_file()
    assert json.loads((moved / "timings.json").read_text()) == timings  # nothing was redone


def test_a_rescored_job_resumes_with_its_own_mode_and_cleans_temp_files(tmp_path, small, capsys):
    """The leaderboard refuses a run folder holding results.json and rescored copies unless a
    mode is declared; the main job declares the mode its own results were scored in."""
    out = tmp_path / "out"
    assert cli.main(_argv(out)) == 0
    assert cli.main(["rescore", str(out / "accuracy"), "--scoring", "lenient"]) == 0
    before = (out / "leaderboards" / "accuracy.csv").read_text()
    stray = out / ".timings.json.q8w1e2r3.tmp"  # a job killed while it rewrote timings.json
    stray.write_text('{"load_s": ')
    capsys.readouterr()
    assert cli.main(_argv(out)) == 0, capsys.readouterr().err  # every stage found done
    assert (out / "leaderboards" / "accuracy.csv").read_text() == before  # official, as before
    assert not stray.exists()  # removed by the resumed job (was: left for good)
