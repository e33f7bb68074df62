"""``headscope leaderboard --output``: never another command's directory, each table written
atomically, one line naming the file on a full or read-only disk."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.schema.results import MetricDefRecord, MetricRecord, ResultEntry, RunResults

FLAGS = ["--no-figures", "--quiet"]
DATA = Path(__file__).resolve().parents[1] / "data" / "leaderboards"


def _run(path, value=0.8):
    res = RunResults(
        spec_passed={},
        spec_resolved={"seed": 0},
        headscope_version="0",
        git={},
        environment={},
        model={"family": "toy", "pretrained": "toy"},
        settings={},
        metric_defs={"pope": [MetricDefRecord("accuracy", True)]},
        entries=[
            ResultEntry(
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
        ],
    )
    path.mkdir(parents=True, exist_ok=True)
    res.save(path / "results.json")
    return path


def _tree(path):
    return {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("sub", ["rank", ".", "samples", "rank/heatmaps"])
def test_output_into_a_run_directory_is_refused(tmp_path, capsys, sub):
    run = _run(tmp_path / "D")
    (run / "rank" / "heatmaps").mkdir(parents=True)
    (run / "rank" / "spearman.json").write_text('{"mine": 1}')
    (run / "rank" / "ranking.json").write_text('{"mine": 2}')
    (run / "rank" / "heatmaps" / "pope.png").write_bytes(b"png")
    (run / "samples").mkdir()
    (run / "samples" / "pope__none.jsonl").write_text('{"doc_id": "1"}\n')
    before = _tree(run)
    out = run / sub
    argv = ["leaderboard", str(run), "--output", str(out), "--format", "json", *FLAGS]
    assert cli.main(argv) == 2  # was 0, rank/spearman.json overwritten by the table
    err = capsys.readouterr().err
    assert "is another command's directory" in err and "Traceback" not in err
    assert _tree(run) == before


def test_a_leaderboard_folder_inside_the_run_is_fine_and_rewritten(tmp_path):
    run = _run(tmp_path / "D")
    out = run / "leaderboards"
    out.mkdir()  # an earlier leaderboard's Spearman table has a rank file's name
    (out / "spearman.json").write_text(json.dumps({"schema": "headscope.leaderboard"}))
    for _ in range(2):  # the main job's place; a rerun rewrites it
        argv = ["leaderboard", str(run), "--output", str(out), "--format", "md,json", *FLAGS]
        assert cli.main(argv) == 0
    assert (out / "accuracy.json").is_file() and (out / "leaderboard.md").is_file()


def _fail_with(code):
    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    return fail


@pytest.mark.parametrize(
    ("code", "where"),
    [(errno.ENOSPC, "fsync"), (errno.EROFS, "mkstemp"), (errno.EACCES, "mkstemp")],
)
def test_a_full_or_read_only_disk_gives_one_line(tmp_path, monkeypatch, capsys, code, where):
    run = _run(tmp_path / "D")
    out = tmp_path / "board"
    argv = ["leaderboard", str(run), "--output", str(out), "--format", "md,csv", *FLAGS]
    assert cli.main(argv) == 0
    before = _tree(out)
    _run(tmp_path / "D", value=0.5)  # new numbers: every table changes
    writes = []

    def fsync_second(fd):  # the disk fills up after the first table
        writes.append(fd)
        if len(writes) > 1:
            raise OSError(code, os.strerror(code))

    if where == "fsync":
        monkeypatch.setattr(os, "fsync", fsync_second)
    else:
        monkeypatch.setattr(tempfile, "mkstemp", _fail_with(code))
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"cannot write leaderboard table {str(out)!r}"[:-1] in err
    assert os.strerror(code) in err
    after = _tree(out)
    assert set(after) == set(before)  # no temp file left behind
    changed = [p for p in after if after[p] != before[p]]
    assert len(changed) == (1 if where == "fsync" else 0)  # each file whole: old or new
    monkeypatch.undo()
    assert cli.main(argv) == 0  # a rerun repairs everything
    assert all("0.500" in p.read_text() for p in out.glob("accuracy.*"))


def test_markdown_escapes_html_from_names_and_paths(tmp_path):
    run = tmp_path / "<img src=x onerror=alert(1)>"
    _run(run)
    doc = json.loads((run / "results.json").read_text())
    doc["model"]["pretrained"] = "<script>alert(1)</script>"
    (run / "results.json").write_text(json.dumps(doc))
    out = tmp_path / "board"
    argv = ["leaderboard", str(run), "--output", str(out), "--format", "md", *FLAGS]
    assert cli.main(argv) == 0
    text = (out / "leaderboard.md").read_text()
    assert "<script>" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_a_full_disk_while_drawing_figures_gives_one_line(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    runs = [str(p) for p in sorted(DATA.glob("run_*"))]
    out = tmp_path / "board"
    monkeypatch.setattr(Figure, "savefig", _fail_with(errno.ENOSPC))
    assert cli.main(["leaderboard", *runs, "--output", str(out), "--format", "md", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"cannot write leaderboard figures in {str(out / 'figures')!r}" in err
    assert os.strerror(errno.ENOSPC) in err
    assert not [p for p in out.rglob("*") if p.is_file() and p.suffix in (".png", ".pdf", ".tmp")]


def test_a_second_leaderboard_leaves_no_table_of_the_first(tmp_path):
    out = tmp_path / "board"
    flags = ["--output", str(out), "--format", "md,csv", *FLAGS]
    assert cli.main(["leaderboard", str(DATA / "run_a"), *flags]) == 0
    assert (out / "spearman.md").is_file()  # run_a holds a ranking
    (out / "notes.txt").write_text("mine")
    outside = tmp_path / "outside.md"
    outside.write_text("not the leaderboard's")
    doc = json.loads((out / ".leaderboard.json").read_text())
    doc["files"].append("../outside.md")  # a list edited by hand reaches nothing outside
    (out / ".leaderboard.json").write_text(json.dumps(doc))
    run = _run(tmp_path / "D")  # results only: no ranking tables this time
    assert cli.main(["leaderboard", str(run), *flags]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert not [n for n in names if n.startswith(("spearman", "universal", "sparsity"))]
    assert "notes.txt" in names and outside.is_file()  # was: spearman.md etc. of run_a stayed
    listed = json.loads((out / ".leaderboard.json").read_text())["files"]
    assert sorted(listed) == sorted(n for n in names if n not in ("notes.txt", ".leaderboard.json"))
