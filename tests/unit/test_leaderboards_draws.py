"""Random-draw averaging, short labels and model names, bench settings vs measurements."""

import json
import statistics

import pytest

from harness.cli import main as harness_cli
from harness.schema.bench import bench_document
from harness.schema.results import MetricDefRecord, MetricRecord, ResultEntry, RunResults
from leaderboards import build_tables, load_sources
from leaderboards.accuracy import accuracy_draws_table, accuracy_summary_table, accuracy_table
from leaderboards.bench import is_setting
from leaderboards.labels import file_stem, model_display, short_paths, unique_names
from leaderboards.speedup import speedup_table

RANDOM = {"select": "random", "mode": "zero", "seed": 0, "draws": 5}


def _label(name, args):
    if not args:
        return name
    return (
        name
        + ":"
        + ",".join(f"{k}={json.dumps(v).strip(chr(34))}" for k, v in sorted(args.items()))
    )


def _entry(name, args, value, stderr=0.1, task="t"):
    return ResultEntry(
        task=task,
        task_args={},
        split="test",
        task_settings={},
        intervention=_label(name, args),
        intervention_spec={"name": name, "args": args},
        intervention_resolved={},
        metrics=[MetricRecord("acc", value, stderr, 8)],
        n_samples=8,
    )


def _save(path, entries, pretrained="m", family="f"):
    RunResults(
        spec_passed={},
        spec_resolved={},
        headscope_version="0",
        git={},
        environment={},
        model={"family": family, "pretrained": pretrained, "dtype": "float32"},
        settings={"dtype": "float32"},
        metric_defs={"t": [MetricDefRecord("acc", True)]},
        entries=list(entries),
    ).save(path / "results.json")
    return path


def _draws(k, values, **extra):
    return [
        _entry("ablate", {**RANDOM, "k": k, "draw": d, **extra}, v, stderr=0.1 + d / 100)
        for d, v in enumerate(values)
    ]


K1 = [0.2, 0.4, 0.6, 0.3, 0.5]
K2 = [0.1, 0.125, 0.3, 0.2, 0.25]


@pytest.fixture()
def drawn_run(tmp_path):
    entries = [_entry("none", {}, 0.5), *_draws(0.1, K1), *_draws(0.2, K2)]
    entries.append(_entry("ablate", {"select": "top", "k": 0.1, "mode": "zero"}, 0.15))
    return load_sources([_save(tmp_path, entries)]).runs


def test_draws_become_one_row_with_mean_and_spread(drawn_run):
    table = accuracy_table(drawn_run)
    random_rows = [r for r in table.rows if "select=random" in r["intervention"]]
    assert [r["intervention"] for r in random_rows] == [
        "ablate:k=0.1,mode=zero,select=random (mean of 5 draws)",
        "ablate:k=0.2,mode=zero,select=random (mean of 5 draws)",
    ]
    for row, values in zip(random_rows, (K1, K2)):
        assert row["value"] == pytest.approx(statistics.mean(values), abs=1e-15)
        assert row["delta"] == pytest.approx(statistics.mean(values) - 0.5, abs=1e-12)
        assert row["draws"] == 5 and row["n"] == 8
        assert row["draw_sd"] == pytest.approx(statistics.stdev(values))
        assert row["draw_se"] == pytest.approx(statistics.stdev(values) / 5**0.5)
        assert (row["draw_min"], row["draw_max"]) == (min(values), max(values))
        assert row["stderr"] == pytest.approx(statistics.mean(0.1 + d / 100 for d in range(5)))
    (top,) = [r for r in table.rows if "select=top" in r["intervention"]]
    assert top.get("draws") is None and top["value"] == 0.15
    assert len(table.rows) == 4  # none, top, two draw means: no per-draw row
    assert any("mean over the random draws" in n and "seed 0" in n for n in table.notes)


def test_per_draw_rows_are_kept_in_a_detail_table(drawn_run):
    draws = accuracy_draws_table(drawn_run)
    assert draws.detail and len(draws.rows) == 10
    k1 = [r for r in draws.rows if r["intervention"].startswith("ablate:k=0.1,")]
    assert [r["draw"] for r in k1] == [0, 1, 2, 3, 4]
    assert [r["value"] for r in k1] == K1
    assert k1[2]["intervention_id"] == "ablate:draw=2,draws=5,k=0.1,mode=zero,seed=0,select=random"
    summary = accuracy_summary_table(drawn_run)
    (row,) = [r for r in summary.rows if r["intervention"].startswith("ablate:k=0.2,mode=zero,s")]
    assert row["task:t"] == pytest.approx(statistics.mean(K2))


