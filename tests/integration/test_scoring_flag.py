"""``--scoring MODE`` on ``headscope run`` / ``diagnose``: the same record as ``--task-args``."""

from __future__ import annotations

import json
import re

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


GRID = ["run", "--limit", "6", "--interventions", "none"]


def _grid(out, *extra):
    assert cli.main([*GRID, *extra, "--output", str(out)]) == 0
    return json.loads((out / "results.json").read_text())


def test_scoring_flag_records_exactly_what_task_args_record(tmp_path, says_yes_dot):
    via_flag = _grid(tmp_path / "flag", "--tasks", "pope_mini", "--scoring", "lmms_eval")
    args = json.dumps({"pope_mini": {"scoring": "lmms_eval"}})
    via_args = _grid(tmp_path / "args", "--tasks", "pope_mini", "--task-args", args)
    default = _grid(tmp_path / "default", "--tasks", "pope_mini")
    flag, by_args = via_flag["entries"][0], via_args["entries"][0]
    for key in ("task_args", "task_settings", "metrics", "n_samples"):
        assert flag[key] == by_args[key], key
    assert flag["task_settings"]["scoring"] == "lmms_eval"
    assert flag["metrics"] != default["entries"][0]["metrics"]  # the flag really changed scoring
    # The same run identity: a run started with one spelling resumes with the other.
    spec = [json.loads((tmp_path / d / "run_spec.json").read_text()) for d in ("flag", "args")]
    assert spec[0] == spec[1]
    assert via_flag["spec_resolved"]["tasks"] == via_args["spec_resolved"]["tasks"]


def test_explicit_task_args_win(tmp_path, says_yes_dot):
    args = json.dumps({"pope_mini": {"scoring": "lenient"}})
    res = _grid(tmp_path / "run", "--tasks", "pope_mini,mmmu_mini,vidstg_mini",
                "--task-args", args, "--scoring", "official")  # fmt: skip
    entries = {e["task"]: e for e in res["entries"]}
    assert entries["pope_mini"]["task_settings"]["scoring"] == "lenient"
    assert entries["mmmu_mini"]["task_settings"]["scoring"] == "official"
    assert entries["vidstg_mini"]["task_args"] == {"scoring": "official"}


