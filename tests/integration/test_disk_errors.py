"""A full disk or a read-only output directory: one line naming the file, then a clean resume.

Issue 29. CI runs as root, where chmod does not make a directory read-only, so the system's
refusals are simulated where headscope's writers meet them: ``ENOSPC`` in the middle of a
sample row or of an atomic rename, ``EROFS`` when a temporary file is created.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import tempfile

from harness.cli import main as cli
from harness.run import main_job
from harness.schema import samples as samples_module
from tests.integration._main_job_util import SmallConfig

GRID = ["run", "--model", "toy", "--tasks", "pope_mini", "--interventions", "none",
        "--limit", "4", "--batch_size", "1"]  # fmt: skip


class _FullFile:
    """An append handle on a full disk: half the text reaches the file, then ENOSPC."""

    def __init__(self, path):
        self.fh = builtins.open(path, "a", encoding="utf-8")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()

    def write(self, text):
        self.fh.write(text[: len(text) // 2])
        self.fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _one_line(err: str) -> str:
    """The error line; the only one besides progress lines and warnings."""
    lines = [
        line
        for line in err.splitlines()
        if line.strip() and not line.startswith(("[", "headscope: warning"))
    ]
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def test_grid_disk_full_mid_row_is_one_line_and_resumes(tmp_path, monkeypatch, capsys):
    """Before: a traceback (internal error, exit 1)."""
    out = tmp_path / "run"
    opened = {"n": 0}

    def open_on_a_full_disk(path, mode="r", **kwargs):
        opened["n"] += 1
        return _FullFile(path) if opened["n"] == 3 else builtins.open(path, mode, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(samples_module, "open", open_on_a_full_disk, raising=False)
        assert cli.main([*GRID, "--output", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "samples/pope_mini" in line and "No space left on device" in line
    assert "free disk space there, then rerun the same command" in line
    assert cli.main([*GRID, "--output", str(out)]) == 0
    assert cli.main([*GRID, "--output", str(tmp_path / "clean")]) == 0
    resumed = json.loads((out / "results.json").read_text())["entries"][0]
    clean = json.loads((tmp_path / "clean" / "results.json").read_text())["entries"][0]
    assert resumed["n_samples"] == 4 and resumed["metrics"] == clean["metrics"]


def _read_only_under(out, monkeypatch):
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        where = str(kwargs.get("dir", ""))
        if where.startswith(str(out)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), f"{where}/.x.tmp")
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


def test_grid_read_only_output_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        _read_only_under(out, m)
        assert cli.main([*GRID, "--output", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{out / 'run_spec.json'}" in line and "Read-only file system" in line
    assert not out.exists()


JOB = ["run", "--tasks", "refcocog_mini", "--limit", "2"]


def test_main_job_disk_full_is_one_line_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(main_job, "ProtocolConfig", SmallConfig)
    out = tmp_path / "job"
    real = os.replace

    full = []

    def replace(src, dst, *args, **kwargs):  # the disk is full from spearman.json on
        if full or str(dst).endswith("spearman.json"):
            full.append(dst)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(src), None, str(dst))
        return real(src, dst, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(os, "replace", replace)
        assert cli.main([*JOB, "--output", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(full[-1]).endswith("timings.json")  # the stage's partial time could not be kept
    assert f"{out / 'rank' / 'spearman.json'}" in line and "No space left on device" in line
    assert not list(out.rglob("*.tmp")) and not (out / "rank" / "ranking.json").exists()
    assert cli.main([*JOB, "--output", str(out)]) == 0
    assert (out / "summary.json").is_file() and (out / "rank" / "ranking.json").is_file()


def test_main_job_read_only_output_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(main_job, "ProtocolConfig", SmallConfig)
    out = tmp_path / "job"
    with monkeypatch.context() as m:
        _read_only_under(out, m)
        assert cli.main([*JOB, "--output", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{out / 'main_job.json'}" in line and "Read-only file system" in line
