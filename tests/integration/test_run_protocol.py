"""`headscope run` without --interventions runs the whole protocol on the given model and tasks.

One small main job on the bundled toy (two mini tasks, two documents each, a reduced grid and a
tiny bench), run through the CLI twice: the second run is a resume and must keep the first
run's stage timings and resolved intervention details.
"""

import json
import math
import statistics
from dataclasses import dataclass

import pytest

from harness.cli import main as cli
from harness.run import main_job
from tests.integration._main_job_util import SmallConfig as _SmallConfig


@dataclass(frozen=True)
class SmallConfig(_SmallConfig):
    n_diagnose: int = 2  # this file's runs (and the slow docs test) diagnose two samples


@pytest.fixture(scope="module")
def toy_job(tmp_path_factory):
    """The CLI main job on the toy with --tasks, run twice into one directory."""
    mp = pytest.MonkeyPatch()
    mp.setattr(main_job, "ProtocolConfig", SmallConfig)
    out = tmp_path_factory.mktemp("job") / "out"
    argv = ["run", "--model", "toy", "--tasks", "pope_mini,refcocog_mini", "--limit", "2",
            "--output", str(out)]  # fmt: skip
    try:
        assert cli.main(argv) == 0
        first = {
            "summary": json.loads((out / "summary.json").read_text()),
            "results": json.loads((out / "accuracy" / "results.json").read_text()),
        }
        assert cli.main(argv) == 0
    finally:
        mp.undo()
    return out, first


def test_run_with_tasks_runs_the_whole_protocol(toy_job):
    out, first = toy_job
    for rel in ("rank/ranking.json", "accuracy/results.json", "bench_hybrid.json",
                "diagnose/diagnostics_paper.json", "leaderboards/leaderboard.md",
                "summary.json"):  # fmt: skip
        assert (out / rel).is_file(), rel
    results = first["results"]
    assert {e["task"] for e in results["entries"]} == {"pope_mini", "refcocog_mini"}
    names = {e["intervention_spec"]["name"] for e in results["entries"]}
    assert names == {"none", "ablate", "sap", "hybrid"}
    budgets = {e["intervention_spec"]["args"].get("layer_budget") for e in results["entries"]
               if e["intervention_spec"]["name"] == "hybrid"}  # fmt: skip
    assert budgets == {None, "ranking"}  # static and even-adaptive rows, and the ranked one
    streamed = [e for e in results["entries"] if e["intervention_spec"]["args"].get("decode")]
    assert {e["intervention_spec"]["args"]["decode"] for e in streamed} == {"stream"}
    for e in streamed:  # beside the prefill-only cell; recorded what it keeps
        resolved = e["intervention_resolved"]
        assert 0 < resolved["kv_kept_fraction"] < 1 and resolved["recent"] == 16
    for row in first["summary"]["per_task"].values():  # its own key, beside the static one
        assert "hybrid_stream_keep0.25" in row and "hybrid_keep0.25" in row
    decode = json.loads((out / "bench_decode.json").read_text())
    assert decode["schema"] == "headscope.bench_decode"
    assert all(r["max_logit_diff"] <= 1e-5 and r["kv_ratio"] > 1 for r in decode["rows"])
    assert "Decoding with streamed KV" in (out / "leaderboards" / "leaderboard.md").read_text()
    assert all(e["n_samples"] == 2 for e in results["entries"])
    ranking = json.loads((out / "rank" / "ranking.json").read_text())
    assert "refcocog_mini" in json.dumps(ranking) and "pope_mini" not in ranking.get("tasks", {})


def test_resume_keeps_first_run_timings_and_resolved_details(toy_job):
    out, first = toy_job
    again = json.loads((out / "summary.json").read_text())
    assert again["timings_s"] == first["summary"]["timings_s"]
    assert first["summary"]["timings_s"]["accuracy_s"] > 0
    results = json.loads((out / "accuracy" / "results.json").read_text())
    resolved = {e["samples_file"]: e["intervention_resolved"] for e in results["entries"]}
    before = {e["samples_file"]: e["intervention_resolved"] for e in first["results"]["entries"]}
    assert resolved == before
    sap = [r for r in resolved.values() if r.get("name") == "sap"]
    assert sap and all(r["forwards"] > 0 for r in sap)


