"""``headscope bench adaptive``: rows, ratios and CLI dispatch (no timing is asserted)."""

import json

import pytest

pytest.importorskip("torch")

from harness.bench.adaptive import run_bench  # noqa: E402
from harness.cli.main import main  # noqa: E402


def test_rows_hold_times_and_ratios():
    (row,) = run_bench(geometry="tiny", lengths=(256,), window=32, repeats=2, dense_repeats=1)
    assert row["length"] == 256 and row["heads_kept_per_layer"] == 1  # ceil(0.1 · 8)
    assert row["visual_tokens"] == 128 and row["scope"] == "attention"
    assert len(row["heads_kept_adaptive"]) == len(row["heads_kept_static"]) == 1
    for key in ("estimate", "hybrid", "hybrid_same", "adaptive"):
        assert len(row["times_ms"][key]) == 2 and row[f"{key}_ms"] > 0
    # the ms columns are rounded to 0.01 ms, the ratio is not: allow that rounding
    ratio, hybrid = row["estimate_ms"] / row["hybrid_ms"], row["hybrid_ms"]
    assert row["estimate_over_hybrid"] == pytest.approx(ratio, abs=0.0051 * (1 + ratio) / hybrid)
    assert row["saved_ms"] == pytest.approx(row["dense_ms"] - row["hybrid_ms"], abs=0.02)


def test_cli_dispatch_and_dense_skip(capsys):
    argv = ["bench", "adaptive", "--geometry", "tiny", "--lengths", "128", "--window", "16"]
    assert main([*argv, "--repeats", "1", "--dense-repeats", "0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["rows"]
    assert (
        doc["schema"] == "headscope.bench_adaptive"
        and doc["bench"] == "adaptive"
        and "dense_ms" not in row
        and "saved_ms" not in row
    )
