"""Two runs into one directory: one is refused naming the holder; a killed run's lock is taken
over; resume never duplicates a row."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.api.specs import RunSpec, SpecError, TaskSpec
from harness.run.evaluator import run_grid
from harness.schema.results import load_results
from harness.schema.writes import LOCK_FILE, OutputLock, held_by
from harness.testing.mock import ScriptedAdapter
from tests.toy_task import correct_on_even

ROOT = Path(__file__).resolve().parents[2]
N = 40
WORKER = """
import sys, time
sys.path.insert(0, {root!r})
import tests.toy_task
from tests.toy_task import correct_on_even
from harness.api.specs import RunSpec, SpecError, TaskSpec
from harness.run.evaluator import run_grid
from harness.testing.mock import ScriptedAdapter

def slow(request):
    time.sleep({delay})
    return correct_on_even(request)

spec = RunSpec(tasks=(TaskSpec("test_echo", args={{"n": {n}}}),), output=sys.argv[1])
try:
    run_grid(spec, ScriptedAdapter(slow))
except SpecError as exc:
    print(f"headscope: error: {{exc}}", file=sys.stderr)
    sys.exit(2)
"""


def _start(out: Path, delay: float = 0.05) -> subprocess.Popen:
    code = WORKER.format(root=str(ROOT), delay=delay, n=N)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", code, str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _rows(out: Path) -> list[dict]:
    paths = sorted((out / "samples").glob("test_echo*.jsonl"))
    if not paths:
        return []
    return [json.loads(line) for line in paths[0].read_text().splitlines() if line.endswith("}")]


def _wait_for_rows(out: Path, n: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    end = time.time() + timeout
    while len(_rows(out)) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < end, "the first run wrote no rows"
        time.sleep(0.05)


def test_second_run_is_refused_naming_the_holder_and_rows_are_unique(tmp_path):
    out = tmp_path / "run"
    first = _start(out)
    _wait_for_rows(out, 2, first)
    second = _start(out)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 2, err
    assert f"in use by another headscope run (pid {first.pid}" in err and "Traceback" not in err
    assert first.wait(timeout=120) == 0, first.communicate()
    ids = [r["doc_id"] for r in _rows(out)]
    assert len(ids) == N and len(set(ids)) == N
    res = load_results(out)
    assert res.status == "complete" and res.entries[0].n_samples == N
    assert not (out / LOCK_FILE).exists()


def test_killed_run_leaves_a_stale_lock_that_is_taken_over(tmp_path, capfd):
    out = tmp_path / "run"
    first = _start(out)
    _wait_for_rows(out, 5, first)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert (out / LOCK_FILE).exists()  # left behind, holder dead
    assert held_by(out) is None  # rescore may read it
    spec = RunSpec(tasks=(TaskSpec("test_echo", args={"n": N}),), output=str(out))
    resumed = run_grid(spec, ScriptedAdapter(correct_on_even))
    assert f"pid {first.pid}" in capfd.readouterr().err
    ids = [r["doc_id"] for r in _rows(out)]
    assert len(ids) == N and len(set(ids)) == N
    clean = run_grid(
        RunSpec(tasks=spec.tasks, output=str(tmp_path / "clean")), ScriptedAdapter(correct_on_even)
    )
    assert resumed.entries[0].metrics == clean.entries[0].metrics


def test_resume_dedupes_rows_by_doc_id(tmp_path):
    spec = RunSpec(tasks=(TaskSpec("test_echo", args={"n": 10}),), output=str(tmp_path / "r"))
    first = run_grid(spec, ScriptedAdapter(correct_on_even))
    (log,) = (tmp_path / "r" / "samples").glob("test_echo*.jsonl")
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines + lines[:6]))  # what two concurrent writers used to leave
    again = run_grid(spec, ScriptedAdapter(correct_on_even))
    assert again.entries[0].n_samples == 10 and again.entries[0].metrics == first.entries[0].metrics
    assert log.read_text().splitlines(keepends=True) == lines[6:] + lines[:6]


def test_lock_in_one_process(tmp_path):
    lock = OutputLock(tmp_path / "o").acquire()
    assert held_by(tmp_path / "o").startswith(f"pid {os.getpid()} ")
    with pytest.raises(SpecError, match=rf"in use by another headscope run \(pid {os.getpid()}"):
        OutputLock(tmp_path / "o").acquire()
    lock.release(remove_if_unused=True)
    assert not (tmp_path / "o").exists()  # created empty, removed empty
    with OutputLock(tmp_path / "o") as again:
        assert again.stale is None
    assert not (tmp_path / "o").exists()  # created empty, removed empty


def test_main_job_refuses_a_directory_another_job_holds(tmp_path, capsys):
    from harness.cli.main import main

    with OutputLock(tmp_path / "job"):
        assert main(["run", "--limit", "2", "--output", str(tmp_path / "job")]) == 2
    err = capsys.readouterr().err
    assert f"in use by another headscope run (pid {os.getpid()}" in err and "Traceback" not in err
    assert not (tmp_path / "job").exists()  # nothing was written


@pytest.mark.parametrize("command", ["rank", "diagnose"])
def test_probe_commands_refuse_a_directory_another_run_holds(tmp_path, capsys, command):
    from harness.cli.main import main

    out = tmp_path / command
    with OutputLock(out):
        assert main([command, "--tasks", "pope_mini", "--limit", "1", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"in use by another headscope run (pid {os.getpid()}" in err and "Traceback" not in err
    assert not out.exists()  # nothing was written


def _results(path: Path, value: float) -> Path:
    from harness.schema.results import MetricDefRecord, MetricRecord, ResultEntry, RunResults

    entry = ResultEntry(
        task="pope",
        task_args={},
        split="test",
        task_settings={"scoring": "official"},
        intervention="none",
        intervention_spec={"name": "none", "args": {}},
        intervention_resolved={},
        metrics=[MetricRecord("accuracy", value, 0.01, 8)],
        n_samples=8,
    )
    res = RunResults(
        spec_passed={},
        spec_resolved={"seed": 0},
        headscope_version="0",
        git={},
        environment={},
        model={"family": "toy", "pretrained": "toy"},
        settings={},
        metric_defs={"pope": [MetricDefRecord("accuracy", True)]},
        entries=[entry],
    )
    path.mkdir(parents=True, exist_ok=True)
    res.save(path / "results.json")
    return path


HOLD = """
import sys
sys.path.insert(0, {root!r})
from harness.schema.writes import OutputLock
lock = OutputLock(sys.argv[1], "leaderboard --output", ".leaderboard.lock").acquire()
print("held", flush=True)
sys.stdin.read()
"""


def test_a_second_leaderboard_into_one_directory_is_refused_writing_nothing(tmp_path, capsys):
    from harness.cli.main import main

    out = tmp_path / "board"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(root=str(ROOT)), str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"  # a leaderboard writing into out
        run = _results(tmp_path / "D", 0.8)
        argv = ["leaderboard", str(run), "--output", str(out), "--no-figures", "--quiet"]
        assert main(argv) == 2  # was 0: its tables went in beside the first one's
        err = capsys.readouterr().err
        assert f"(pid {holder.pid}" in err and "Traceback" not in err
        assert err.count("\n") == 1
        assert sorted(p.name for p in out.iterdir()) == [".leaderboard.lock"]
    finally:
        holder.communicate("", timeout=30)
    assert main(argv) == 0  # the holder is gone: the next one writes, and leaves no lock
    names = sorted(p.name for p in out.iterdir())
    assert "leaderboard.md" in names and ".leaderboard.lock" not in names


def test_a_killed_leaderboard_s_lock_is_taken_over(tmp_path, capsys):
    from harness.cli.main import main

    out = tmp_path / "board"
    out.mkdir()
    (out / ".leaderboard.lock").write_text(json.dumps({"pid": 999999, "command": "x"}))
    run = _results(tmp_path / "D", 0.8)
    argv = ["leaderboard", str(run), "--output", str(out), "--no-figures", "--quiet"]
    assert main(argv) == 0, capsys.readouterr().err
    assert (out / "leaderboard.md").is_file() and not (out / ".leaderboard.lock").exists()


def test_the_lock_holder_removes_temporary_files_of_killed_writers(tmp_path):
    out = tmp_path / "run"
    (out / "samples").mkdir(parents=True)
    stray = [out / ".timings.json.k3x_9q2a.tmp", out / ".results.json.abcdefgh.tmp"]
    kept = [out / "timings.json", out / ".notes.tmp", out / "samples" / ".log.jsonl.abcdefgh.tmp"]
    for path in stray + kept:
        path.write_text("{")  # a killed os.replace's source; the others are not temp files
    with OutputLock(out) as lock:
        assert lock.cleaned == stray[::-1]  # sorted by name
    assert [p for p in stray + kept if p.exists()] == kept  # was: the temp files stayed