def test_sample_files_do_not_name_the_output_directory(toy_job):
    out, first = toy_job
    for entry in first["results"]["entries"]:
        assert str(out) not in entry["samples_file"]
        assert out.name not in entry["samples_file"]
        assert (out / "accuracy" / entry["samples_file"]).is_file()


@pytest.fixture(scope="module")
def tiny_llava_job(tmp_path_factory):
    """The CLI main job on a real family (LLaVA, tiny random weights, bfloat16) from a directory."""
    from harness.testing.tiny import build_tiny_model
    from harness.testing.tiny_processors import tiny_llava_processor

    ckpt = tmp_path_factory.mktemp("tinyllava")
    build_tiny_model("llava", num_layers=2, num_heads=4).save_pretrained(ckpt)
    tiny_llava_processor().save_pretrained(ckpt)
    mp = pytest.MonkeyPatch()
    mp.setattr(main_job, "ProtocolConfig", SmallConfig)
    out = tmp_path_factory.mktemp("job") / "out"
    argv = ["run", "--model", "llava", "--model_args", f"pretrained={ckpt},dtype=bfloat16",
            "--tasks", "refcocog_mini,pope_mini", "--limit", "2", "--output", str(out)]  # fmt: skip
    try:
        assert cli.main(argv) == 0
    finally:
        mp.undo()
    return out


def test_real_model_bench_times_its_own_geometry_device_and_dtype(tiny_llava_job):
    out = tiny_llava_job
    doc = json.loads((out / "bench_hybrid.json").read_text())
    assert doc["schema"] == "headscope.bench_hybrid" and doc["schema_version"] == 1
    rows = doc["rows"]
    lengths = json.loads((out / "sequence_lengths.json").read_text())
    assert rows and {r["geometry"] for r in rows} == {"model"}
    g = json.loads((out / "accuracy" / "results.json").read_text())["model"]["geometry"]
    dims = {"hidden": g["hidden_size"], "heads": g["num_heads"], "kv_heads": g["num_kv_heads"],
            "head_dim": g["head_dim"]}  # fmt: skip
    assert dims["heads"] == 4  # the tiny model's own, not a preset's (default: 16 heads)
    for row in rows:
        assert {k: row["dims"][k] for k in dims} == dims
        assert (row["device"], row["dtype"]) == ("cpu", "bfloat16")
    medians = sorted({int(v["median"]) for v in lengths.values()})
    assert sorted({r["length"] for r in rows}) == medians


def test_real_model_hybrid_window_scales_with_the_tasks_lengths(tiny_llava_job):
    out = tiny_llava_job
    lengths = json.loads((out / "sequence_lengths.json").read_text())
    assert set(lengths) == {"refcocog_mini", "pope_mini"}
    assert all(v["n"] == 2 and v["min"] <= v["median"] <= v["max"] for v in lengths.values())
    typical = statistics.median(v["median"] for v in lengths.values())
    summary = json.loads((out / "summary.json").read_text())
    record = summary["hybrid_window"]
    assert record["window"] == math.ceil(0.25 * typical) and record["fraction"] == 0.25
    assert record["lengths"] == lengths
    results = json.loads((out / "accuracy" / "results.json").read_text())
    windows = {e["intervention_spec"]["args"]["window"] for e in results["entries"]
               if e["intervention_spec"]["name"] == "hybrid"}  # fmt: skip
    assert windows == {record["window"]}


def test_real_model_records_what_each_keep_means_at_each_tasks_length(tiny_llava_job):
    from harness.api.heads import Geometry
    from harness.bench.hybrid import flop_speedup_bound

    out = tiny_llava_job
    record = json.loads((out / "summary.json").read_text())["hybrid_window"]
    g = json.loads((out / "accuracy" / "results.json").read_text())["model"]["geometry"]
    geometry = Geometry(**g)
    for task, stats in record["lengths"].items():
        per_task = record["per_task"][task]
        n = int(stats["median"])
        assert per_task["median_length"] == n
        assert per_task["windowed"] == (n > record["window"])
        row = per_task["keep"]["0.25"]
        assert row["kept_fraction"] == 0.25  # 1 of 4 heads
        attention_only = flop_speedup_bound(geometry, n, record["window"], 0.25, linear=False)
        assert row["attention_bound"] == round(attention_only, 3)  # no FFN term: from results
        assert 0 < row["bound"] <= row["attention_bound"]  # linear FLOPs dilute the gain
