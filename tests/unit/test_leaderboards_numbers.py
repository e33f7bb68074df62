"""Numbers a results file cannot hold are refused, and so is a metric without definition."""

from __future__ import annotations

import json

import pytest

from harness.api.registry import TASKS
from harness.cli import main as cli
from harness.schema.results import (
    MetricDefRecord,
    MetricRecord,
    ResultEntry,
    ResultsError,
    RunResults,
    load_results,
)
from leaderboards.accuracy import accuracy_table
from leaderboards.settings import MergeError
from leaderboards.sources import load_sources


def _save(path, metrics, defs, n_samples=8):
    res = RunResults(
        spec_passed={},
        spec_resolved={},
        headscope_version="0",
        git={},
        environment={},
        model={"family": "toy", "pretrained": "toy"},
        settings={},
        metric_defs={"pope": defs},
        entries=[
            ResultEntry(
                task="pope",
                task_args={},
                split="test",
                task_settings={"scoring": "official"},
                intervention="none",
                intervention_spec={"name": "none", "args": {}},
                intervention_resolved={},
                metrics=metrics,
                n_samples=n_samples,
            )
        ],
    )
    path.mkdir(parents=True, exist_ok=True)
    res.save(path / "results.json")
    return path


SHARE = MetricDefRecord("accuracy", True, "share", bounds=[0.0, 1.0])


@pytest.mark.parametrize(
    ("metrics", "n_samples", "message"),
    [
        ([MetricRecord("accuracy", 0.5, 0.1, -3)], 8, "has n = -3; a count cannot be < 0"),
        ([MetricRecord("accuracy", 0.5, 0.1, 8)], -1, "n_samples is -1, a count cannot be < 0"),
        ([MetricRecord("accuracy", 0.5, -0.1, 8)], 8, "has stderr -0.1 < 0"),
        ([MetricRecord("accuracy", 1.5, 0.1, 8)], 8, "is 1.5, outside its declared range"),
        ([MetricRecord("accuracy", -0.2, 0.1, 8)], 8, "is -0.2, outside its declared range"),
    ],
)
def test_impossible_numbers_are_refused(tmp_path, capsys, metrics, n_samples, message):
    run = _save(tmp_path / "run", metrics, [SHARE], n_samples)
    with pytest.raises(ResultsError, match=message):
        load_results(run)
    assert cli.main(["leaderboard", str(run), "--quiet"]) == 2  # was 0, the number shown
    err = capsys.readouterr().err
    assert message in err and "pope/none" in err


def test_open_and_undeclared_bounds_accept_any_value(tmp_path):
    defs = [
        MetricDefRecord("layout_recall", True, "sums overlaps", bounds=[0.0, None]),
        MetricDefRecord("length", False, "chars"),
    ]
    metrics = [MetricRecord("layout_recall", 1.7, None, 8), MetricRecord("length", 312.0, 2, 8)]
    assert load_results(_save(tmp_path / "run", metrics, defs)).entries[0].metrics == metrics


def test_a_metric_without_definition_is_refused(tmp_path, capsys):
    metrics = [MetricRecord("accuracy", 0.5, 0.1, 8), MetricRecord("mystery", 0.7, None, 8)]
    run = _save(tmp_path / "run", metrics, [SHARE])
    assert cli.main(["leaderboard", str(run), "--all-metrics", "--quiet"]) == 2  # was 0,
    err = capsys.readouterr().err  # a row labelled "no definition"
    assert "pope/none holds metric 'mystery'" in err and "defined: ['accuracy']" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(MergeError, match="defined: none"):
        load_sources([_save(tmp_path / "bare", metrics[1:], [])])
    companions = [*metrics[:1], MetricRecord("accuracy_ci_low", 0.4, None, 8)]
    (row,) = accuracy_table(load_sources([_save(tmp_path / "ci", companions, [SHARE])]).runs).rows
    assert (row["better"], row["ci_low"]) == ("higher", 0.4)  # a declared metric's CI


def test_built_in_tasks_declare_their_bounds_and_runs_record_them(tmp_path):
    from harness.api.task import build_task

    built_in = [n for n in TASKS.names() if TASKS.get(n).__module__.startswith("tasks.")]
    assert len(built_in) >= 16
    for name in built_in:
        for metric in build_task(name, {}).metrics:
            assert metric.bounds is not None, f"{name}/{metric.name}"
    layout = build_task("mmdocir", {"level": "layout"}).metrics  # official sums overlaps
    assert {m.bounds for m in layout if m.name.startswith("layout")} == {(0.0, None)}
    lenient = build_task("mmdocir", {"level": "layout", "scoring": "lenient"}).metrics
    assert {m.bounds for m in lenient} == {(0.0, 1.0)}
    out = tmp_path / "run"
    argv = ["run", "--tasks", "pope_mini", "--limit", "2", "--interventions", "none"]
    assert cli.main([*argv, "--output", str(out)]) == 0
    defs = json.loads((out / "results.json").read_text())["metric_defs"]["pope_mini"]
    assert {tuple(d["bounds"]) for d in defs} == {(0.0, 1.0)}