def test_draw_groups_with_other_differences_stay_apart(tmp_path):
    entries = [*_draws(0.1, [0.2, 0.4]), *_draws(0.1, [0.6, 0.8], seed=1)]
    entries += _draws(0.1, [0.3], mode="mean")
    entries.append(_entry("ablate", {"select": "random", "k": 0.1, "seed": 3}, 0.7))
    table = accuracy_table(load_sources([_save(tmp_path, entries)]).runs)
    shown = {r["intervention"]: r["value"] for r in table.rows}
    assert shown == {
        "ablate:k=0.1,mode=zero,seed=0,select=random (mean of 2 draws)": pytest.approx(0.3),
        "ablate:k=0.1,mode=zero,seed=1,select=random (mean of 2 draws)": pytest.approx(0.7),
        "ablate:k=0.1,mode=mean,seed=0,select=random (mean of 1 draw)": 0.3,
        "ablate:k=0.1,seed=3,select=random": 0.7,  # no draw argument: shown as it is
    }


def test_ablation_figure_uses_the_draw_mean_with_sd(drawn_run, tmp_path):
    from leaderboards.figures import _ablation_groups
    from leaderboards.sources import Sources

    (group,) = _ablation_groups(Sources(runs=drawn_run))
    (label,) = [name for name in group["curves"] if name.startswith("random")]
    assert "mean ± sd" in label
    points = sorted(group["curves"][label])
    assert [p[0] for p in points] == [0.1, 0.2]
    assert points[1][1] == pytest.approx(statistics.mean(K2))
    assert points[1][2] == pytest.approx(statistics.stdev(K2))
    assert group["base"] == 0.5


def test_ranking_paths_shown_short_but_never_merged(tmp_path):
    a, b = "/runs/qwen/rank/ranking.json", "/runs/other/rank/ranking.json"
    top = {"select": "top", "k": 2, "mode": "zero"}
    entries = [
        _entry("ablate", {**top, "ranking": a}, 0.3),
        _entry("ablate", {**top, "ranking": b}, 0.4),
    ]
    entries.append(_entry("hybrid", {"keep": 0.25, "window": 8, "ranking": a}, 0.45))
    table = accuracy_table(load_sources([_save(tmp_path, entries)]).runs)
    labels = {r["intervention"]: r["value"] for r in table.rows}
    assert labels == {
        "ablate:k=2,mode=zero,ranking=qwen/rank/ranking.json,select=top": 0.3,
        "ablate:k=2,mode=zero,ranking=other/rank/ranking.json,select=top": 0.4,
        "hybrid:keep=0.25,ranking=qwen/rank/ranking.json,window=8": 0.45,
    }
    assert all("/runs/" not in r["intervention"] for r in table.rows)
    assert {r["intervention_id"] for r in table.rows} >= {_label("ablate", {**top, "ranking": a})}
    (note,) = [n for n in table.notes if n.startswith("Files in labels")]
    assert a in note and b in note


def test_short_paths_and_names():
    paths = ["/a/rank/ranking.json", "/b/rank/ranking.json", "/c/x/other.json"]
    assert short_paths(paths) == {
        "/a/rank/ranking.json": "a/rank/ranking.json",
        "/b/rank/ranking.json": "b/rank/ranking.json",
        "/c/x/other.json": "other.json",
    }
    assert short_paths(["/tmp/p/rank/ranking.json"]) == {"/tmp/p/rank/ranking.json": "ranking.json"}
    assert model_display({"family": "toy", "pretrained": "/w/main/harness/assets/toy"}) == "toy"
    assert model_display({"family": "llava", "pretrained": "/tmp/tinyllava"}) == "llava:tinyllava"
    assert model_display({"family": "llava", "pretrained": "./ckpt/"}) == "llava:ckpt"
    assert (
        model_display({"family": "qwen2_vl", "pretrained": "Qwen/Qwen2-VL-2B"})
        == "Qwen/Qwen2-VL-2B"
    )
    assert model_display({"family": "qwen2_vl"}) == "qwen2_vl"
    names = unique_names([("/a/tiny", "llava:tiny"), ("/b/tiny", "llava:tiny"), ("/c/x", "f:x")])
    assert names == {"/a/tiny": "/a/tiny", "/b/tiny": "/b/tiny", "/c/x": "f:x"}


def test_models_with_one_basename_are_not_merged(tmp_path):
    _save(tmp_path / "a", [_entry("none", {}, 0.5)], pretrained="/a/tiny", family="llava")
    _save(tmp_path / "b", [_entry("none", {}, 0.6)], pretrained="/b/tiny", family="llava")
    _save(tmp_path / "c", [_entry("none", {}, 0.7)], pretrained="/c/toy", family="toy")
    table = accuracy_table(load_sources([tmp_path]).runs)
    shown = sorted((r["model"], r["model_id"], r["value"]) for r in table.rows)
    assert shown == [
        ("/a/tiny", "/a/tiny", 0.5),
        ("/b/tiny", "/b/tiny", 0.6),
        ("toy", "/c/toy", 0.7),
    ]


