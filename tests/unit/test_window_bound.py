"""FLOP-model bound of hybrid attention (metrics.md) and a tiny bench smoke run."""

import json

import pytest

from harness.api.heads import Geometry
from harness.bench.decoders import GEOMETRIES, PRESETS
from harness.bench.hybrid import flop_speedup_bound, main
from harness.bench.kit import kept_heads
from harness.schema.bench import BenchDocument


@pytest.mark.parametrize("n, expected", [(32 * 1024, 2.0), (64 * 1024, 3.0), (128 * 1024, 4.7)])
def test_metrics_md_example_bounds(n, expected):
    geo = GEOMETRIES["qwen3-vl-4b"]["geometry"]
    assert flop_speedup_bound(geo, n, 1024, 0.05) == pytest.approx(expected, abs=0.05)


def test_bound_limits():
    geo = Geometry(2, 16, 4, 64, 1024, 2816)
    assert flop_speedup_bound(geo, 8192, 512, 1.0) == pytest.approx(1.0)
    assert flop_speedup_bound(geo, 512, 512, 0.0) < 1.0  # window as long as n costs more
    attn_only = flop_speedup_bound(geo, 8192, 512, 0.0, linear=False)
    assert attn_only == pytest.approx(8192 / (2 * 512))
    assert flop_speedup_bound(geo, 8192, 512, 0.1) < attn_only


def test_geometries_and_aliases():
    assert PRESETS is GEOMETRIES  # bench ram still reads the old name
    assert GEOMETRIES["llava-onevision-7b"] is GEOMETRIES["qwen2-7b"]
    g = GEOMETRIES["default"]["geometry"]
    assert (g.num_heads, g.num_kv_heads, g.head_dim, g.hidden_size) == (16, 4, 64, 1024)
    assert g.intermediate_size == 2816


@pytest.mark.parametrize(
    "keep, heads, kept", [(0.1, 16, 2), (0.05, 32, 2), (0.25, 16, 4), (0.3, 10, 3), (0, 8, 0)]
)
def test_kept_heads_round_up(keep, heads, kept):
    assert kept_heads(keep, heads) == kept


def test_bench_smoke(capsys, monkeypatch):
    pytest.importorskip("torch")
    import harness.bench.hybrid as hybrid

    # The row rounds dense_ms and sdpa_ms to 0.01 ms; on the tiny geometry they are ~0.1 ms,
    # where rounding alone moves their ratio by ~0.06 (0.074 / 0.106 vs 0.07 / 0.11), past any
    # useful tolerance. So the bench runs with its rounding off and the row is checked exactly.
    monkeypatch.setattr(hybrid, "round", lambda x, ndigits=None: x, raising=False)
    argv = ["--lengths", "64", "--window", "16", "--repeats", "1", "--layers", "1", "--json"]
    argv += ["--geometry", "tiny", "--warmup", "0"]
    for scope in ("attention", "layer"):
        assert main([*argv, "--scope", scope]) == 0
        doc = BenchDocument.from_dict(json.loads(capsys.readouterr().out))
        rows = doc.rows
        assert doc.kind == "hybrid" and not doc.legacy and len(rows) == 1
        row = rows[0]
        for key in ("length", "keep", "window", "dense_ms", "hybrid_ms", "speedup", "bound"):
            assert key in row
        assert row["heads_kept_per_layer"] == 1 and row["scope"] == scope
        assert row["geometry"] == "tiny" and row["device"] == "cpu"
        geo = GEOMETRIES["tiny"]["geometry"]
        bound = flop_speedup_bound(geo, 64, 16, 1 / 8, linear=scope == "layer")
        assert row["bound"] == pytest.approx(bound, rel=1e-12)  # unrounded: rounding is off
        assert row["speedup"] == pytest.approx(row["dense_ms"] / row["hybrid_ms"], rel=1e-12)
        overhead = row["dense_ms"] / row["sdpa_ms"] - 1
        assert row["dispatch_overhead"] == pytest.approx(overhead, rel=1e-12, abs=1e-12)


def test_bench_alias_and_old_flag(capsys):
    pytest.importorskip("torch")
    argv = ["--lengths", "32", "--window", "8", "--repeats", "1", "--scope", "attention"]
    assert main([*argv, "--preset", "tiny", "--json", "--warmup", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["geometry"] == "tiny"


def test_bound_sums_layers_with_the_models_own_windows_and_layers_without_heads():
    """Layer by layer: a local layer's own window caps what hybrid can save there."""
    geo = Geometry(2, 4, 2, 8, 32, 64)
    n, w, f = 4096, 64, 0.25
    lin = 2 * (32 * 8 * (2 * 4 + 2 * 2) + 3 * 32 * 64)
    full, win = 2 * 4 * 8 * n, 4 * 4 * 8 * w
    local = 4 * 4 * 8 * 1024  # layer 0 slides over 1024 keys of its own
    want = (2 * lin + local + full) / (
        2 * lin + f * local + (1 - f) * win + f * full + (1 - f) * win
    )
    got = flop_speedup_bound(geo, n, w, f, model_windows={0: 1024})
    assert got == pytest.approx(want)
    assert got < flop_speedup_bound(geo, n, w, f)  # the uniform bound overstates it
    assert flop_speedup_bound(geo, n, w, f, model_windows={}) == flop_speedup_bound(geo, n, w, f)
    hybrid_decoder = Geometry(2, 4, 2, 8, 32, 64, attention_layers=(1,))
    want = (2 * lin + full) / (2 * lin + f * full + (1 - f) * win)
    assert flop_speedup_bound(hybrid_decoder, n, w, f) == pytest.approx(want)
