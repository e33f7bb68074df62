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

    monkeypatch.setattr(base, "load_adapter", lambda spec: ScriptedAdapter(lambda r: "Yes."))
    with MODEL_FAMILIES.temporary("toy", ScriptedAdapter, replace=True):
        yield


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


def test_rescore_output_path_writes_elsewhere_and_keeps_the_logs_reachable(tmp_path, says_yes_dot):
    from harness.schema.results import load_results

    out, elsewhere = tmp_path / "run", tmp_path / "other" / "place"
    _run(out)
    argv = ["rescore", str(out), "--scoring", "lmms_eval", "--output_path", str(elsewhere)]
    assert cli.main(argv) == 0
    assert not (out / "results.scoring-lmms_eval.json").exists()
    new = load_results(elsewhere / "results.scoring-lmms_eval.json")
    assert new.settings["rescored_from"] == "../../run/results.json"
    (entry,) = new.entries
    assert (elsewhere / entry.samples_file).resolve() == next((out / "samples").glob("*.jsonl"))


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


class _InternVLScripted(ScriptedAdapter):
    """A scripted model recorded as family ``internvl`` (RefCOCOg's official rule follows it)."""

    registry_name = "internvl"

    def settings(self):
        return super().settings() | {"family": "internvl"}


@pytest.fixture
def internvl_boxes(monkeypatch):
    """`run` answers refcocog_mini with the gold box on InternVL's 1000 grid: "[[x1, y1, x2,
    y2]]" for even documents, Qwen2-VL's "(x1,y1),(x2,y2)" for odd ones."""
    import harness.api.model as base
    from harness.api.registry import MODEL_FAMILIES
    from harness.api.task import build_task

    task = build_task("refcocog_mini", {})
    docs = task.load(limit=6)
    gold = {task.prompt(d): (i, d.box) for i, d in enumerate(docs)}

    def respond(request):
        i, box = gold[request.text]
        w, h = request.images[0].size
        x1, y1, x2, y2 = (round(v * 1000) for v in (box.x1 / w, box.y1 / h, box.x2 / w, box.y2 / h))
        return f"[[{x1}, {y1}, {x2}, {y2}]]" if i % 2 == 0 else f"({x1},{y1}),({x2},{y2})"

    adapter = _InternVLScripted(respond, box_convention="normalized_1000_auto")
    monkeypatch.setattr(base, "load_adapter", lambda spec: adapter)
    with MODEL_FAMILIES.temporary("toy", _InternVLScripted, replace=True):
        yield


def test_refcocog_official_is_selectable_follows_the_family_and_rescores(tmp_path, internvl_boxes):
    from tasks.refcocog.official import OFFICIAL_RULES

    got = {}
    for mode in ("official", "lenient", "lmms_eval"):
        results = _run(tmp_path / mode, mode, task="refcocog_mini")
        entry = results["entries"][0]
        assert results["model"]["family"] == "internvl"
        assert entry["task_settings"]["scoring"] == mode
        assert ("official_rules" in entry["task_settings"]) == (mode == "official")
        got[mode] = {m["name"]: m["value"] for m in entry["metrics"]}
    # InternVL's evaluator reads only "[[…]]" (the odd replies fall back to 0, 0, 0, 0);
    # lenient reads both forms on the adapter's 1000 grid; lmms-eval reads [0, 1] decimals.
    assert got["official"]["acc@0.5"] == 0.5 and got["official"]["parse_rate"] == 0.5
    assert got["lenient"]["acc@0.5"] == 1.0 and got["lenient"]["parse_rate"] == 1.0
    assert got["lmms_eval"]["acc@0.5"] == 0.0
    # Rescoring the lenient run under official finds the family in the recorded model.
    out = tmp_path / "lenient"
    assert cli.main(["rescore", str(out), "--scoring", "official"]) == 0
    entry = json.loads((out / "results.scoring-official.json").read_text())["entries"][0]
    assert entry["task_settings"]["official_rules"] == OFFICIAL_RULES
    assert {m["name"]: m["value"] for m in entry["metrics"]} == got["official"]
