"""``headscope rank --output`` refuses another command's run directory, writing nothing."""

from __future__ import annotations

import json

import pytest

from harness.cli.main import main


def _no_model(spec):
    raise AssertionError("the model must not load for a refused output directory")


@pytest.mark.parametrize(
    "files",
    [("run_spec.json", "results.json", "samples/pope__none.jsonl"), ("summary.json", "rank/")],
    ids=["grid_run", "main_job"],
)
def test_rank_refuses_a_run_directory_as_output(tmp_path, monkeypatch, capsys, files):
    from harness.api import model as base

    monkeypatch.setattr(base, "load_adapter", _no_model)
    out = tmp_path / "run"
    for name in files:
        path = out / name
        if name.endswith("/"):
            path.mkdir(parents=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"kept": name}))
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    assert main(["rank", "--tasks", "refcocog_mini", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"rank output directory {str(out)!r} holds another command's run" in err
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before  # nothing written


def test_rank_accepts_its_own_directory_again(tmp_path):
    from harness.run.outdir import check_rank_dir

    out = tmp_path / "rank"
    out.mkdir()
    (out / "ranking.json").write_text("{}")
    (out / "spearman.json").write_text("{}")
    check_rank_dir(out)  # a rerun of rank into its own directory is allowed
    check_rank_dir(tmp_path / "new")