def _bench_row(length, keep, dense, hybrid, **extra):
    # The keys of harness.bench.hybrid.run_bench rows: results, measurements, settings.
    return {
        "length": length, "keep": keep, "window": 512, "dense_ms": dense, "hybrid_ms": hybrid,
        "speedup": round(dense / hybrid, 3), "bound": 2.0, "of_bound": dense / hybrid / 2.0,
        "sdpa_ms": dense * 0.9, "dispatch_overhead": round(1 / 0.9 - 1, 4),
        "times_ms": {"dense": [dense], "hybrid": [hybrid], "sdpa": [dense * 0.9]},
        "speedup_cpu_time": 1.1, "cpu_ms": {"dense": [1.0]}, "geometry": "default",
        "arch": "qwen2", "layers": 1, "dtype": "float32", "device": "cpu", "threads": 2,
        "scope": "attention", "sinks": 0, "repeats": 3, "heads_kept_per_layer": 2,
        "kept_fraction": 0.125, "dims": {"hidden": 1024, "heads": 16}, **extra,
    }  # fmt: skip


def test_bench_measurements_never_split_groups(tmp_path):
    rows = [_bench_row(n, keep, 10.0 * n / 1024, 9.0 * n / 1024 * (1 + keep)) for n in (1024, 2048)
            for keep in (0.1, 0.25)]  # fmt: skip
    (tmp_path / "bench_hybrid.json").write_text(json.dumps(bench_document("hybrid", rows)))
    sources = load_sources([tmp_path])
    table = speedup_table(sources.bench_hybrid)
    keys = [c.key for c in table.columns]
    assert [k for k in keys if k.startswith("set:")] == ["set:geometry", "set:scope"]
    assert {"dispatch_overhead", "kept_fraction", "sdpa_ms"} <= set(keys)
    assert all(r["dispatch_overhead"] == round(1 / 0.9 - 1, 4) for r in table.rows)
    assert any("random-weight decoder" in n for n in table.notes)
    for measured in ("of_bound", "times_ms", "heads_kept_per_layer", "dims", "sdpa_ms"):
        assert not is_setting(measured, rows[0][measured]), measured
    for setting in ("geometry", "layers", "threads", "scope", "sinks", "repeats", "dtype"):
        assert is_setting(setting, rows[0][setting]), setting
    pytest.importorskip("matplotlib")
    out = tmp_path / "board"
    assert harness_cli.main(["leaderboard", str(tmp_path), "--output", str(out), "--quiet"]) == 0
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "speedup__default__attention.pdf",
        "speedup__default__attention.png",
    ]


def test_bench_settings_do_split_groups(tmp_path):
    rows = [_bench_row(1024, 0.1, 10.0, 8.0), _bench_row(1024, 0.1, 12.0, 8.0, threads=8)]
    (tmp_path / "b.json").write_text(json.dumps(bench_document("hybrid", rows)))
    table = speedup_table(load_sources([tmp_path]).bench_hybrid)
    assert sorted(r["set:threads"] for r in table.rows) == ["2", "8"]


def test_file_stem_is_short_and_unique():
    assert file_stem("speedup", "llava:tiny", "attention", "") == "speedup__llava_tiny__attention"
    long_a, long_b = "x=" + "a" * 200, "x=" + "a" * 199 + "b"
    stem_a, stem_b = file_stem("speedup", long_a), file_stem("speedup", long_b)
    assert len(stem_a) <= 96 and stem_a != stem_b


def test_detail_tables_stay_out_of_the_headline(drawn_run, tmp_path, capsys):
    run_dir = drawn_run[0].path.parent
    out = tmp_path / "board"
    argv = ["leaderboard", str(run_dir), "--output", str(out), "--format", "md,csv,json"]
    assert harness_cli.main([*argv, "--no-figures"]) == 0
    printed = capsys.readouterr().out
    assert "Accuracy per random draw" not in printed and "(mean of 5 draws)" in printed
    assert "Accuracy per random draw" not in (out / "leaderboard.md").read_text()
    doc = json.loads((out / "accuracy_draws.json").read_text())
    assert doc["detail"] is True and len(doc["rows"]) == 10
    assert (out / "accuracy_draws.csv").read_text().count("\n") == 11
    # A leaderboard folder inside a run folder is not read back as input.
    again = build_tables(load_sources([run_dir]))
    assert [t.name for t in again] == ["accuracy_summary", "accuracy", "accuracy_draws"]
