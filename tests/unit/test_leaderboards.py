"""Leaderboard builders on hand-made inputs: goldens, independent recomputation, CLI."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main as harness_cli
from harness.schema.results import load_results
from leaderboards import build_tables, load_sources
from leaderboards.accuracy import accuracy_table
from leaderboards.diagnostics import diagnostics_summary_table
from leaderboards.spearman import spearman_table, universal_table
from leaderboards.speedup import speedup_table

DATA = Path(__file__).resolve().parents[1] / "data" / "leaderboards"
GOLDEN = DATA / "golden"
RUNS = [DATA / "run_a", DATA / "run_b", DATA / "run_c"]


@pytest.fixture(scope="module")
def sources():
    return load_sources(RUNS)


def _rows(table, **match):
    return [r for r in table.rows if all(r.get(k) == v for k, v in match.items())]


def test_goldens_match_cli_output(tmp_path, monkeypatch):
    sys.path.insert(0, str(DATA))
    try:
        from regen import GOLDEN_ARGS
    finally:
        sys.path.remove(str(DATA))
    monkeypatch.chdir(DATA)
    assert harness_cli.main(["leaderboard", *GOLDEN_ARGS, "--output", str(tmp_path)]) == 0
    goldens = sorted(p.name for p in GOLDEN.iterdir())
    assert [".leaderboard.json", *goldens] == sorted(p.name for p in tmp_path.iterdir())
    assert json.loads((tmp_path / ".leaderboard.json").read_text())["files"] == goldens
    assert {"accuracy.md", "accuracy.csv", "speedup.csv", "spearman.md"} <= set(goldens)
    for name in goldens:
        assert (tmp_path / name).read_text() == (GOLDEN / name).read_text(), name


def test_found_every_input_kind(sources):
    assert len(sources.runs) == 3 and len(sources.rankings) == 1
    assert len(sources.bench_hybrid) == 1 and len(sources.bench_ram) == 1
    assert {d.variant for d in sources.diagnostics} == {"paper", "code"}


def test_delta_uses_baseline_of_same_model_and_settings(sources):
    table = accuracy_table(sources.runs)
    raw = {p.name: load_results(p) for p in RUNS}

    def value(run, task, label):
        entry = next(e for e in raw[run].entries if e.task == task and e.intervention == label)
        return entry.metrics[0].value

    label = "ablate:k=0.05,mode=zero,select=top"
    for run, attn in (("run_a", "sdpa"), ("run_b", "eager")):
        (row,) = _rows(
            table, **{"set:attn_implementation": attn, "intervention": label}, model="tiny-qwen2vl"
        )
        expected = value(run, "refcocog_toy", label) - value(run, "refcocog_toy", "none")
        assert row["delta"] == pytest.approx(expected, abs=1e-12)
        assert row["value"] == value(run, "refcocog_toy", label)
    (llava,) = _rows(table, model="llava:tiny-llava", intervention=label)
    assert llava["model_id"] == "/models/tiny-llava"  # the full path stays in CSV/JSON
    assert llava["delta"] == pytest.approx(0.4 - 0.6)
    assert (llava["ci_low"], llava["ci_high"]) == (0.25, 0.55)


def test_primary_metric_by_default_all_metrics_on_request(sources):
    assert {r["metric"] for r in accuracy_table(sources.runs).rows} == {"accuracy", "anls"}
    full = accuracy_table(sources.runs, all_metrics=True)
    assert {r["metric"] for r in full.rows} == {"accuracy", "iou", "anls"}
    (iou,) = _rows(full, metric="iou", intervention="none", model="llava:tiny-llava")
    assert iou["value"] == 0.55 and iou["delta"] == 0.0


def test_speedup_ratio_and_retention_from_inputs(sources):
    table = speedup_table(sources.bench_hybrid, sources.runs)
    bench = json.loads((DATA / "run_a" / "bench_hybrid.json").read_text())["rows"]
    assert len(table.rows) == len(bench)
    for row in table.rows:
        src = next(b for b in bench if (b["length"], b["keep"]) == (row["length"], row["keep"]))
        measured = src.get("speedup", src["dense_ms"] / src["hybrid_ms"])
        assert row["speedup"] == pytest.approx(measured)
        assert row["of_bound"] == pytest.approx(measured / src["bound"])
        if row["keep"] == 0.25:  # the hybrid intervention of run_a used keep=0.25, window=64
            assert row["retention:refcocog_toy"] == pytest.approx(0.475 / 0.5)
            assert row["retention:docvqa_toy"] == pytest.approx(0.6 / 0.64)
        else:
            assert "retention:refcocog_toy" not in row


def test_spearman_matches_scipy_and_universal_heads_match_by_hand(sources):
    from scipy.stats import spearmanr

    ranking = sources.rankings[0].ranking
    table = spearman_table(sources.rankings, n_boot=50)
    assert len(table.rows) == 3
    for row in table.rows:
        a, b = ranking.matrix(row["task_a"]).ravel(), ranking.matrix(row["task_b"]).ravel()
        assert row["rho"] == pytest.approx(spearmanr(a, b).statistic)
        assert row["ci_low"] <= row["ci_high"]
    (uni,) = universal_table(sources.rankings, k=2).rows
    tops = [set(np.argsort(-ranking.matrix(t).ravel())[:2]) for t in ranking.task_names]
    common = sorted(set.intersection(*tops))
    assert uni["count"] == len(common)
    assert uni["heads"] == " ".join(f"L{i // 4}H{i % 4}" for i in common)


def test_diagnostics_summary_is_mean_over_layers(sources):
    table = diagnostics_summary_table(sources.diagnostics)
    doc = json.loads((DATA / "run_a" / "diagnostics_code.json").read_text())
    for module in ("attention", "ffn"):
        (row,) = _rows(table, variant="code", component=module)
        rids = [r["RID"] for r in doc["layers"] if r["module"] == module]
        assert row["RID"] == pytest.approx(np.mean(rids))
    (floor,) = _rows(table, variant="paper", component="erope_floor")
    assert floor["RID"] == 0.062


def test_cli_end_to_end_all_formats_and_figures(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "board"
    rc = harness_cli.main(["leaderboard", *map(str, RUNS), "--output", str(out), "--n-boot", "20"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "Accuracy" in printed and "Hybrid attention prefill speedup" in printed
    for table in ("accuracy", "speedup", "memory", "spearman", "diagnostics"):
        for ext in ("md", "csv", "json", "tex"):
            assert (out / f"{table}.{ext}").is_file()
    json.loads((out / "accuracy.json").read_text())
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert "ram__tiny-qwen2vl__refcocog_toy.png" in figures
    assert "speedup__tiny-qwen2vl__layer.png" in figures  # model + scope, nothing measured
    assert "diagnostics__tiny-qwen2vl__paper.png" in figures
    assert any(f.startswith("ablation__tiny-qwen2vl__attn_implementation=sdpa") for f in figures)
    assert "ablation__llava_tiny-llava__attn_implementation=sdpa__refcocog_toy.png" in figures
    for name in figures:
        assert len(name) <= 100 and all(ch.isalnum() or ch in "._=-" for ch in name), name
        magic = b"\x89PNG\r\n\x1a\n" if name.endswith(".png") else b"%PDF-"
        assert (out / "figures" / name).read_bytes()[: len(magic)] == magic
    assert sorted(f[:-4] for f in figures if f.endswith(".pdf")) == sorted(
        f[:-4] for f in figures if f.endswith(".png")
    )


def test_cli_without_matplotlib_writes_tables_and_hints(tmp_path, capsys, monkeypatch):
    import leaderboards.figures as figures

    monkeypatch.setattr(figures, "matplotlib_available", lambda: False)
    rc = harness_cli.main(
        ["leaderboard", str(RUNS[1]), "--output", str(tmp_path), "--quiet", "--format", "csv"]
    )
    assert rc == 0
    assert "pip install 'headscope[plot]'" in capsys.readouterr().err
    assert (tmp_path / "accuracy.csv").is_file() and not (tmp_path / "figures").exists()


def test_cli_usage_errors_exit_2(tmp_path, capsys):
    assert harness_cli.main(["leaderboard", str(tmp_path / "missing")]) == 2
    assert "no such results file" in capsys.readouterr().err
    assert harness_cli.main(["leaderboard", str(tmp_path)]) == 2
    assert "no headscope results found" in capsys.readouterr().err
    assert harness_cli.main(["leaderboard", str(RUNS[0]), "--format", "pdf"]) == 2
    assert "unknown format" in capsys.readouterr().err


def test_build_tables_only_what_inputs_allow():
    names = [t.name for t in build_tables(load_sources([RUNS[1]]))]
    assert names == ["accuracy_summary", "accuracy"]


def test_import_is_light():
    code = (
        "import sys, leaderboards\n"
        "print(','.join(m for m in ('numpy', 'scipy', 'tabulate', 'matplotlib', 'torch')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize(
    ("k", "message"),
    [
        ("-1", "--universal-k must be a whole count ≥ 1 or a fraction in (0, 1), got -1.0"),
        ("nan", "--universal-k must be a whole count ≥ 1 or a fraction in (0, 1), got nan"),
        ("0", "got 0.0"),
        ("2.5", "got 2.5"),
        ("1e9", "--universal-k 1000000000 exceeds the 8 heads of the ranking"),
    ],
)
def test_a_universal_k_that_selects_no_heads_is_a_usage_error(capsys, k, message):
    ranking = str(DATA / "run_a" / "ranking.json")
    argv = ["leaderboard", ranking, f"--universal-k={k}", "--quiet", "--n-boot", "5"]
    assert harness_cli.main(argv) == 2  # was 1: "internal error: ValueError" + traceback file
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "internal error" not in err
