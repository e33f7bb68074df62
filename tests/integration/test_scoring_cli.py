"""Each scoring mode is selectable from the CLI, changes the numbers, and is recorded."""

from __future__ import annotations

import json

import pytest

from harness.cli import main as cli
from harness.testing.mock import ScriptedAdapter


@pytest.fixture
def says_yes_dot(monkeypatch):
    """`run` uses a scripted model that answers every question "Yes."."""
    import harness.api.model as base
    from harness.api.registry import MODEL_FAMILIES

    MODEL_FAMILIES.discover()
    monkeypatch.setitem(MODEL_FAMILIES._entries, "toy", ScriptedAdapter)
    monkeypatch.setattr(base, "load_adapter", lambda spec: ScriptedAdapter(lambda r: "Yes."))


@pytest.mark.parametrize(
    ("mode", "accuracy"),
    # "Yes." is yes for POPE's evaluate.py and for the lenient rule, but not equal to "yes"
    # for lmms-eval's exact match.
    [("official", None), ("lmms_eval", 0.0), ("lenient", None)],
)
def test_scoring_mode_from_the_cli_is_used_and_recorded(tmp_path, says_yes_dot, mode, accuracy):
    out = tmp_path / mode
    argv = ["run", "--tasks", "pope_mini", "--limit", "6", "--interventions", "none"]
    argv += ["--task-args", json.dumps({"pope_mini": {"scoring": mode}}), "--output", str(out)]
    assert cli.main(argv) == 0
    entry = json.loads((out / "results.json").read_text())["entries"][0]
    assert entry["task_settings"]["scoring"] == mode
    metrics = {m["name"]: m["value"] for m in entry["metrics"]}
    (log,) = (out / "samples").glob("pope_mini*__none.jsonl")
    rows = [json.loads(x) for x in log.open()]
    truth = [r["target"] == "yes" for r in rows]
    want = accuracy if accuracy is not None else sum(truth) / len(truth)
    assert metrics["accuracy"] == pytest.approx(want)
    assert 0 < sum(truth) < len(truth)  # both answers present: the modes really differ


def _run(out, mode="official", task="pope_mini", extra=()):
    argv = ["run", "--tasks", task, "--limit", "6", "--interventions", "none", *extra]
    argv += ["--task-args", json.dumps({task: {"scoring": mode}}), "--output", str(out)]
    assert cli.main(argv) == 0
    return json.loads((out / "results.json").read_text())


def test_rescore_writes_a_new_file_beside_the_old_one(tmp_path, says_yes_dot, capsys):
    out = tmp_path / "run"
    before = _run(out)
    old_text = (out / "results.json").read_text()
    assert cli.main(["rescore", str(out), "--scoring", "lmms_eval"]) == 0
    assert "results.scoring-lmms_eval.json" in capsys.readouterr().out
    assert (out / "results.json").read_text() == old_text  # the old file is untouched
    new = json.loads((out / "results.scoring-lmms_eval.json").read_text())
    entry = new["entries"][0]
    assert entry["task_settings"]["scoring"] == "lmms_eval"
    assert entry["task_args"]["scoring"] == "lmms_eval"
    assert new["settings"]["rescored_from"] == "results.json"
    metrics = {m["name"]: m["value"] for m in entry["metrics"]}
    assert metrics["accuracy"] == 0.0 and entry["n_samples"] == 6  # "Yes." != "yes"
    # Rescoring under the run's own mode reproduces its numbers exactly.
    assert cli.main(["rescore", str(out), "--scoring", "official"]) == 0
    again = json.loads((out / "results.scoring-official.json").read_text())["entries"][0]
    assert again["metrics"] == before["entries"][0]["metrics"]


def test_rescore_refuses_unknown_modes_and_missing_runs(tmp_path, says_yes_dot, capsys):
    out = tmp_path / "run"
    _run(out)
    assert cli.main(["rescore", str(out), "--scoring", "offical"]) == 2
    assert "did you mean 'official'" in capsys.readouterr().err
    assert cli.main(["rescore", str(tmp_path / "nothing"), "--scoring", "lenient"]) == 2
    assert "no results.json" in capsys.readouterr().err
    assert cli.main(["rescore", str(out), "--scoring", "lenient", "--tasks", "mmmu"]) == 2
    assert "not in" in capsys.readouterr().err


def test_rescore_scores_a_predict_only_run(tmp_path, says_yes_dot):
    out = tmp_path / "run"
    before = _run(out, extra=["--predict-only"])
    assert before["entries"][0]["metrics"] == []
    assert cli.main(["rescore", str(out), "--scoring", "lenient"]) == 0
    entry = json.loads((out / "results.scoring-lenient.json").read_text())["entries"][0]
    assert {m["name"] for m in entry["metrics"]} >= {"accuracy", "f1"}
    assert entry["n_samples"] == 6


def test_rescore_task_args_are_merged_and_recorded(tmp_path, says_yes_dot, capsys):
    out = tmp_path / "run"
    _run(out)
    extra = json.dumps({"pope_mini": {"subset": "all"}})
    assert cli.main(["rescore", str(out), "--scoring", "lenient", "--task-args", extra]) == 2
    assert "pope_mini" in capsys.readouterr().err  # pope_mini takes no subset: refused, named
    assert cli.main(["rescore", str(out), "--scoring", "lenient", "--task-args", "[1]"]) == 2
    extra = json.dumps({"mmmu": {"scoring": "official"}})
    assert cli.main(["rescore", str(out), "--scoring", "lenient", "--task-args", extra]) == 2
    assert "not in" in capsys.readouterr().err
    extra = json.dumps({"pope_mini": {"seed": 0}})
    assert cli.main(["rescore", str(out), "--scoring", "lenient", "--task-args", extra]) == 0
    entry = json.loads((out / "results.scoring-lenient.json").read_text())["entries"][0]
    assert entry["task_args"] == {"scoring": "lenient", "seed": 0}
