"""FLOP-model bound of hybrid attention (metrics.md) and a tiny bench smoke run."""

import json

import pytest

from harness.bench_hybrid import PRESETS, flop_speedup_bound, main
from harness.heads import Geometry


@pytest.mark.parametrize("n, expected", [(32 * 1024, 2.0), (64 * 1024, 3.0), (128 * 1024, 4.7)])
def test_metrics_md_example_bounds(n, expected):
    geo = PRESETS["qwen3-vl-4b"]["geometry"]
    assert flop_speedup_bound(geo, n, 1024, 0.05) == pytest.approx(expected, abs=0.05)


def test_bound_limits():
    geo = Geometry(2, 16, 4, 64, 1024, 2816)
    assert flop_speedup_bound(geo, 8192, 512, 1.0) == pytest.approx(1.0)
    assert flop_speedup_bound(geo, 512, 512, 0.0) < 1.0  # window as long as n costs more
    attn_only = flop_speedup_bound(geo, 8192, 512, 0.0, linear=False)
    assert attn_only == pytest.approx(8192 / (2 * 512))
    assert flop_speedup_bound(geo, 8192, 512, 0.1) < attn_only


def test_bench_smoke(capsys):
    pytest.importorskip("torch")
    argv = ["--lengths", "64", "--window", "16", "--repeats", "1", "--layers", "1", "--json"]
    argv += ["--preset", "tiny"]
    for scope in ("attention", "layer"):
        assert main([*argv, "--scope", scope]) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
        assert len(rows) == 1
        row = rows[0]
        for key in ("length", "keep", "window", "dense_ms", "hybrid_ms", "speedup", "bound"):
            assert key in row
        assert row["heads_kept_per_layer"] == 1 and row["scope"] == scope
