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
