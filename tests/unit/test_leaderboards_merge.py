"""Merging several runs: grouping by settings, duplicates, conflicts, file discovery."""

import json
import shutil
from pathlib import Path

import pytest

from harness.schema.bench import bench_document
from harness.schema.results import MetricDefRecord, MetricRecord, ResultEntry, RunResults
from leaderboards.accuracy import accuracy_summary_table, accuracy_table
from leaderboards.diagnostics import parse_diagnostics
from leaderboards.formatting import to_csv
from leaderboards.settings import MergeError, split_settings
from leaderboards.sources import load_sources
from leaderboards.speedup import memory_table

DATA = Path(__file__).resolve().parents[1] / "data" / "leaderboards"


def _run(path, attn="sdpa", entries=(), defs=None, model="m", status="complete"):
    res = RunResults(
        spec_passed={},
        spec_resolved={},
        headscope_version="0",
        git={},
        environment={},
        model={"family": "f", "pretrained": model, "dtype": "float32", "attn_implementation": attn},
        settings={"dtype": "float32", "attn_implementation": attn},
        metric_defs=defs or {"t": [MetricDefRecord("acc", True)]},
        entries=list(entries),
        status=status,
    )
    res.save(Path(path) / "results.json")
    return Path(path)


def _entry(label, value, task="t", **settings):
    name, _, rest = label.partition(":")
    args = dict(kv.split("=") for kv in rest.split(",")) if rest else {}
    return ResultEntry(
        task=task,
        task_args={},
        split="test",
        task_settings=settings,
        intervention=label,
        intervention_spec={"name": name, "args": args},
        intervention_resolved={},
        metrics=[MetricRecord("acc", value, 0.01, 10)],
        n_samples=10,
    )


def test_merge_is_order_independent():
    runs = [DATA / "run_a", DATA / "run_b", DATA / "run_c"]
    forward = to_csv(accuracy_table(load_sources(runs).runs))
    backward = to_csv(accuracy_table(load_sources(runs[::-1]).runs))
    assert forward == backward


def test_incomparable_settings_are_shown_apart_not_averaged():
    table = accuracy_table(load_sources([DATA / "run_a", DATA / "run_b"]).runs)
    assert "set:attn_implementation" in [c.key for c in table.columns]
    label = "ablate:k=0.05,mode=zero,select=top"
    rows = [r for r in table.rows if r["intervention"] == label]
    assert sorted((r["set:attn_implementation"], r["value"]) for r in rows) == [
        ("eager", 0.3),
        ("sdpa", 0.275),
    ]
    summary = accuracy_summary_table(load_sources([DATA / "run_a", DATA / "run_b"]).runs)
    assert len([r for r in summary.rows if r["intervention"] == "none"]) == 2


def test_common_settings_become_a_note_not_a_column():
    table = accuracy_table(load_sources([DATA / "run_a"]).runs)
    assert not any(c.key.startswith("set:") for c in table.columns)
    assert any("attn_implementation=sdpa" in n for n in table.notes)


def test_no_baseline_borrowed_from_other_settings(tmp_path):
    _run(tmp_path / "sdpa", "sdpa", [_entry("none", 0.5), _entry("ablate:k=2", 0.3)])
    _run(tmp_path / "eager", "eager", [_entry("ablate:k=2", 0.2)])
    table = accuracy_table(load_sources([tmp_path]).runs)
    (eager,) = [r for r in table.rows if r["set:attn_implementation"] == "eager"]
    assert eager["delta"] is None
    assert any("No 'none' baseline" in n and "m/t" in n for n in table.notes)


def test_baseline_from_another_run_with_same_settings(tmp_path):
    _run(tmp_path / "base", "sdpa", [_entry("none", 0.5)])
    _run(tmp_path / "abl", "sdpa", [_entry("ablate:k=2", 0.25)])
    (row,) = [
        r
        for r in accuracy_table(load_sources([tmp_path]).runs).rows
        if r["intervention"] == "ablate:k=2"
    ]
    assert row["delta"] == -0.25


def test_task_settings_split_rows_and_pick_matching_baseline(tmp_path):
    _run(
        tmp_path / "r", "sdpa", [_entry("none", 0.5, frames=8), _entry("ablate:k=2", 0.4, frames=8)]
    )
    _run(
        tmp_path / "s",
        "sdpa",
        [_entry("none", 0.7, frames=16), _entry("ablate:k=2", 0.5, frames=16)],
    )
    table = accuracy_table(load_sources([tmp_path]).runs)
    abl = {r["task_settings"]: r["delta"] for r in table.rows if r["intervention"] != "none"}
    assert abl == {"frames=8": pytest.approx(-0.1), "frames=16": pytest.approx(-0.2)}
    summary = accuracy_summary_table(load_sources([tmp_path]).runs)
    assert {c.key for c in summary.columns} >= {"task:t [frames=8]", "task:t [frames=16]"}


def test_identical_duplicate_is_dropped(tmp_path):
    shutil.copytree(DATA / "run_b", tmp_path / "copy")
    once = accuracy_table(load_sources([DATA / "run_b"]).runs)
    twice = accuracy_table(load_sources([DATA / "run_b", tmp_path / "copy"]).runs)
    assert once.rows == twice.rows