def test_tasks_with_one_fixed_rule_are_left_alone(monkeypatch):
    from harness.api.registry import TASKS
    from harness.api.task import Task
    from harness.cli._args import apply_scoring

    class FixedRule(Task):  # e.g. a plugin task without a 'scoring' argument
        def __init__(self, *, n: int = 1) -> None:
            self.n = n

    pairs = [("fixed_rule", {"n": 2}), ("pope_mini", {})]
    with TASKS.temporary("fixed_rule", FixedRule):
        assert apply_scoring("lenient", pairs) == [{"n": 2}, {"scoring": "lenient"}]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tasks", "pope_mini,mmdocir_mini", "--scoring", "lmms_eval", "--interventions", "none"],
         "scoring 'lmms_eval' is not available"),
        (["--tasks", "pope_mini", "--scoring", "offical", "--interventions", "none"],
         "did you mean 'official'"),
        (["--scoring", "lmms_eval"], "scoring 'lmms_eval' is not available"),  # toy main job
    ],
)  # fmt: skip
def test_a_mode_a_task_lacks_is_refused_before_anything_is_written(
    tmp_path, says_yes_dot, capsys, argv, message
):
    out = tmp_path / "out"
    assert cli.main(["run", *argv, "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_main_job_passes_the_mode_to_every_task_with_modes(tmp_path, monkeypatch):
    import harness.run.main_job as mj

    seen = {}
    monkeypatch.setattr(mj, "run_protocol", lambda model, cfg, out: seen.update(cfg=cfg))
    args = json.dumps({"pope_mini": {"scoring": "official"}})
    argv = ["run", "--tasks", "pope_mini,mmmu_mini,vidstg_mini", "--scoring", "lenient"]
    assert cli.main([*argv, "--task-args", args, "--output", str(tmp_path / "o")]) == 0
    assert seen["cfg"].task_args == {
        "pope_mini": {"scoring": "official"},
        "mmmu_mini": {"scoring": "lenient"},
        "vidstg_mini": {"scoring": "lenient"},
    }


def test_every_task_lacking_the_mode_is_named_with_the_args_that_go_on(
    tmp_path, monkeypatch, capsys
):
    import shlex

    import harness.run.main_job as mj

    seen = {}
    monkeypatch.setattr(mj, "run_protocol", lambda model, cfg, out: seen.update(cfg=cfg))
    tasks = "pope_mini,mmdocir_mini,vidstg,vidstg_mini"  # main job; vidstg's data is not read
    argv = ["run", "--tasks", tasks, "--scoring", "lmms_eval", "--output", str(tmp_path / "o")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "task 'vidstg'" in err and "task 'mmdocir_mini'" in err
    assert "task 'vidstg_mini'" in err and "pope_mini" not in err  # pope_mini has lmms_eval
    suggested = shlex.split(re.search(r"e\.g\. (--task-args '[^']*')", err).group(1))
    assert suggested[0] == "--task-args" and not seen
    assert cli.main([*argv, *suggested]) == 0
    modes = {n: a.get("scoring") for n, a in seen["cfg"].task_args.items()}
    assert modes == {
        "pope_mini": "lmms_eval",
        "mmdocir_mini": "official",
        "vidstg": "official",
        "vidstg_mini": "official",
    }


def test_diagnose_scoring_flag(tmp_path, monkeypatch, capsys):
    import harness.cli._probe_args as probe_args
    import harness.probes.diagnose_run as dr
    from harness.probes.record import ProbeError

    seen = {}

    def fake_diagnose(adapter, tspecs, output, **kw):
        seen["tasks"] = {t.name: dict(t.args) for t in tspecs}
        raise ProbeError("stopped by the test after the task specs were seen")

    monkeypatch.setattr(probe_args, "load_model", lambda args: object())
    monkeypatch.setattr(dr, "run_diagnose", fake_diagnose)
    task = json.dumps({"name": "refcocog_mini", "args": {"scoring": "lmms_eval"}})
    argv = ["diagnose", "--tasks", f"mmmu_mini,{task}", "--scoring", "lenient"]
    assert cli.main([*argv, "--output", str(tmp_path / "d")]) == 1
    assert seen["tasks"] == {"mmmu_mini": {"scoring": "lenient"},
                             "refcocog_mini": {"scoring": "lmms_eval"}}  # fmt: skip
    argv = ["diagnose", "--tasks", "mmdocir_mini", "--scoring", "lmms_eval"]  # lmms-eval lacks it
    assert cli.main([*argv, "--output", str(tmp_path / "e")]) == 2
    assert "scoring 'lmms_eval' is not available" in capsys.readouterr().err
    argv = ["diagnose", "--scoring", "lenient", "--no-generate"]
    assert cli.main([*argv, "--output", str(tmp_path / "f")]) == 2
    assert "--no-generate" in capsys.readouterr().err


def test_diagnose_records_the_mode_it_scored_with(tmp_path):
    out = tmp_path / "diag"
    argv = ["diagnose", "--tasks", "refcocog_mini", "--limit", "2", "--scoring", "lmms_eval"]
    argv += ["--baselines", "", "--no-figures", "--no-progress", "--output", str(out)]
    assert cli.main(argv) == 0
    task = json.loads((out / "diagnostics_paper.json").read_text())["settings"]["tasks"][0]
    assert task["settings"]["scoring"] == task["args"]["scoring"] == "lmms_eval"


def test_a_task_whose_replies_parse_at_rate_zero_is_flagged_in_results_and_log(
    tmp_path, says_yes_dot, capsys
):
    # "Yes." holds no box: under lmms_eval (and every mode) refcocog_mini reads none of them;
    # pope_mini reads every one.
    flagged = _grid(tmp_path / "lm", "--tasks", "refcocog_mini,pope_mini", "--scoring", "lmms_eval")
    by_task = {e["task"]: e for e in flagged["entries"]}
    assert by_task["refcocog_mini"]["metrics"] and by_task["pope_mini"]["warnings"] == []
    (warning,) = by_task["refcocog_mini"]["warnings"]
    assert "no reply could be read under scoring 'lmms_eval'" in warning
    assert "over 6 replies" in warning
    err = capsys.readouterr().err
    assert f"refcocog_mini / none: {warning}" in err and err.count("warning:") == 1


def test_reply_warnings_read_parse_rate_or_unparsed_rate():
    from harness.api.task import MetricValue, build_task

    task = build_task("pope_mini")
    assert task.reply_warnings([MetricValue("unparsed_rate", 1.0, 0.0, 5)])
    assert task.reply_warnings([MetricValue("unparsed_rate", 0.8, 0.1, 5)]) == []
    assert task.reply_warnings([MetricValue("parse_rate", 0.0, 0.0, 5)])
    assert task.reply_warnings([MetricValue("parse_rate", 0.2, 0.1, 5)]) == []
    assert task.reply_warnings([MetricValue("parse_rate", 0.0, None, 0)]) == []  # nothing scored
    assert task.reply_warnings([MetricValue("accuracy", 0.0, 0.0, 5)]) == []


def test_prepare_scoring_sees_each_batch_once_before_its_scores(tmp_path, says_yes_dot):
    from harness.api.registry import TASKS

    base = TASKS.get("pope_mini")
    calls = []

    class Counting(base):
        """pope_mini, recording the batches prepare_scoring is given."""

        def prepare_scoring(self, samples, generations):
            calls.append((len(samples), [g.text for g in generations]))

        def score(self, sample, generation, ctx):
            assert calls, "score before prepare_scoring"
            return super().score(sample, generation, ctx)

    with TASKS.temporary("pope_counting", Counting):
        _grid(tmp_path / "b", "--tasks", "pope_counting", "--batch_size", "2")
    assert calls == [(2, ["Yes.", "Yes."])] * 3  # --limit 6 in batches of 2
