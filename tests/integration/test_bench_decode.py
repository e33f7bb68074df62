"""``headscope bench decode``: its JSON document, exactness against the reference, the bound."""

import contextlib
import io
import json

import pytest

pytest.importorskip("torch")

from harness.bench import decode  # noqa: E402
from harness.bench.decoders import GEOMETRIES  # noqa: E402
from harness.schema.bench import BenchDocument  # noqa: E402


def test_bench_decode_json_on_a_tiny_geometry():
    out = io.StringIO()
    argv = ["--geometry", "tiny", "--lengths", "600", "--keep", "0.5,0",
            "--sink", "4", "--recent", "32", "--new-tokens", "3", "--repeats", "1",
            "--ttft-max", "600", "--threads", "1", "--json"]  # fmt: skip
    with contextlib.redirect_stdout(out):
        assert decode.main(argv) == 0
    doc = BenchDocument.from_dict(json.loads(out.getvalue()))
    assert doc.kind == "decode" and len(doc.rows) == 2
    half, none = doc.rows
    # tiny: 2 layers x 2 KV groups; 603 positions after 3 steps; streamed groups keep 4 + 32
    per_group = 2 * 603 * 16 * 4  # K and V, float32
    assert half["kv_dense_bytes"] == 4 * per_group
    assert half["kv_stream_bytes"] == 2 * per_group + 2 * 2 * 36 * 16 * 4
    assert none["kv_stream_bytes"] == 4 * 2 * 36 * 16 * 4
    for row in doc.rows:
        assert row["kv_ratio"] == round(row["kv_dense_bytes"] / row["kv_stream_bytes"], 3)
        assert row["max_logit_diff"] <= 1e-5 and row["tokens_equal"]
        assert row["dense_differs"] > 1e-3  # streaming drops tokens: the comparison has teeth
        assert row["ttft_dense_ms"] > 0 and row["tpot_stream_ms"] > 0
    assert doc.settings["layers"] == 2 and doc.settings["kv_heads"] == 2


def test_real_bound_matches_the_design_notes():
    """decode.md: Qwen3-VL-4B bf16, 20 % of KV groups kept, sink + recent 64 + 256: a decode
    step is at most 1.10 / 1.39 / 2.21x faster at 8K / 32K / 128K (weights 8.8 GB)."""
    g = GEOMETRIES["qwen3-vl-4b"]["geometry"]
    got = [round(decode.real_bound(g, n, 0.2, 64, 256), 2) for n in (8192, 32768, 131072)]
    assert got == [1.10, 1.39, 2.21]


def test_kept_groups_spread_over_the_model():
    kept = decode.kept_groups(36, 8, 0.2)
    assert len(kept) == 58  # ceil(0.2 * 288)
    assert {layer for layer, _ in kept} == set(range(36))
    assert decode.kept_groups(2, 2, 0) == set()