def test_conflicting_duplicate_is_an_error():
    with pytest.raises(MergeError, match="appears twice with different numbers"):
        accuracy_table(load_sources([DATA / "run_a", DATA / "conflict"]).runs)


def test_conflicting_metric_direction_is_an_error(tmp_path):
    _run(tmp_path / "a", entries=[_entry("none", 0.5)])
    _run(tmp_path / "b", "eager", [_entry("none", 0.5)], {"t": [MetricDefRecord("acc", False)]})
    with pytest.raises(MergeError, match="lower-is-better"):
        accuracy_table(load_sources([tmp_path]).runs)


def test_partial_run_warns(tmp_path):
    _run(tmp_path, entries=[_entry("none", 0.5)], status="partial")
    assert any("partial" in w for w in load_sources([tmp_path]).warnings)


def test_discovery_skips_samples_and_foreign_json(tmp_path):
    _run(tmp_path / "r", entries=[_entry("none", 0.5)])
    (tmp_path / "r" / "samples").mkdir()
    (tmp_path / "r" / "samples" / "x.json").write_text('{"schema": "headscope.results"}')
    (tmp_path / "r" / "run_spec.json").write_text('{"model": {}}')
    (tmp_path / "r" / "broken.json").write_text("{")
    sources = load_sources([tmp_path])
    assert len(sources.runs) == 1
    assert any("broken.json" in w for w in sources.warnings)
    with pytest.raises(MergeError, match="not a headscope"):
        load_sources([tmp_path / "r" / "run_spec.json"])


def test_bench_rows_settings_and_conflicts(tmp_path):
    rows = [
        {
            "length": 512,
            "probe_peak_mb": 10.0,
            "probe_ms": 1.0,
            "eager_peak_mb": 30.0,
            "eager_ms": 2.0,
        }
    ]
    for name, dtype in (("a", "float32"), ("b", "bfloat16")):
        (tmp_path / f"{name}.json").write_text(
            json.dumps(bench_document("ram", rows, model="m", settings={"dtype": dtype}))
        )
    table = memory_table(load_sources([tmp_path]).bench_ram)
    assert sorted(r["set:dtype"] for r in table.rows) == ["bfloat16", "float32"]
    assert all(r["mem_ratio"] == 3.0 and r["time_ratio"] == 2.0 for r in table.rows)
    changed = [{**rows[0], "probe_ms": 9.0}]
    (tmp_path / "c.json").write_text(
        json.dumps(bench_document("ram", changed, model="m", settings={"dtype": "float32"}))
    )
    with pytest.raises(MergeError, match="appears twice"):
        memory_table(load_sources([tmp_path]).bench_ram)
    (tmp_path / "d.json").write_text(json.dumps(bench_document("hybrid", [{"length": 1}])))
    with pytest.raises(MergeError, match="lacks"):
        load_sources([tmp_path / "d.json"])


def test_split_settings():
    differing, common = split_settings([{"a": 1, "b": 2}, {"a": 1, "b": 3}, {"a": 1.0}])
    assert differing == ["b"] and common == {"a": 1}


def _diag(**change):
    layer = {
        "layer": 0,
        "module": "ffn",
        "eRank_in": 1.0,
        "eRank_out": 2.0,
        "dS": 0.1,
        "dD": 0.2,
        "RID": 0.3,
        "TME_in": 0.4,
        "TME_out": 0.5,
        "MixIG": 0.1,
    }
    doc = {
        "schema": "headscope.diagnostics",
        "schema_version": 1,
        "model": {"pretrained": "m"},
        "settings": {},
        "variant": "paper",
        "layers": [layer],
        "erope_floor": None,
    }
    doc.update(change)
    return doc


def test_diagnostics_layout_validation():
    parsed = parse_diagnostics(_diag())
    assert parsed.layers[0]["erank_in"] == 1.0 and parsed.model == "m"
    bad = [
        ({"schema_version": 2}, "schema_version"),
        ({"variant": "both"}, "variant"),
        ({"layers": []}, "non-empty"),
        ({"layers": [{**_diag()["layers"][0], "module": "mlp"}]}, "module"),
        ({"layers": _diag()["layers"] * 2}, "appears twice"),
        ({"layers": [{"layer": 0, "module": "ffn", "RID": 0.1}]}, "lacks"),
        ({"baselines": {"noise_delta": {"RID": 0.6}}}, "MixIG"),
    ]
    for change, message in bad:
        with pytest.raises(MergeError, match=message):
            parse_diagnostics(_diag(**change))


def test_records_are_not_settings_a_ranking_request_included():
    from leaderboards.settings import flatten

    settings = {
        "seed": 0,
        "environment": {"threads": 2},
        "request": {"model": {"name": "toy"}, "tasks": [{"name": "refcocog_mini"}], "seed": 0},
        "nested": {"request": 1},
    }
    assert flatten(settings) == {"seed": 0, "nested.request": 1}
