"""``headscope bench ram``: the probe vs eager measurement, the JSON rows, the bench dispatch."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from harness.bench import ram_probe as bench_ram  # noqa: E402
from harness.bench.ram_probe_worker import measure  # noqa: E402

ROW_KEYS = {"length", "probe_peak_mb", "eager_peak_mb", "mem_ratio", "probe_ms", "eager_ms",
            "time_ratio"}  # fmt: skip
CFG = {"preset": "tiny", "layers": 2, "length": 160, "query_tokens": 6, "evidence_tokens": 20,
       "repeats": 1, "dtype": "float32", "device": "cpu", "threads": None, "seed": 0}  # fmt: skip


def test_worker_probe_equals_eager_in_process():
    probe = measure({**CFG, "method": "probe"})
    eager = measure({**CFG, "method": "eager"})
    a, b = np.array(probe["ram"]), np.array(eager["ram"])
    assert a.shape == (2, 8)  # tiny preset: 8 heads
    assert np.abs(a - b).max() <= 1e-6 and a.std() > 1e-4
    for res in (probe, eager):
        assert res["ms"] > 0 and res["peak_mb"] >= res["before_mb"] > 0
    none = measure({**CFG, "method": "none"})
    assert none["ms"] is None and none["ram"] is None


def test_estimate_and_length_checks():
    assert bench_ram.estimate_eager_gb(8192, 16, 2) == pytest.approx(12.0)
    with pytest.raises(ValueError, match="evidence block"):
        bench_ram.run_bench(preset="tiny", lengths=(64,), query_tokens=32, evidence_tokens=32)


def test_bench_cli_forwards_arguments(monkeypatch):
    from harness.bench import hybrid as bench_hybrid
    from harness.cli.main import main

    seen = {}

    def fake(name):
        return lambda argv, description=None: seen.setdefault(name, argv) and 0

    monkeypatch.setattr(bench_ram, "main", fake("ram"))
    monkeypatch.setattr(bench_hybrid, "main", fake("hybrid"))
    assert main(["bench", "ram", "--lengths", "128", "--json"]) == 0
    assert main(["bench", "hybrid", "--preset", "tiny"]) == 0
    assert seen == {"ram": ["--lengths", "128", "--json"], "hybrid": ["--preset", "tiny"]}


@pytest.mark.slow
def test_bench_ram_json_rows(capsys):
    argv = "--geometry tiny --layers 1 --lengths 128 --query-tokens 4 --evidence-tokens 16 --json"
    assert bench_ram.main(argv.split()) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["rows"]
    assert set(row) == ROW_KEYS and row["length"] == 128
    assert row["mem_ratio"] == pytest.approx(row["eager_peak_mb"] / row["probe_peak_mb"], 0.01)
    assert row["time_ratio"] == pytest.approx(row["eager_ms"] / row["probe_ms"], 0.01)
    (detail,) = doc["details"]
    assert detail["eager_status"] == "ok" and detail["ram_max_abs_diff"] <= 1e-6
    from leaderboards.sources import classify

    assert classify(doc) == "bench_ram" and doc["schema"] == "headscope.bench_ram"


@pytest.mark.slow
def test_bench_ram_skips_eager_above_the_limit():
    doc = bench_ram.run_bench(
        preset="tiny", layers=1, lengths=(128,), query_tokens=4, evidence_tokens=16,
        max_eager_gb=0.0,
    )  # fmt: skip
    (row,) = doc["rows"]
    assert set(row) == ROW_KEYS
    assert row["eager_peak_mb"] is None and row["eager_ms"] is None and row["mem_ratio"] is None
    assert row["probe_ms"] > 0
    assert doc["details"][0]["eager_status"].startswith("skipped: estimated")


def test_cli_modules_are_light():
    import subprocess
    import sys

    code = (
        "import sys, harness.cli.rank, harness.cli.diagnose, harness.cli.bench\n"
        "heavy = [m for m in ('torch', 'transformers', 'numpy') if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
