"""The flags rank, diagnose and means share with run do what they do on run (issue: one vocabulary).

``--task-args`` reaches the tasks of ``rank`` (recorded in the ranking), ``diagnose`` and
``means`` (a task not in ``--tasks`` and an argument a task does not take are refused, as on
``run``); ``means`` takes ``--batch_size`` and ``--threads``; ``--no-figures`` leaves rank's
heatmaps out, and every figure of the main job, also when it resumes.
"""

import json
import re

import pytest

from harness.cli import main as cli


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if re.match(r"headscope \w+: error: ", line)]


def test_rank_records_its_task_args_and_no_figures_draws_none(tmp_path):
    out = tmp_path / "rank"
    argv = ["rank", "--tasks", "refcocog_mini", "--limit", "2", "--n-boot", "5", "--maps", "0"]
    argv += ["--task_args", '{"refcocog_mini": {"n": 7}}', "--no-figures", "--output", str(out)]
    assert cli.main(argv) == 0
    ranking = json.loads((out / "ranking.json").read_text())
    spec = ranking["tasks"]["refcocog_mini"]["spec"]
    assert spec["args"] == {"n": 7} and spec["settings"]["n"] == 7
    assert not list(out.rglob("*.png"))


@pytest.mark.parametrize("command", ["rank", "diagnose", "means"])
@pytest.mark.parametrize(
    ("task_args", "message"),
    [
        ('{"pope_mini": {"n": 3}}', "not in --tasks"),
        ('{"refcocog_mini": {"colour": "red"}}', "colour"),
        ('{"refcocog_mini": ', "malformed JSON"),
    ],
)
def test_task_args_are_checked_like_run(command, task_args, message, tmp_path, capsys, monkeypatch):
    import harness.cli._probe_args as probe_args

    def no_model(_args):
        raise AssertionError("the model loads only after the task arguments are checked")

    monkeypatch.setattr(probe_args, "load_model", no_model)
    output = str(tmp_path / ("m.pt" if command == "means" else "out"))
    argv = [command, "--tasks", "refcocog_mini", "--task-args", task_args, "--output", output]
    assert cli.main(argv) == 2
    lines = _errors(capsys.readouterr().err)
    assert len(lines) == 1 and message in lines[0], lines


def test_means_takes_batch_size_and_threads_spelled_as_elsewhere():
    parser = cli.build_parser()
    args = parser.parse_args(
        ["means", "--tasks", "pope_mini", "--batch_size", "4", "--threads", "1", "--output", "m.pt"]
    )
    assert (args.batch_size, args.threads) == (4, 1)


def test_main_job_no_figures_draws_none_even_on_resume(tmp_path, monkeypatch):
    from harness.run import main_job
    from tests.integration._main_job_util import SmallConfig

    monkeypatch.setattr(main_job, "ProtocolConfig", SmallConfig)
    out = tmp_path / "job"
    argv = ["run", "--tasks", "refcocog_mini", "--limit", "2", "--maps", "0", "--output", str(out)]
    assert cli.main([*argv, "--no-figures"]) == 0
    assert (out / "leaderboards" / "leaderboard.md").is_file()
    assert (out / "rank" / "ranking.json").is_file()
    assert (out / "diagnose" / "diagnostics_paper.json").is_file()
    drawn = [p for p in out.rglob("*") if p.suffix in (".png", ".pdf")]
    assert drawn == []
    assert cli.main([*argv, "--no-figures"]) == 0  # a resume draws no missing figure either
    assert [p for p in out.rglob("*") if p.suffix in (".png", ".pdf")] == []
    assert cli.main(argv) == 0  # without the flag, the resume draws what is missing
    drawn = {p.parent.relative_to(out).as_posix() for p in out.rglob("*.png")}
    assert {"rank/heatmaps", "diagnose/plots", "leaderboards/figures"} <= drawn, drawn


def test_no_figures_on_a_grid_is_refused(tmp_path, capsys):
    argv = ["run", "--tasks", "pope_mini", "--interventions", "none", "--no-figures"]
    assert cli.main([*argv, "--output", str(tmp_path / "grid")]) == 2
    lines = _errors(capsys.readouterr().err)
    assert len(lines) == 1 and "--no-figures applies to the main job" in lines[0]
