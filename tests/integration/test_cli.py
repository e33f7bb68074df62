import json
import subprocess
import sys

import pytest

from harness.cli import main as cli
from harness.testing.mock import ScriptedAdapter
from tests.toy_task import correct_on_even


@pytest.fixture
def mock_model(monkeypatch):
    """Make `run` use the scripted mock instead of loading a model."""
    import harness.api.model as base
    from harness.api.registry import MODEL_FAMILIES

    monkeypatch.setattr(base, "load_adapter", lambda spec: ScriptedAdapter(correct_on_even))
    with MODEL_FAMILIES.temporary("toy", ScriptedAdapter, replace=True):
        yield


def test_list_tasks_and_interventions(capsys):
    assert cli.main(["list", "interventions"]) == 0
    assert "none" in capsys.readouterr().out


def test_list_models_shows_each_family_unit(capsys):
    assert cli.main(["list", "models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    after = {line.split()[0]: lines[i + 1] for i, line in enumerate(lines[:-1]) if line[:1] != " "}
    assert "layout grid_thw · boxes, image, pages, video · tiny=true" in after["qwen2_vl"]
    assert "layout anyres" in after["llava_onevision"]
    assert after["toy"].strip().startswith("layout fixed_grid") and "no tiny recipe" in after["toy"]


def test_run_from_flags_writes_results(tmp_path, mock_model, capsys):
    out = tmp_path / "run"
    rc = cli.main(
        [
            "run",
            "--tasks",
            "test_echo",
            "--limit",
            "4",
            "--output",
            str(out),
            "--interventions",
            "none",
            "--batch-size",
            "2",
        ]
    )
    assert rc == 0
    data = json.loads((out / "results.json").read_text())
    assert data["schema"] == "headscope.results"
    assert data["entries"][0]["metrics"][0]["n"] == 4
    assert (out / "samples" / "test_echo__none.jsonl").exists()
    assert "accuracy" in capsys.readouterr().out


def test_run_from_config_file(tmp_path, mock_model):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"tasks: [{{name: test_echo, args: {{n: 3}}}}]\noutput: {tmp_path / 'o'}\n")
    assert cli.main(["run", "--config", str(cfg)]) == 0
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["entries"][0]["n_samples"] == 3


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--tasks", "test_ech"], "did you mean 'test_echo'"),
        (["run", "--tasks", "test_echo", "--interventions", "ablat"], "unknown intervention"),
        (["run", "--tasks", "test_echo", "--model", "qwen9"], "unknown model family"),
        (["run", "--config", "/nonexistent.yaml"], "does not exist"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_message(argv, message, tmp_path, capsys):
    rc = cli.main([*argv, "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and "Traceback" not in err


def test_console_entry_point_runs():
    out = subprocess.run(
        [sys.executable, "-m", "harness", "list", "interventions"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "none" in out.stdout


def test_task_args_reach_the_task_and_are_validated(tmp_path, mock_model, capsys):
    out = tmp_path / "run"
    rc = cli.main(
        [
            "run",
            "--tasks",
            "test_echo",
            "--task-args",
            '{"test_echo": {"n": 3}}',
            "--interventions",
            "none",
            "--output",
            str(out),
        ]
    )
    assert rc == 0
    data = json.loads((out / "results.json").read_text())
    assert data["entries"][0]["n_samples"] == 3
    assert data["entries"][0]["task_args"] == {"n": 3}
    rc = cli.main(
        [
            "run",
            "--tasks",
            "test_echo",
            "--task-args",
            '{"pope": {"n": 3}}',
            "--interventions",
            "none",
            "--output",
            str(tmp_path / "other"),
        ]
    )
    assert rc == 2 and "not in --tasks" in capsys.readouterr().err
