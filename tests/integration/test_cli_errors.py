"""Exit codes: only a UsageError is "exit 2, one line"; a bug keeps its traceback (exit 1)."""

import os
import re
import tempfile
from pathlib import Path

import pytest

import harness.cli.bench as bench_command
from harness.api.errors import UsageError
from harness.cli import main as cli


def _inner_bug():
    raise ValueError("boom inside the code")  # a bug, not the user's input


@pytest.fixture
def traceback_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / "headscope-tracebacks"


@pytest.fixture
def run_raises(monkeypatch):
    def install(make_error):  # returns the exception to raise, or raises it itself
        def fake_run(args):
            raise make_error()

        monkeypatch.setattr(cli.run_command, "run", fake_run)

    return install


def test_a_value_error_from_the_code_is_a_bug_with_its_traceback_saved(
    run_raises, traceback_dir, capsys
):
    run_raises(_inner_bug)
    assert cli.main(["run", "--tasks", "test_echo"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    found = re.fullmatch(
        r"headscope run: internal error: ValueError: boom inside the code "
        r"\(traceback saved to (\S+); rerun with --debug to print it\)\n",
        err,
    )
    assert found, err
    saved = open(found.group(1)).read()
    assert saved.startswith("Traceback") and "_inner_bug" in saved
    assert found.group(1).startswith(str(traceback_dir))


def test_a_usage_error_is_one_line_with_its_hint(run_raises, traceback_dir, capsys):
    run_raises(lambda: UsageError("--window must be positive,\ngot -3", hint="e.g. --window 8"))
    assert cli.main(["run", "--tasks", "test_echo"]) == 2
    assert capsys.readouterr().err == (
        "headscope run: error: --window must be positive,; got -3 "
        "(hint: e.g. --window 8; see headscope run --help)\n"
    )
    assert not traceback_dir.exists()


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_prints_full_tracebacks_usage_errors_included(where, run_raises, capsys):
    argv = ["run", "--tasks", "test_echo"]
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    run_raises(_inner_bug)
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "_inner_bug" in err and "saved to" not in err
    assert err.splitlines()[-1] == "headscope run: internal error: ValueError: boom inside the code"
    run_raises(lambda: UsageError("bad flag", hint="fix it"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "fake_run" in err
    assert (
        err.splitlines()[-1]
        == "headscope run: error: bad flag (hint: fix it; see headscope run --help)"
    )


def test_debug_among_the_flags_a_bench_passes_on(monkeypatch, capsys):
    seen = {}

    def fake_bench_run(args):
        seen["argv"] = list(args.bench_args)
        raise ValueError("bench bug")

    monkeypatch.setattr(bench_command, "run", fake_bench_run)
    assert cli.main(["bench", "ram", "--repeats", "2", "--debug"]) == 1
    err = capsys.readouterr().err
    assert seen["argv"] == ["--repeats", "2"]
    assert err.startswith("Traceback") and "bench bug" in err
    assert err.splitlines()[-1] == "headscope bench ram: internal error: ValueError: bench bug"


def test_interrupt_keeps_exit_130(run_raises, capsys):
    run_raises(KeyboardInterrupt)
    assert cli.main(["run", "--tasks", "test_echo"]) == 130
    assert "rerun the same command to resume" in capsys.readouterr().err


def test_the_user_error_types_are_usage_errors_and_still_value_errors():
    from harness.api.intervention import InterventionError
    from harness.api.registry import RegistryError, UnknownNameError
    from harness.api.specs import SpecError
    from harness.api.task import BadDataError, SampleError, TaskLoadError
    from harness.models.loading import CheckpointError
    from harness.schema.results import ResultsError
    from harness.schema.writes import OutputDirError
    from leaderboards.settings import MergeError

    user_errors = (InterventionError, RegistryError, UnknownNameError, SpecError, BadDataError)
    user_errors += (SampleError, TaskLoadError, CheckpointError, OutputDirError, ResultsError)
    for cls in (*user_errors, MergeError):
        assert issubclass(cls, UsageError) and issubclass(cls, ValueError), cls
    assert issubclass(UnknownNameError, KeyError) and issubclass(TaskLoadError, RuntimeError)


@pytest.mark.parametrize(
    ("argv", "culprit"),
    [
        (["hybrid", "--window", "0"], "argument --window: must be ≥ 1, got 0"),
        (["hybrid", "--lengths", "64,x"], "argument --lengths: not an integer: 'x'"),
        (["adaptive", "--rows", "0"], "argument --rows: must be ≥ 1, got 0"),
        (["masks", "--keep", "2"], "argument --keep: must lie in [0, 1], got 2.0"),
        (["ram", "--repeats", "0"], "argument --repeats: must be ≥ 1, got 0"),
        (["ttft", "--sinks", "-1"], "argument --sinks: must be ≥ 0, got -1"),
    ],
)
def test_a_bad_bench_flag_is_one_line_naming_it(argv, culprit, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bench", *argv])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.splitlines()) == 1, err
    assert (
        err
        == f"headscope bench {argv[0]}: error: {culprit} (see headscope bench {argv[0]} --help)\n"
    )


def test_the_traceback_is_printed_when_it_cannot_be_saved(
    run_raises, tmp_path, monkeypatch, capsys
):
    (tmp_path / "not_a_dir").write_text("x")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "not_a_dir"))
    run_raises(_inner_bug)
    assert cli.main(["run", "--tasks", "test_echo"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "_inner_bug" in err
    assert err.splitlines()[-1] == "headscope run: internal error: ValueError: boom inside the code"


def test_a_run_failed_midway_keeps_its_message_and_exit_1(run_raises, traceback_dir, capsys):
    from harness.run.evaluator import EvaluationError

    run_raises(lambda: EvaluationError("task 'x', doc '3': the scorer crashed"))
    assert cli.main(["run", "--tasks", "test_echo"]) == 1
    assert capsys.readouterr().err == (
        "headscope: run failed: task 'x', doc '3': the scorer crashed\n"
        "rerun the same command to resume\n"
    )
    assert not traceback_dir.exists()


def test_traceback_files_are_capped_to_the_newest(run_raises, traceback_dir, capsys):
    traceback_dir.mkdir(mode=0o700)
    kept = cli.TRACEBACKS_KEPT
    for i in range(kept + 5):  # older files, oldest first
        old = traceback_dir / f"20000101-000000-{i:03d}.txt"
        old.write_text("old")
        os.utime(old, ns=(i * 10**9, i * 10**9))
    run_raises(_inner_bug)
    assert cli.main(["run", "--tasks", "test_echo"]) == 1
    saved = re.search(r"traceback saved to (\S+);", capsys.readouterr().err).group(1)
    names = sorted(p.name for p in traceback_dir.iterdir())
    assert len(names) == kept and Path(saved).name in names
    assert "20000101-000000-005.txt" not in names and "20000101-000000-006.txt" in names


def test_a_symlinked_traceback_folder_is_refused(run_raises, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "headscope-tracebacks").symlink_to(elsewhere)
    run_raises(_inner_bug)
    assert cli.main(["run", "--tasks", "test_echo"]) == 1
    err = capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []  # nothing written where the link points
    assert err.startswith("Traceback") and "_inner_bug" in err  # printed instead
    assert err.splitlines()[-2] == (
        f"headscope run: traceback not saved: {tmp_path / 'headscope-tracebacks'} is a symlink"
    )
    assert err.splitlines()[-1] == "headscope run: internal error: ValueError: boom inside the code"


def test_the_traceback_folder_is_private(run_raises, traceback_dir, capsys):
    run_raises(_inner_bug)
    assert cli.main(["run", "--tasks", "test_echo"]) == 1
    assert traceback_dir.stat().st_mode & 0o777 == 0o700


def test_a_bench_output_under_proc_is_refused_before_measuring(monkeypatch, capsys):
    from harness.bench import ram_probe

    monkeypatch.setattr(ram_probe, "run_bench", lambda **kw: pytest.fail("measured"))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bench", "ram", "--output", "/proc/headscope-no-such-dir/b.json"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("headscope bench ram: error: --output ") and "is on /proc" in err
