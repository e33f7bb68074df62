"""Leaderboards keep runs apart on every identity field, show the scoring mode, and read one
results file per run directory when ``headscope rescore`` left copies beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.schema.results import MetricDefRecord, MetricRecord, ResultEntry, RunResults
from leaderboards.accuracy import accuracy_draws_table, accuracy_summary_table, accuracy_table
from leaderboards.settings import MergeError
from leaderboards.sources import load_sources

PRETRAINED = "Qwen/Qwen2.5-VL-7B-Instruct"


def _entry(value, intervention="none", args=None, scoring="official", task_args=None):
    name = intervention.split(":")[0]
    return ResultEntry(
        task="pope",
        task_args=dict(task_args or {}),
        split="test",
        task_settings={"scoring": scoring},
        intervention=intervention,
        intervention_spec={"name": name, "args": dict(args or {})},
        intervention_resolved={},
        metrics=[MetricRecord("accuracy", value, 0.01, 8)],
        n_samples=8,
        samples_file="samples/pope__x.jsonl",
    )


def _save(path: Path, entries, seed=0, model=None, spec_model=None, settings=None, name=None):
    res = RunResults(
        spec_passed={},
        spec_resolved={"seed": seed, "model": {"revision": None, **(spec_model or {})}},
        headscope_version="0",
        git={},
        environment={},
        model=model or {"family": "qwen2_5_vl", "pretrained": PRETRAINED, "dtype": "bfloat16"},
        settings={"dtype": "bfloat16", **(settings or {})},
        metric_defs={"pope": [MetricDefRecord("accuracy", True)]},
        entries=list(entries),
    )
    path.mkdir(parents=True, exist_ok=True)
    res.save(path / (name or "results.json"))
    return path


def _draws(values, seed):
    base = {"k": 0.1, "mode": "zero", "select": "random", "draws": len(values)}
    out = [_entry(0.9)]
    for draw, value in enumerate(values):
        args = {**base, "draw": draw}
        label = "ablate:" + ",".join(f"{k}={v}" for k, v in sorted(args.items()))
        out.append(_entry(value, label, args))
    return out


def test_random_draws_of_two_seeds_are_two_rows(tmp_path):
    a = _save(tmp_path / "seed0", _draws([0.5, 0.6], seed=0), seed=0)
    b = _save(tmp_path / "seed1", _draws([0.7, 0.8], seed=1), seed=1)
    runs = load_sources([a, b]).runs  # was refused: "appears twice with different numbers"
    rows = [r for r in accuracy_table(runs).rows if "draws" in r["intervention"]]
    assert sorted((r["set:seed"], r["value"]) for r in rows) == [("0", 0.55), ("1", 0.75)]
    assert len(accuracy_draws_table(runs).rows) == 4
    assert all(r["delta"] is not None for r in rows)  # each against its own seed's baseline


@pytest.mark.parametrize(
    ("field", "first", "second"),
    [
        ("revision", {"spec_model": {"revision": "v1"}}, {"spec_model": {"revision": "v2"}}),
        (
            "family",
            {"model": {"family": "qwen2_vl", "pretrained": PRETRAINED}},
            {"model": {"family": "qwen2_5_vl", "pretrained": PRETRAINED}},
        ),
    ],
)
def test_runs_differing_in_an_identity_field_are_two_rows(tmp_path, field, first, second):
    a = _save(tmp_path / "a", [_entry(0.8)], **first)
    b = _save(tmp_path / "b", [_entry(0.7)], **second)
    rows = accuracy_table(load_sources([a, b]).runs).rows  # was merged or refused
    assert sorted(r["value"] for r in rows) == [0.7, 0.8]
    assert len({r[f"set:model.{field}"] for r in rows}) == 2


def test_one_model_keeps_its_family_out_of_the_columns(tmp_path):
    a = _save(tmp_path / "a", [_entry(0.8)])
    b = _save(tmp_path / "b", [_entry(0.8, "ablate:k=1", {"k": 1})])
    table = accuracy_table(load_sources([a, b]).runs)
    assert not [c.key for c in table.columns if "family" in c.key]


def test_every_accuracy_table_shows_the_scoring_mode(tmp_path):
    runs = load_sources([_save(tmp_path / "a", _draws([0.5, 0.6], seed=0))]).runs
    for table in (accuracy_table(runs), accuracy_draws_table(runs)):
        assert "scoring" in [c.key for c in table.columns]
        assert {r["scoring"] for r in table.rows} == {"official"}
    summary = accuracy_summary_table(runs)
    assert [c.label for c in summary.columns][-1] == "pope (accuracy, scoring official)"


def _rescored_dir(tmp_path):
    run = _save(tmp_path / "run", [_entry(0.8)])
    lenient = _entry(0.85, scoring="lenient", task_args={"scoring": "lenient"})
    _save(run, [lenient], name="results.scoring-lenient.json", settings={"rescored_from": "r"})
    same = _entry(0.8, task_args={"scoring": "official"})
    _save(run, [same], name="results.scoring-official.json", settings={"rescored_from": "r"})
    return run


def test_a_run_directory_with_rescored_copies_is_read_in_one_declared_mode(tmp_path, capsys):
    run = _rescored_dir(tmp_path)
    argv = ["leaderboard", str(run), "--quiet"]
    assert cli.main(argv) == 2  # was 0: results.json read, the copies left out with a warning
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "results.scoring-lenient.json, results.scoring-official.json" in err
    assert "--scoring lenient|official" in err
    with pytest.raises(MergeError, match="reads one scoring mode per run"):
        load_sources([tmp_path])  # a folder of runs too
    (row,) = accuracy_table(load_sources([run / "results.json"]).runs).rows  # passed by name
    assert (row["value"], row["scoring"]) == (0.8, "official")
    lenient = load_sources([run], scoring="lenient").runs
    assert [r.path.name for r in lenient] == ["results.scoring-lenient.json"]
    assert [r["value"] for r in accuracy_table(lenient).rows] == [0.85]
    with pytest.raises(MergeError, match="scored 'official', not --scoring 'lmms_eval'"):
        load_sources([run], scoring="lmms_eval")
    out = tmp_path / "board"
    argv = ["leaderboard", str(run), "--scoring", "lenient", "--output", str(out)]
    assert cli.main([*argv, "--format", "csv", "--no-figures", "--quiet"]) == 0
    assert "0.850" in (out / "accuracy.csv").read_text()


def test_view_reads_a_rescored_run_in_the_mode_it_is_given(tmp_path, capsys):
    pytest.importorskip("jinja2")
    run = _rescored_dir(tmp_path)
    argv = ["view", str(run), "--output", str(tmp_path / "site"), "--no-figures"]
    assert cli.main(argv) == 2  # was 0: the official results shown, the copies left out
    assert "--scoring lenient|official" in capsys.readouterr().err
    assert cli.main([*argv, "--scoring", "lenient"]) == 0
    page = (tmp_path / "site" / "index.html").read_text()
    assert "lenient" in page and "0.850" in page  # the lenient copy's number, not 0.8


def test_rescoring_under_the_recorded_mode_does_not_double_rows(tmp_path):
    run = _rescored_dir(tmp_path)
    both = [run / "results.json", run / "results.scoring-official.json"]  # passed explicitly
    (row,) = accuracy_table(load_sources(both).runs).rows  # was two rows
    assert row["value"] == 0.8 and row["delta"] == 0.0
    (row,) = accuracy_table(load_sources([run], scoring="official").runs).rows
    assert row["value"] == 0.8


def test_a_link_to_a_file_outside_the_folder_is_not_read(tmp_path):
    inside = _save(tmp_path / "runs" / "a", [_entry(0.8)])
    outside = _save(tmp_path / "elsewhere", [_entry(0.1, "ablate:k=1", {"k": 1})])
    (inside.parent / "b").mkdir()
    (inside.parent / "b" / "results.json").symlink_to(outside / "results.json")
    sources = load_sources([tmp_path / "runs"])
    assert [r.path for r in sources.runs] == [inside / "results.json"]
    assert any("outside" in w for w in sources.warnings)
