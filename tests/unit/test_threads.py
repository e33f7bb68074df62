"""``--threads N`` above the cores this process may use is capped at them, with a note."""

import json

import pytest

torch = pytest.importorskip("torch")

from harness.api.threads import apply_threads, usable_cores  # noqa: E402
from harness.cli import main as cli  # noqa: E402


@pytest.fixture
def keep_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_more_threads_than_cores_are_capped_with_a_note(keep_threads, capsys):
    cores = usable_cores()
    assert apply_threads(cores + 7) == cores  # was: cores + 7 threads, oversubscribed
    assert torch.get_num_threads() == cores
    err = capsys.readouterr().err
    assert f"--threads {cores + 7} is more than the {cores} cores" in err and "using" in err
    assert apply_threads(1) == 1 and torch.get_num_threads() == 1
    assert capsys.readouterr().err == ""  # within the cores: no note
    assert apply_threads(None) is None


def test_a_run_records_the_capped_count(keep_threads, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["run", "--tasks", "pope_mini", "--limit", "1", "--interventions", "none"]
    assert cli.main([*argv, "--threads", "4096", "--output", str(out)]) == 0
    assert "--threads 4096 is more than the" in capsys.readouterr().err
    environment = json.loads((out / "results.json").read_text())["environment"]
    assert environment["threads"] == usable_cores()
