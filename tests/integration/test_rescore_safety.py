"""``headscope rescore`` stays inside the run directory, only reads the sample logs, and
fails on a full or read-only disk with one line naming the file."""

from __future__ import annotations

import errno
import json
import os
import tempfile

import pytest

from harness.cli import main as cli
from harness.testing.mock import ScriptedAdapter


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    """A finished pope_mini run (6 samples) of a scripted model that answers "Yes."."""
    import harness.api.model as base
    from harness.api.registry import MODEL_FAMILIES

    monkeypatch.setattr(base, "load_adapter", lambda spec: ScriptedAdapter(lambda r: "Yes."))
    out = tmp_path / "run"
    argv = ["run", "--tasks", "pope_mini", "--limit", "6", "--interventions", "none"]
    with MODEL_FAMILIES.temporary("toy", ScriptedAdapter, replace=True):
        assert cli.main([*argv, "--output", str(out)]) == 0
    return out


def _set_samples_file(run_dir, value):
    doc = json.loads((run_dir / "results.json").read_text())
    doc["entries"][0]["samples_file"] = value
    (run_dir / "results.json").write_text(json.dumps(doc))


def _files(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def _log(run_dir):
    (log,) = (run_dir / "samples").glob("*.jsonl")
    return log


@pytest.mark.parametrize("where", ["dotdot", "absolute", "symlink"])
def test_a_samples_file_outside_the_run_directory_is_refused(run_dir, tmp_path, capsys, where):
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(_log(run_dir).read_bytes())  # a readable log: only its place is wrong
    if where == "dotdot":
        _set_samples_file(run_dir, "../elsewhere.jsonl")
    elif where == "absolute":
        _set_samples_file(run_dir, str(outside))
    else:
        (run_dir / "samples" / "link.jsonl").symlink_to(outside)
        _set_samples_file(run_dir, "samples/link.jsonl")
    before = _files(run_dir)
    assert cli.main(["rescore", str(run_dir), "--scoring", "lenient"]) == 2
    err = capsys.readouterr().err
    assert "pope_mini/none" in err and ("outside" in err or "not a path inside" in err)
    assert "Traceback" not in err
    assert _files(run_dir) == before  # nothing written


def test_results_outside_the_run_directory_are_refused(run_dir, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text((run_dir / "results.json").read_text())
    argv = ["rescore", str(run_dir), "--scoring", "lenient", "--results", "../other/results.json"]
    assert cli.main(argv) == 2
    assert "--results '../other/results.json' must name a file inside" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.scoring-*.json"))


@pytest.mark.parametrize("tail", [b"", b'{"doc_id": "po'])
def test_rescore_never_changes_a_sample_log(run_dir, tail):
    log = _log(run_dir)
    body = log.read_bytes()
    assert body.endswith(b"\n")
    # The last row without its final newline, then possibly a torn row after it.
    damaged = body[:-1] + (b"\n" + tail if tail else b"")
    log.write_bytes(damaged)
    assert cli.main(["rescore", str(run_dir), "--scoring", "lenient"]) == 0
    assert log.read_bytes() == damaged  # read only: not truncated, not repaired
    entry = json.loads((run_dir / "results.scoring-lenient.json").read_text())["entries"][0]
    assert entry["n_samples"] == 6  # the unterminated whole row is scored, the torn one not


def test_the_missing_samples_file_entry_is_named(run_dir, capsys):
    _log(run_dir).unlink()
    assert cli.main(["rescore", str(run_dir), "--scoring", "lenient"]) == 2
    err = capsys.readouterr().err
    assert "sample log of pope_mini/none" in err and "samples_file 'samples/" in err
    _set_samples_file(run_dir, "")
    assert cli.main(["rescore", str(run_dir), "--scoring", "lenient"]) == 2
    assert "entry pope_mini/none has no samples_file" in capsys.readouterr().err


def test_a_json_error_names_the_flag(run_dir, capsys):
    argv = ["rescore", str(run_dir), "--scoring", "lenient", "--task-args", "{pope_mini:"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "--task-args" in err and "not valid JSON" in err


def _fail_with(code):
    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    return fail


@pytest.mark.parametrize(
    ("code", "where"),
    [(errno.ENOSPC, "fsync"), (errno.EROFS, "mkstemp"), (errno.EACCES, "mkstemp")],
)
def test_a_full_or_read_only_disk_gives_one_line(run_dir, monkeypatch, capsys, code, where):
    if where == "fsync":
        monkeypatch.setattr(os, "fsync", _fail_with(code))  # the data does not reach the disk
    else:
        monkeypatch.setattr(tempfile, "mkstemp", _fail_with(code))  # no file can be created
    logs = {p: p.read_bytes() for p in (run_dir / "samples").rglob("*") if p.is_file()}
    assert cli.main(["rescore", str(run_dir), "--scoring", "lenient"]) == 2
    err = capsys.readouterr().err
    target = str(run_dir / "results.scoring-lenient.json")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"cannot write rescored results {target!r}: {os.strerror(code)}" in err
    assert not (run_dir / "results.scoring-lenient.json").exists()
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".tmp")]  # no half file
    assert {p: p.read_bytes() for p in (run_dir / "samples").rglob("*") if p.is_file()} == logs
    monkeypatch.undo()
    assert cli.main(["rescore", str(run_dir), "--scoring", "lenient"]) == 0  # a rerun repairs


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_a_read_only_run_directory_gives_one_line(run_dir, capsys):
    run_dir.chmod(0o555)
    try:
        assert cli.main(["rescore", str(run_dir), "--scoring", "lenient"]) == 2
    finally:
        run_dir.chmod(0o755)
    err = capsys.readouterr().err
    assert "cannot write rescored results" in err and "Permission denied" in err


def test_a_run_still_being_written_is_refused(run_dir, capsys):
    from harness.schema.writes import OutputLock

    before = _files(run_dir)
    with OutputLock(run_dir):  # a resume of this run is writing into it now
        assert cli.main(["rescore", str(run_dir), "--scoring", "lenient"]) == 2  # was 0
    err = capsys.readouterr().err
    assert f"still being written (pid {os.getpid()}" in err and "Traceback" not in err
    assert err.count("\n") == 1
    assert _files(run_dir) == before  # nothing written
    assert cli.main(["rescore", str(run_dir), "--scoring", "lenient"]) == 0  # once it ended
